"""Progress: each reviewer's own counts; staff see everyone's, with agreement."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.review.models import Escalation
from reviewapp.review.services.escalations import escalation_claim, escalation_review
from tests.api.conftest import evaluated
from tests.factories import ReconcilerFactory, ReviewerFactory, UserFactory

pytestmark = pytest.mark.django_db


def _give(escalation, user, outcome):
    escalation_review(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Read it.",
        user=user,
        decided_by_name=user.username,
    )


def _cells(html: str, username: str) -> dict[str, str]:
    row = re.search(rf'<tr data-reviewer="{username}">(.*?)</tr>', html, re.S).group(1)
    cells = dict(re.findall(r'data-col="(\w+)">([^<]*)', row))
    return {k: v.strip() for k, v in cells.items()}


def _page(user) -> str:
    client = Client()
    client.force_login(user)
    return client.get(reverse("my_progress")).content.decode()


@pytest.fixture
def reviewed():
    """ann and ben disagree, rex reconciles with ben; ann also holds another escalation."""
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    first = Escalation.objects.get(
        proposal=evaluated("Wire 1.", requires_sign_off=True, reviews_needed=2)
    )
    _give(first, ann, "approved")
    _give(first, ben, "rejected")
    _give(first, ReconcilerFactory(username="rex"), "rejected")
    held = Escalation.objects.get(proposal=evaluated("Wire 2.", requires_sign_off=True))
    escalation_claim(escalation_id=held.pk, user=ann)
    return ann, ben


def test_a_reviewer_sees_their_own_counts_only(reviewed):
    ann, _ = reviewed

    html = _page(ann)

    assert _cells(html, "ann") == {
        "today": "1",
        "week": "1",
        "holding": "1",
        "assigned": "0",
        "agreement": "0%",
    }
    assert 'data-reviewer="ben"' not in html


def test_staff_see_every_reviewers_agreement_with_the_final_decisions(reviewed):
    html = _page(UserFactory(username="stella", is_staff=True, is_superuser=True))

    assert _cells(html, "ann")["agreement"] == "0%"
    assert _cells(html, "ben")["agreement"] == "100%"
    assert _cells(html, "rex")["today"] == "1"  # a reconciler's decision is a verdict too


def test_the_review_that_completes_an_agreement_counts_once():
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    escalation = Escalation.objects.get(
        proposal=evaluated("Wire 3.", requires_sign_off=True, reviews_needed=2)
    )
    _give(escalation, ann, "approved")
    _give(escalation, ben, "approved")  # signs the decision too

    assert _cells(_page(ben), "ben")["today"] == "1"


def test_a_one_review_decision_counts_as_a_verdict():
    ann = ReviewerFactory(username="ann")
    _give(
        Escalation.objects.get(proposal=evaluated("Wire 4.", requires_sign_off=True)),
        ann,
        "approved",
    )

    assert _cells(_page(ann), "ann")["week"] == "1"


def test_each_reviewer_sees_the_open_escalations_assigned_to_them(reviewed):
    ann, ben = reviewed
    open_one = Escalation.objects.get(proposal=evaluated("Wire 3.", requires_sign_off=True))
    decided = Escalation.objects.filter(status="resolved").first()
    Escalation.objects.filter(pk__in=[open_one.pk, decided.pk]).update(assigned_user=ann)

    staff_html = _page(UserFactory(username="stella", is_staff=True, is_superuser=True))

    assert _cells(_page(ann), "ann")["assigned"] == "1"  # the decided one is not counted
    assert (_cells(staff_html, "ann")["assigned"], _cells(staff_html, "ben")["assigned"]) == (
        "1",
        "0",
    )
