"""Reviewers submitting at once, on real connections: exactly one decision comes of it."""

import threading

import pytest
from django.db import connection, connections

from reviewapp.review.models import Decision, Escalation, Review
from reviewapp.review.services.escalations import EscalationClosed, escalation_review
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
