"""decision_append: a decision is signed alone and stored with its ledger entry, under no lock."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.review.services.decisions import DECISION_PAYLOAD_TYPE, decision_append
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db


def _append(content: str):
    proposal = submit(PanelFactory(lenses=[LensFactory()], need=1), content)
    return decision_append(
        proposal=proposal, outcome="approved", basis="system", rationale="all passed"
    )


def test_a_decision_is_signed_alone_as_a_v2_payload():
    first, second = _append("first"), _append("second")
    signed = json.loads(second.payload)
    assert signed["type"] == DECISION_PAYLOAD_TYPE == "reviewapp.decision/v2"
    assert "prev_hash" not in signed and second.prev_hash is None
    assert first.hash not in second.payload


def test_a_decision_takes_no_lock_and_is_stored_with_its_entry_in_one_statement_on_postgresql():
    _append("first")
    proposal = submit(PanelFactory(lenses=[LensFactory()], need=1), "second")
    with CaptureQueriesContext(connection) as queries:
        decision_append(proposal=proposal, outcome="approved", basis="system", rationale="r")
    statements = [q["sql"] for q in queries.captured_queries]
    assert not [s for s in statements if "FOR UPDATE" in s or "advisory" in s], statements
    writes = [s for s in statements if "review_decision" in s and "INSERT" in s]
    if connection.vendor == "postgresql":
        assert len(writes) == 1 and "INSERT INTO ledger_entry" in writes[0]
    assert not [s for s in statements if "leaf_index" in s], statements


def test_a_decision_is_stored_with_its_entry_waiting_for_its_index():
    decision = _append("first")
    assert decision.ledger_entry.leaf_index is None
