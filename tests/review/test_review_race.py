"""Reviewers submitting at once, on real connections: exactly one decision comes of it."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from reviewapp.review.models import Decision, Escalation, Review
from reviewapp.review.services.deadlines import escalation_expire
from reviewapp.review.services.escalations import (
    DeadlinePassed,
    EscalationClosed,
    escalation_claim,
    escalation_review,
)
from tests.api.conftest import evaluated
from tests.factories import ReviewerFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: concurrent writers on their own connections and row locks",
    ),
]


def _race(escalation_id: int, users: list) -> list[str]:
    """Each user submits from their own thread and connection, released together."""
    start = threading.Barrier(len(users))
    results: list[str] = []

    def submit(user):
        try:
            start.wait()
            result = escalation_review(
                escalation_id=escalation_id,
                outcome="approved",
                rationale="Looked at it.",
                user=user,
                decided_by_name=user.username,
            )
            results.append(result.status)
        except EscalationClosed:
            results.append("closed")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(results)


def test_two_reviewers_submitting_the_second_review_at_once_make_one_decision():
    proposal = evaluated("Refund 900 EUR.", requires_sign_off=True, reviews_needed=2)
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_review(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="First.",
        user=ReviewerFactory(username="ann"),
        decided_by_name="ann",
    )

    results = _race(
        escalation.pk, [ReviewerFactory(username="ben"), ReviewerFactory(username="cy")]
    )

    assert results == ["closed", "decided"]
    assert Decision.objects.filter(proposal=proposal).count() == 1
    assert Review.objects.filter(escalation=escalation).count() == 2


def test_two_reviewers_submitting_both_reviews_at_once_make_one_decision_naming_both():
    proposal = evaluated("Refund 900 EUR.", requires_sign_off=True, reviews_needed=2)
    escalation = Escalation.objects.get(proposal=proposal)

    results = _race(
        escalation.pk, [ReviewerFactory(username="ann"), ReviewerFactory(username="ben")]
    )

    assert results == ["awaiting_reviews", "decided"]
    decision = Decision.objects.get(proposal=proposal)
    assert decision.decided_by_name in ("ann, ben", "ben, ann")


def _deadline_race(escalation_id: int, reviewer, now) -> dict:
    """A reviewer signing and the deadline worker acting at once, each on its own
    connection, released together."""
    start = threading.Barrier(2)
    results: dict = {}

    def sign():
        try:
            start.wait()
            results["reviewer"] = escalation_review(
                escalation_id=escalation_id,
                outcome="approved",
                rationale="Checked it.",
                user=reviewer,
                decided_by_name=reviewer.username,
            ).status
        except DeadlinePassed:
            results["reviewer"] = "deadline passed"
        except EscalationClosed:
            results["reviewer"] = "closed"
        finally:
            connections.close_all()

    def expire():
        try:
            start.wait()
            decision = escalation_expire(escalation_id=escalation_id, now=now)
            results["deadline"] = "fallback" if decision else "nothing"
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sign), threading.Thread(target=expire)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.parametrize("run", range(5))
def test_a_reviewer_signing_after_the_deadline_loses_to_the_fallback_whoever_locks_first(run):
    proposal = evaluated(
        "Refund 900 EUR.", requires_sign_off=True, review_deadline=timedelta(hours=1)
    )
    escalation = Escalation.objects.get(proposal=proposal)
    reviewer = ReviewerFactory()
    escalation_claim(escalation_id=escalation.pk, user=reviewer)  # before the deadline
    now = timezone.now()
    Escalation.objects.filter(pk=escalation.pk).update(due_at=now - timedelta(seconds=1))

    results = _deadline_race(escalation.pk, reviewer, now)

    assert results == {"reviewer": "deadline passed", "deadline": "fallback"}
    decision = Decision.objects.get(proposal=proposal)
    assert decision.basis == Decision.Basis.FALLBACK


@pytest.mark.parametrize("run", range(5))
def test_a_reviewer_and_the_deadline_racing_at_the_deadline_make_exactly_one_decision(run):
    proposal = evaluated(
        "Refund 900 EUR.", requires_sign_off=True, review_deadline=timedelta(hours=1)
    )
    escalation = Escalation.objects.get(proposal=proposal)
    # The reviewer's clock is before the deadline, the worker's at it: the row lock decides.
    due = timezone.now() + timedelta(seconds=30)
    Escalation.objects.filter(pk=escalation.pk).update(due_at=due)

    results = _deadline_race(escalation.pk, ReviewerFactory(), due)

    decision = Decision.objects.get(proposal=proposal)
    if decision.basis == Decision.Basis.REVIEWER:
        assert results == {"reviewer": "decided", "deadline": "nothing"}
    else:
        assert results == {"reviewer": "deadline passed", "deadline": "fallback"}
    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.RESOLVED
