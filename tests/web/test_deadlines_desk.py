"""The desk and review deadlines: due in the inbox, sorted by it, and a late verdict refused
with what the reviewer wrote kept."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp.review.models import Decision, Escalation
from reviewapp.review.services.escalations import escalation_claim
from tests.api.conftest import evaluated

pytestmark = pytest.mark.django_db


def _escalation(deadline=None) -> Escalation:
    fields = {"review_deadline": deadline} if deadline else {}
    proposal = evaluated("Ship it on Friday.", requires_sign_off=True, **fields)
    return Escalation.objects.get(proposal=proposal)


def test_the_inbox_shows_when_each_escalation_is_due(reviewer_client):
    due = _escalation(timedelta(hours=3))
    _escalation()

    page = reviewer_client.get("/").content.decode()

    assert f'datetime="{due.due_at:%Y-%m-%dT%H:%M:%S}' in page
    assert "UTC: then the panel's fallback rejects it" in page


def test_the_inbox_sorts_by_deadline_soonest_first_and_none_last(reviewer_client):
    none = _escalation()
    later = _escalation(timedelta(hours=5))
    sooner = _escalation(timedelta(hours=2))

    page = reviewer_client.get("/", {"sort": "due"}).content.decode()

    order = [page.index(f'data-id="{e.pk}"') for e in (sooner, later, none)]
    assert order == sorted(order)
    assert '<option value="due" selected>' in page


def test_a_verdict_signed_after_the_deadline_is_refused_and_keeps_the_rationale(
    reviewer_client, reviewer
):
    escalation = _escalation(timedelta(hours=1))
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    Escalation.objects.filter(pk=escalation.pk).update(
        due_at=timezone.now() - timedelta(seconds=5)
    )

    response = reviewer_client.post(
        f"/escalations/{escalation.pk}/decide",
        {"outcome": "approved", "rationale": "Checked all 14 line items twice."},
    )

    page = response.content.decode()
    assert response.status_code == 409
    assert "review deadline of escalation" in page and "fallback (reject) decides it" in page
    assert "Checked all 14 line items twice." in page
    assert not Decision.objects.exists()


def test_the_proposal_page_says_when_the_deadline_falls_and_what_happens_then(reviewer_client):
    escalation = _escalation(timedelta(hours=3))

    page = reviewer_client.get(f"/proposals/{escalation.proposal_id}").content.decode()

    assert 'id="escalation-deadline"' in page
    assert f"{escalation.due_at:%Y-%m-%d %H:%M} UTC" in page
    assert "the panel's fallback rejects it" in page
