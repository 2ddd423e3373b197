"""Who may sign a reviewer decision, and what counts as a rationale (services/escalations.py)."""

import pytest

from reviewapp.review.access import may_sign_decisions
from reviewapp.review.models import Decision, Escalation
from reviewapp.review.services.escalations import (
    NotAReviewer,
    escalation_claim,
    escalation_decide,
)
from tests.factories import ReviewerFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def escalation(escalated):
    return Escalation.objects.get(proposal=escalated)


@pytest.fixture
def escalated():
    from tests.api.conftest import evaluated

    return evaluated("Ship it on Friday.", requires_sign_off=True)


def test_reviewers_and_superusers_may_sign_staff_alone_may_not():
    assert may_sign_decisions(ReviewerFactory())
    assert may_sign_decisions(UserFactory(is_superuser=True))
    assert not may_sign_decisions(UserFactory(is_staff=True))
    assert not may_sign_decisions(ReviewerFactory(is_active=False))


def test_staff_outside_the_group_cannot_claim(escalation):
    with pytest.raises(NotAReviewer):
        escalation_claim(escalation_id=escalation.pk, user=UserFactory(is_staff=True))
    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.OPEN


def test_staff_outside_the_group_cannot_decide(escalation):
    with pytest.raises(NotAReviewer):
        escalation_decide(
            escalation_id=escalation.pk,
            outcome="approved",
            rationale="Fine.",
            user=UserFactory(is_staff=True),
            decided_by_name="staff",
        )
    assert not Decision.objects.exists()


def test_a_rationale_of_zero_width_characters_is_no_rationale(escalation):
    with pytest.raises(ValueError, match="rationale"):
        escalation_decide(
            escalation_id=escalation.pk,
            outcome="approved",
            rationale="\u200b\u200c\u200d\ufeff",
            user=ReviewerFactory(),
            decided_by_name="rita",
        )
    assert not Decision.objects.exists()
