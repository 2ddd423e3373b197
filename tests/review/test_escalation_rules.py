"""The escalation's rules on the model: one claim-expiry boundary, kept alike by every door.

A claim taken at `t` is live while now < t + TTL; at t + TTL exactly it has
expired. The instance, its QuerySet, a review place and the services all
answer the same at that instant.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp.review.models import Escalation, ReviewClaim
from reviewapp.review.models.escalation import claim_ttl, expired_claim_q, held_q
from reviewapp.review.services.escalations import (
    ClaimHeldByOther,
    escalation_claim,
    escalation_claim_extend,
    escalation_decide,
)
from tests.api.conftest import evaluated

pytestmark = pytest.mark.django_db

# Microseconds on purpose: SQLite compares stored datetimes as text.
NOW = timezone.now().replace(microsecond=123456)
TICK = timedelta(microseconds=1)


@pytest.fixture
def held(reviewer) -> Escalation:
    proposal = evaluated("Ship it on Friday.", requires_sign_off=True)
    escalation = Escalation.objects.get(proposal=proposal)
    escalation.hold(reviewer, NOW - claim_ttl())  # expires at NOW exactly
    return escalation


@pytest.fixture
def frozen(monkeypatch):
    """The services' clock, stopped at `at`."""

    def stop(at):
        monkeypatch.setattr(timezone, "now", lambda: at)

    return stop


def test_a_claim_is_live_until_one_instant_before_its_expiry(held, second_reviewer):
    assert held.claim_expires_at == NOW
    assert held.claim_live(NOW - TICK)
    assert held.held_by_other(second_reviewer, NOW - TICK)


def test_a_claim_has_expired_at_its_expiry_exactly(held, reviewer, second_reviewer):
    assert not held.claim_live(NOW)
    assert not held.held_by_other(second_reviewer, NOW)
    standing = held.standing(reviewer, NOW)
    assert (standing.live, standing.expired, standing.claimable) == (False, True, True)


def test_the_queryset_draws_the_boundary_where_the_instance_does(held, second_reviewer):
    rows = Escalation.objects.filter(pk=held.pk)
    assert (rows.held(NOW - TICK).exists(), rows.held(NOW).exists()) == (True, False)
    assert rows.filter(expired_claim_q(NOW)).exists() and not rows.filter(held_q(NOW)).exists()
    assert not rows.claimable_by(second_reviewer, NOW - TICK).exists()
    assert rows.claimable_by(second_reviewer, NOW).exists()


def test_a_review_place_expires_at_the_same_instant(held, reviewer):
    place = ReviewClaim.objects.create(escalation=held, user=reviewer, claimed_at=NOW - claim_ttl())
    places = ReviewClaim.objects.filter(pk=place.pk)
    assert (places.live(NOW - TICK).exists(), places.live(NOW).exists()) == (True, False)


def test_another_reviewer_cannot_claim_one_instant_before_expiry(held, second_reviewer, frozen):
    frozen(NOW - TICK)
    with pytest.raises(ClaimHeldByOther):
        escalation_claim(escalation_id=held.pk, user=second_reviewer)


def test_another_reviewer_claims_it_at_its_expiry(held, second_reviewer, frozen):
    frozen(NOW)
    claimed = escalation_claim(escalation_id=held.pk, user=second_reviewer)
    assert (claimed.claimed_by, claimed.claimed_at) == (second_reviewer, NOW)


def test_a_token_may_decide_once_the_claim_has_expired_not_before(held, frozen):
    frozen(NOW - TICK)
    with pytest.raises(ClaimHeldByOther):
        escalation_decide(
            escalation_id=held.pk, outcome="approved", rationale="Fine.", decided_by_name="bot"
        )
    frozen(NOW)
    decision = escalation_decide(
        escalation_id=held.pk, outcome="approved", rationale="Fine.", decided_by_name="bot"
    )
    assert decision.outcome == "approved"


def test_a_heartbeat_renews_a_live_claim_but_never_revives_an_expired_one(held, reviewer, frozen):
    frozen(NOW)
    assert escalation_claim_extend(escalation_id=held.pk, user=reviewer) is None
    held.hold(reviewer, NOW - claim_ttl() + TICK)
    assert escalation_claim_extend(escalation_id=held.pk, user=reviewer) == NOW + claim_ttl()
