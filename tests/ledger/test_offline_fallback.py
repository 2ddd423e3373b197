"""A deadline's fallback decision in the ledger: verified offline like any other, and named
as a fallback by `reviewapp-verify`."""

import io
import json
import sys
from datetime import timedelta

import pytest
from reviewapp_client.verify import cli

from reviewapp.review.models import Escalation
from reviewapp.review.services.deadlines import escalation_expire
from tests.api.conftest import evaluated
from tests.ledger.helpers import decide, export, public_key_b64, read_jsonl, write_jsonl

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = cli.main([str(a) for a in args])
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def with_fallback(tmp_path):
    decide(1)
    proposal = evaluated("Ship it.", requires_sign_off=True, review_deadline=timedelta(hours=1))
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)
    return export(tmp_path)


def test_an_export_with_a_fallback_decision_verifies_and_says_it_is_one(with_fallback):
    code, out, err = run(with_fallback, "--public-key", public_key_b64())

    assert code == 0, err
    assert "2 decisions" in out
    assert (
        "1 of the decisions are fallbacks, signed by the server when a review deadline "
        "passed: no person made them" in out
    )


def test_a_fallback_passed_off_as_a_persons_decision_fails(with_fallback):
    objects = read_jsonl(with_fallback)
    [line] = [o for o in objects if o.get("kind") == "decision" and "fallback" in o["payload"]]
    signed = json.loads(line["payload"])
    signed["basis"], signed["decided_by"] = "reviewer", "ann"
    line["payload"] = json.dumps(signed, separators=(",", ":"), sort_keys=True)
    write_jsonl(with_fallback, objects)

    code, _, err = run(with_fallback, "--public-key", public_key_b64())

    assert code == 1
    assert err.startswith("FAIL ") and "fallback decision for proposal" not in err
    assert "signature does not verify" in err
