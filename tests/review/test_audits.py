"""Audits of automatic decisions: drawn at the panel's rate, answered by a signed verdict."""

import base64
import json
import random

import pytest

from reviewapp.core.signing import verify
from reviewapp.ledger.keys import server_signer
from reviewapp.review.models import Decision, DecisionAudit, Escalation, Proposal
from reviewapp.review.services import audits
from reviewapp.review.services.escalations import escalation_claim, escalation_decide
from reviewapp.webhooks.models import Delivery, Event
from reviewapp.webhooks.sending import deliveries_due, delivery_send
from tests.factories import ReviewerFactory, recorded
from tests.webhooks.helpers import answer, api_client, one_lens_panel, run_pipeline, subscribe
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.django_db

CONTENT = "The refund is issued within 14 days."


def decided(panel, content=CONTENT, client=None) -> Proposal:
    from reviewapp.review.services.proposals import proposal_submit

    proposal, _ = proposal_submit(panel_name=panel.name, content=content, client=client)
    run_pipeline(proposal)
    return proposal


@pytest.fixture
def audited(monkeypatch):
    """An automatic approval whose panel audits every decision."""
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    return decided(one_lens_panel(CONTENT, audit_rate=100))


def audit_of(proposal) -> Escalation:
    return Escalation.objects.get(proposal=proposal, reasons=["audit"])


def verdict(proposal, outcome, reviewer=None):
    reviewer = reviewer or ReviewerFactory()
    escalation = audit_of(proposal)
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    return escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Checked the figures.",
        user=reviewer,
        decided_by_name=reviewer.get_username(),
    )


def test_a_panel_without_an_audit_rate_opens_no_audit():
    proposal = decided(one_lens_panel(CONTENT))

    assert proposal.status == Proposal.Status.DECIDED
    assert not Escalation.objects.exists()


def test_an_audited_decision_stands_and_opens_an_audit(audited):
    assert audited.status == Proposal.Status.DECIDED
    assert Decision.objects.get().basis == Decision.Basis.SYSTEM
    escalation = audit_of(audited)
    assert escalation.status == Escalation.Status.OPEN
    assert escalation.detail["decision"] == Decision.objects.get().pk


def test_audits_are_drawn_at_the_rate_from_the_injected_source(monkeypatch):
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(42))
    panel = one_lens_panel(CONTENT, audit_rate=30)
    (lens,) = panel.ordered_lenses()
    contents = [f"{CONTENT} ({i})" for i in range(40)]
    for content in contents:
        recorded(lens, content, answer("pass", content))
    replay = random.Random(42)
    expected = [replay.random() * 100 < 30 for _ in contents]

    proposals = [decided(panel, content) for content in contents]

    assert all(p.status == Proposal.Status.DECIDED for p in proposals)
    audited_ids = set(Escalation.objects.values_list("proposal_id", flat=True))
    assert [p.pk in audited_ids for p in proposals] == expected
    assert 0 < sum(expected) < len(expected)


def test_the_audit_verdict_is_signed_beside_the_decision(audited):
    audit = verdict(audited, "approved")

    assert isinstance(audit, DecisionAudit)
    assert audit.agrees is True
    decision = Decision.objects.get()
    signed = json.loads(audit.payload)
    assert signed["decision"] == {"id": decision.pk, "hash": decision.hash, "outcome": "approved"}
    assert (signed["type"], signed["outcome"], signed["agrees"]) == (
        "reviewapp.audit/v1",
        "approved",
        True,
    )
    assert verify(
        audit.payload.encode(),
        base64.b64decode(audit.signature),
        server_signer().public_key,
    )


def test_a_disagreeing_audit_leaves_the_decision_as_signed(audited):
    before = Decision.objects.get()

    audit = verdict(audited, "rejected")

    assert audit.agrees is False
    after = Decision.objects.get()
    assert (after.pk, after.outcome, after.payload) == (before.pk, "approved", before.payload)
    assert audit_of(audited).status == Escalation.Status.RESOLVED


def test_a_second_verdict_on_the_same_audit_is_refused(audited):
    verdict(audited, "approved")

    with pytest.raises(Exception, match="already decided"):
        verdict(audited, "rejected")
    assert DecisionAudit.objects.count() == 1


def test_a_disputed_decision_is_announced_to_a_real_receiver(monkeypatch):
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    client, _ = api_client("submit", "read")
    with Receiver() as receiver:
        endpoint, secret = subscribe(client, receiver.url("/hook"), [Event.DECISION_DISPUTED])
        receiver.secrets["/hook"] = secret
        proposal = decided(one_lens_panel(CONTENT, audit_rate=100), client=client)

        verdict(proposal, "rejected")
        for pk in deliveries_due():
            delivery_send(delivery_id=pk)

        [got] = receiver.wait_for(1)
    assert got.error is None  # standardwebhooks verified it
    assert got.payload["type"] == "decision.disputed"
    data = got.payload["data"]
    assert (data["decision"]["outcome"], data["audit"]["outcome"]) == ("approved", "rejected")
    assert data["proposal"]["id"] == proposal.pk
    assert verify(
        data["audit"]["payload"].encode(),
        base64.b64decode(data["audit"]["signature"]),
        server_signer().public_key,
    )


def test_an_agreeing_audit_is_not_announced_as_disputed(monkeypatch):
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    client, _ = api_client("submit", "read")
    subscribe(client, "http://127.0.0.1:9/hook", [Event.DECISION_DISPUTED])
    proposal = decided(one_lens_panel(CONTENT, audit_rate=100), client=client)

    verdict(proposal, "approved")

    assert not Delivery.objects.filter(event_type=Event.DECISION_DISPUTED).exists()


def test_the_audit_is_drawn_once_the_decisions_transaction_has_ended(monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from reviewapp.review.evaluation.tasks import evaluate_proposal
    from reviewapp.review.services.proposals import proposal_submit

    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    panel = one_lens_panel(CONTENT, audit_rate=100)
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT)
    with CaptureQueriesContext(connection) as queries:
        evaluate_proposal(proposal.pk)
    statements = [q["sql"] for q in queries.captured_queries]
    # (On PostgreSQL the decision's INSERT is inside the statement that advances the chain.)
    decided = next(i for i, s in enumerate(statements) if 'INSERT INTO "review_decision"' in s)
    # Inside the test's transaction the step's transaction is a savepoint: released once
    # the decision is written, before the audit's escalation is opened in one of its own.
    step_ends = next(
        i for i, s in enumerate(statements) if i > decided and s.startswith("RELEASE SAVEPOINT")
    )
    audit = next(
        i for i, s in enumerate(statements) if s.startswith('INSERT INTO "review_escalation"')
    )
    assert decided < step_ends < audit
    assert statements[audit - 1].startswith("SAVEPOINT")
    assert audit_of(proposal).detail["decision"] == Decision.objects.get(proposal=proposal).pk
