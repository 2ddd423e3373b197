"""Reviews a decision rests on, tampered with by a database owner who dropped the triggers:
`verify_decisions`, `verify_ledger` and `reviewapp-verify` each name the review."""

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from reviewapp.core.signing import sha256_hex
from reviewapp.ledger import services
from reviewapp.ledger.keys import server_signer
from reviewapp.review.models import Decision, Escalation, Review
from reviewapp.review.services.escalations import escalation_review
from tests.api.conftest import api_with, evaluated
from tests.factories import ReviewerFactory
from tests.ledger.helpers import (
    decide,
    export,
    public_key_b64,
    read_jsonl,
    run_offline_verifier,
    write_jsonl,
)
from tests.support.tamper import forge_review, tampering

pytestmark = pytest.mark.django_db


def give(escalation, username, outcome):
    return escalation_review(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale=f"{username} read the account history.",
        user=ReviewerFactory(username=username),
        decided_by_name=username,
    )


@pytest.fixture
def reviewed():
    """A system decision, then a decision of two agreeing reviews (ann's first)."""
    decide(1)
    proposal = evaluated("Close account 7731.", requires_sign_off=True, reviews_needed=2)
    escalation = Escalation.objects.get(proposal=proposal)
    give(escalation, "ann", "rejected")
    give(escalation, "ben", "rejected")
    services.checkpoint_create()
    return Review.objects.get(reviewer_name="ann")


def edit_row(review):
    Review.objects.filter(pk=review.pk).update(outcome="approved")


def edit_row_payload_and_hash(review):
    forge_review(review, outcome="approved")


def delete_row(review):
    Review.objects.filter(pk=review.pk).delete()


TAMPERING = {
    "row": (edit_row, r"differs from its signed bytes in outcome"),
    "row, payload and hash": (edit_row_payload_and_hash, r"signature does not verify"),
    "deleted row": (delete_row, r"names review [0-9a-f]{64} by ann, which is (gone|not there)"),
}


def tamper(review, how):
    edit, _ = TAMPERING[how]
    with tampering():
        edit(review)


def test_untouched_reviews_verify_everywhere(reviewed, tmp_path):
    out = io.StringIO()
    call_command("verify_decisions", stdout=out)
    assert "2 decisions verified" in out.getvalue()
    assert "2 reviews" in out.getvalue()
    out = io.StringIO()
    call_command("verify_ledger", stdout=out, stderr=io.StringIO())
    assert "2 reviews" in out.getvalue()
    result = run_offline_verifier(export(tmp_path), "--public-key", public_key_b64())
    assert result.returncode == 0, result.stderr
    assert "2 reviews" in result.stdout


def test_the_export_carries_each_review_before_the_decision_naming_it(reviewed, tmp_path):
    objects = read_jsonl(export(tmp_path))
    reviews = [i for i, o in enumerate(objects) if "review" in o]
    decision = next(i for i, o in enumerate(objects) if '"reviews":' in o.get("payload", ""))
    assert reviews == [decision - 2, decision - 1]
    named = json.loads(objects[decision]["payload"])["reviews"]
    stored = {r.hash: r for r in Review.objects.all()}
    for line, entry in zip(reviews, named, strict=True):
        review = stored[entry["review_sha256"]]
        assert objects[line] == {
            "review": {
                "reviewer": review.reviewer_name,
                "outcome": review.outcome,
                "payload": review.payload,
                "signature": review.signature,
                "key_id": review.key_id,
            }
        }


@pytest.mark.parametrize("how", TAMPERING)
def test_verify_decisions_names_a_tampered_review(reviewed, how):
    tamper(reviewed, how)
    with pytest.raises(CommandError, match=TAMPERING[how][1]) as excinfo:
        call_command("verify_decisions", stdout=io.StringIO())
    assert "review" in str(excinfo.value)


@pytest.mark.parametrize("how", TAMPERING)
def test_verify_ledger_names_a_tampered_review(reviewed, how):
    tamper(reviewed, how)
    with pytest.raises(CommandError, match=TAMPERING[how][1]) as excinfo:
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    assert "review" in str(excinfo.value)


@pytest.mark.parametrize("how", TAMPERING)
def test_reviewapp_verify_names_a_tampered_review_in_an_export(reviewed, how, tmp_path):
    tamper(reviewed, how)
    result = run_offline_verifier(export(tmp_path), "--public-key", public_key_b64())
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("FAIL "), result.stderr
    assert re.search(TAMPERING[how][1], result.stderr), result.stderr


def api_decisions_file(tmp_path):
    """GET /api/decisions as an auditor saves it: the page, one line."""
    page = api_with("read", "read:all").get("/api/decisions").json()
    path = tmp_path / "decisions.jsonl"
    path.write_text(json.dumps(page) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("how", TAMPERING)
def test_reviewapp_verify_names_a_tampered_review_in_api_decisions(reviewed, how, tmp_path):
    tamper(reviewed, how)
    result = run_offline_verifier(api_decisions_file(tmp_path), "--public-key", public_key_b64())
    assert result.returncode == 1, result.stdout
    assert re.search(TAMPERING[how][1], result.stderr), result.stderr


def test_api_decisions_with_their_reviews_verify(reviewed, tmp_path):
    result = run_offline_verifier(api_decisions_file(tmp_path), "--public-key", public_key_b64())
    assert result.returncode == 0, result.stderr
    assert "2 reviews the decisions name verified" in result.stdout


def test_a_decision_signed_on_an_edited_review_row_fails_every_verifier(reviewed, tmp_path):
    """What the server did before issue 42: it named the reviews with their rows' outcomes
    (edited to `approved`) and signed an approval, though each review says `rejected`."""
    decision = Decision.objects.get(basis="reviewer")
    payload = json.loads(decision.payload)
    for named in payload["reviews"]:
        named["outcome"] = "approved"
    payload["outcome"] = "approved"
    signed = server_signer().sign(payload)
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(
            payload=signed.payload_bytes.decode(),
            signature=signed.signature_b64,
            hash=sha256_hex(signed.payload_bytes),
            outcome="approved",
        )
    problem = r"names review [0-9a-f]{64} by ann with another outcome than the review signed"

    with pytest.raises(CommandError, match=problem):
        call_command("verify_decisions", stdout=io.StringIO())
    result = run_offline_verifier(api_decisions_file(tmp_path), "--public-key", public_key_b64())
    assert re.search(problem, result.stderr), result.stderr


def test_a_format_1_export_without_review_lines_verifies_with_a_warning(reviewed, tmp_path):
    """Exports written before reviews travelled with them."""
    objects = [o for o in read_jsonl(export(tmp_path)) if "review" not in o]
    objects[0]["format"] = "reviewapp.ledger-export/1"
    result = run_offline_verifier(
        write_jsonl(tmp_path / "old.jsonl", objects), "--public-key", public_key_b64()
    )
    assert result.returncode == 0, result.stderr
    assert "2 review(s) named by decisions are not in this" in result.stderr


def test_a_format_2_export_missing_a_review_line_fails(reviewed, tmp_path):
    objects = [o for o in read_jsonl(export(tmp_path)) if "review" not in o]
    result = run_offline_verifier(
        write_jsonl(tmp_path / "cut.jsonl", objects), "--public-key", public_key_b64()
    )
    assert result.returncode == 1
    assert re.search(TAMPERING["deleted row"][1], result.stderr), result.stderr
