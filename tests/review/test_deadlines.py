"""Review deadlines: the escalation's clock, the signed fallback, keep_open, and who wins."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from reviewapp_client import verify_decision

from reviewapp.calibration.models import HumanLabel
from reviewapp.ledger.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import Decision, Escalation, Proposal
from reviewapp.review.services.deadlines import (
    escalation_expire,
    escalations_due_take,
    escalations_expire,
)
from reviewapp.review.services.escalations import (
    DeadlinePassed,
    escalation_claim,
    escalation_review,
)
from reviewapp.webhooks.models import Delivery, Event
from tests.api.conftest import evaluated
from tests.factories import ReviewerFactory
from tests.webhooks.helpers import api_client, subscribe

pytestmark = pytest.mark.django_db

FOUR_HOURS = timedelta(hours=4)


def _escalated(**panel_fields) -> Escalation:
    proposal = evaluated("Ship it on Friday.", requires_sign_off=True, **panel_fields)
    assert proposal.status == Proposal.Status.ESCALATED
    return Escalation.objects.get(proposal=proposal)


def _past_due(escalation: Escalation, by=timedelta(seconds=1)) -> Escalation:
    Escalation.objects.filter(pk=escalation.pk).update(due_at=timezone.now() - by)
    escalation.refresh_from_db()
    return escalation


def test_an_escalation_copies_its_panels_deadline_when_it_is_made():
    before = timezone.now()
    escalation = _escalated(
        review_deadline=FOUR_HOURS, on_deadline="approve", deadline_reminder=timedelta(hours=1)
    )

    assert before + FOUR_HOURS <= escalation.due_at <= timezone.now() + FOUR_HOURS
    assert escalation.on_deadline == "approve"
    assert escalation.remind_at == escalation.due_at - timedelta(hours=1)


def test_a_panel_without_a_deadline_leaves_its_escalations_waiting_for_a_person():
    escalation = _escalated()

    assert escalation.due_at is None and escalation.on_deadline == ""
    assert escalations_due_take(now=timezone.now() + timedelta(days=3650), limit=10) == []
    assert escalation_expire(escalation_id=escalation.pk, now=timezone.now()) is None


def test_nothing_happens_before_the_deadline():
    escalation = _escalated(review_deadline=FOUR_HOURS)

    early = escalation.due_at - timedelta(seconds=1)

    assert escalation_expire(escalation_id=escalation.pk, now=early) is None
    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.OPEN and escalation.expired_at is None


def test_at_the_deadline_reject_is_a_signed_decision_marked_as_a_fallback():
    escalation = _escalated(review_deadline=FOUR_HOURS, on_deadline="reject")

    decision = escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    assert decision.outcome == Decision.Outcome.REJECTED
    assert decision.basis == Decision.Basis.FALLBACK
    assert decision.decided_by is None and decision.decided_by_name == "deadline fallback"
    signed = json.loads(decision.payload)
    assert signed["basis"] == "fallback"
    assert signed["fallback"] == {
        "on_deadline": "reject",
        "due_at": escalation.due_at.isoformat(),
        "review_deadline_seconds": int((escalation.due_at - escalation.created_at).total_seconds()),
    }
    assert "No person made this decision" in signed["rationale"]
    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.RESOLVED
    assert escalation.expired_at == escalation.resolved_at
    assert Proposal.objects.get(pk=escalation.proposal_id).status == Proposal.Status.DECIDED


def test_the_fallback_decision_verifies_offline_with_the_public_key_alone():
    escalation = _escalated(review_deadline=FOUR_HOURS, on_deadline="approve")
    decision = escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    signed = verify_decision(
        {"payload": decision.payload, "signature": decision.signature, "key_id": decision.key_id},
        public_keys_b64(trusted_keys()),
    )

    assert signed["outcome"] == "approved" and signed["basis"] == "fallback"
    assert signed["fallback"]["on_deadline"] == "approve"


def test_a_fallback_decision_is_never_a_human_label():
    escalation = _escalated(review_deadline=FOUR_HOURS, on_deadline="approve")

    escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    assert not HumanLabel.objects.exists()


def test_the_deadline_is_acted_on_once_however_often_it_is_asked():
    escalation = _escalated(review_deadline=FOUR_HOURS)

    first = escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)
    again = escalation_expire(escalation_id=escalation.pk, now=escalation.due_at + timedelta(1))

    assert first is not None and again is None
    assert Decision.objects.filter(proposal_id=escalation.proposal_id).count() == 1


def test_keep_open_records_the_deadline_and_leaves_the_escalation_to_people():
    escalation = _escalated(review_deadline=FOUR_HOURS, on_deadline="keep_open")

    assert escalation_expire(escalation_id=escalation.pk, now=escalation.due_at) is None
    assert escalation_expire(escalation_id=escalation.pk, now=escalation.due_at) is None

    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.OPEN
    assert escalation.expired_at == escalation.due_at
    reviewer = ReviewerFactory()
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    decision = escalation_review(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Late, but looked at.",
        user=reviewer,
        decided_by_name=reviewer.username,
    ).decision
    assert decision.basis == Decision.Basis.REVIEWER


def test_the_deadline_is_announced_as_escalation_expired_with_the_signed_fallback():
    client, _ = api_client("submit", "read", "read:all")
    subscribe(client, "http://127.0.0.1:9/in", events=[Event.ESCALATION_EXPIRED])
    escalation = _escalated(review_deadline=FOUR_HOURS)

    decision = escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    delivery = Delivery.objects.get(event_type=Event.ESCALATION_EXPIRED)
    data = json.loads(delivery.body)["data"]
    assert data["escalation"]["id"] == escalation.pk
    assert data["escalation"]["status"] == "resolved"
    assert data["escalation"]["due_at"] == escalation.due_at.isoformat()
    assert data["escalation"]["on_deadline"] == "reject"
    assert data["decision"]["basis"] == "fallback"
    assert data["decision"]["payload"] == decision.payload


def test_keep_open_is_announced_as_escalation_expired_without_a_decision():
    client, _ = api_client("submit", "read", "read:all")
    subscribe(client, "http://127.0.0.1:9/in", events=[Event.ESCALATION_EXPIRED])
    escalation = _escalated(review_deadline=FOUR_HOURS, on_deadline="keep_open")

    escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    data = json.loads(Delivery.objects.get(event_type=Event.ESCALATION_EXPIRED).body)["data"]
    assert data["escalation"]["status"] == "open" and data["decision"] is None


def test_a_reviewer_who_claimed_before_the_deadline_and_signs_after_it_is_refused():
    escalation = _escalated(review_deadline=FOUR_HOURS)
    reviewer = ReviewerFactory()
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    _past_due(escalation)

    with pytest.raises(DeadlinePassed, match=r"fallback \(reject\) decides it") as refused:
        escalation_review(
            escalation_id=escalation.pk,
            outcome="approved",
            rationale="Checked every figure.",
            user=reviewer,
            decided_by_name=reviewer.username,
        )

    assert "not signed" in str(refused.value)
    assert not Decision.objects.filter(proposal_id=escalation.proposal_id).exists()
    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.CLAIMED  # nothing half-written
    decision = escalation_expire(escalation_id=escalation.pk, now=timezone.now())
    assert decision.basis == Decision.Basis.FALLBACK


def test_a_reviewer_who_signs_before_the_deadline_wins_and_the_deadline_does_nothing():
    escalation = _escalated(review_deadline=FOUR_HOURS)
    reviewer = ReviewerFactory()
    escalation_review(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Fine.",
        user=reviewer,
        decided_by_name=reviewer.username,
    )

    assert escalation_expire(escalation_id=escalation.pk, now=escalation.due_at) is None
    assert Decision.objects.get(proposal_id=escalation.proposal_id).basis == "reviewer"


def test_an_escalation_past_its_deadline_cannot_be_claimed():
    escalation = _past_due(_escalated(review_deadline=FOUR_HOURS, on_deadline="approve"))

    with pytest.raises(DeadlinePassed, match=r"fallback \(approve\) decides it"):
        escalation_claim(escalation_id=escalation.pk, user=ReviewerFactory())

    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.OPEN and escalation.claimed_by is None


def test_the_sweep_leases_what_is_due_earliest_first_and_skips_what_is_leased():
    first = _past_due(_escalated(review_deadline=FOUR_HOURS), by=timedelta(minutes=2))
    second = _past_due(_escalated(review_deadline=FOUR_HOURS), by=timedelta(minutes=1))
    _escalated(review_deadline=FOUR_HOURS)  # not due
    now = timezone.now()

    assert escalations_due_take(now=now, limit=10) == [first.pk, second.pk]
    assert escalations_due_take(now=now, limit=10) == []  # leased
    later = now + timedelta(seconds=121)  # REVIEWAPP_DEADLINE_LEASE_SECONDS default 120
    assert escalations_due_take(now=later, limit=1) == [first.pk]


def test_what_was_acted_on_is_never_taken_again():
    escalation = _past_due(_escalated(review_deadline=FOUR_HOURS))
    now = timezone.now()
    assert escalations_due_take(now=now, limit=10) == [escalation.pk]

    escalation_expire(escalation_id=escalation.pk, now=now)

    assert escalations_due_take(now=now + timedelta(hours=1), limit=10) == []


def test_many_deadlines_are_acted_on_in_one_go_and_only_those_due():
    first = _past_due(_escalated(review_deadline=FOUR_HOURS))
    second = _past_due(_escalated(review_deadline=FOUR_HOURS, on_deadline="keep_open"))
    third = _past_due(_escalated(review_deadline=FOUR_HOURS, on_deadline="approve"))
    later = _escalated(review_deadline=FOUR_HOURS)

    decided = escalations_expire(
        escalation_ids=[first.pk, second.pk, third.pk, later.pk], now=timezone.now()
    )

    assert decided == 2
    outcomes = dict(Decision.objects.values_list("escalation_id", "outcome"))
    assert outcomes == {first.pk: "rejected", third.pk: "approved"}
    later.refresh_from_db()
    assert later.expired_at is None and later.status == Escalation.Status.OPEN


def test_a_batch_of_fallbacks_reads_who_hears_of_each_once():
    escalations = [_past_due(_escalated(review_deadline=FOUR_HOURS)) for _ in range(3)]
    one = _past_due(_escalated(review_deadline=FOUR_HOURS))
    now = timezone.now()

    with CaptureQueriesContext(connection) as single:
        escalations_expire(escalation_ids=[one.pk], now=now)
    with CaptureQueriesContext(connection) as three:
        escalations_expire(escalation_ids=[e.pk for e in escalations], now=now)

    per_fallback = len(three.captured_queries) - len(single.captured_queries)
    endpoints = [q for q in three.captured_queries if "webhooks_endpoint" in q["sql"]]
    assert len(endpoints) == 3  # once per decision, not once per event
    assert per_fallback <= 2 * 6  # the rows are written per batch, not per escalation
