"""Review deadlines as agents see them: due_at on escalations, the fallback on decisions."""

from datetime import timedelta

import pytest
from django.utils.dateparse import parse_datetime

from reviewapp.review.models import Escalation
from reviewapp.review.services.deadlines import escalation_expire

from .conftest import evaluated

pytestmark = pytest.mark.django_db


def _same_instant(text: str, when) -> bool:
    """JSON datetimes carry milliseconds."""
    return abs(parse_datetime(text) - when) < timedelta(milliseconds=1)


@pytest.fixture
def waiting(db) -> Escalation:
    proposal = evaluated(
        "Ship it on Friday.", requires_sign_off=True, review_deadline=timedelta(hours=4)
    )
    return Escalation.objects.get(proposal=proposal)


def test_an_escalation_shows_when_its_deadline_falls_and_what_happens_then(api, waiting):
    listed = api.get("/api/escalations").json()["items"][0]
    detail = api.get(f"/api/escalations/{waiting.pk}").json()
    proposal = api.get(f"/api/proposals/{waiting.proposal_id}").json()

    for escalation in (listed, detail, proposal["escalation"]):
        assert _same_instant(escalation["due_at"], waiting.due_at)
        assert escalation["on_deadline"] == "reject"


def test_an_escalation_without_a_deadline_says_so_with_nulls(api, escalated):
    escalation = api.get(f"/api/proposals/{escalated.pk}").json()["escalation"]

    assert escalation["due_at"] is None and escalation["on_deadline"] is None


def test_a_fallback_decision_says_what_made_it_as_signed(api, waiting):
    escalation_expire(escalation_id=waiting.pk, now=waiting.due_at)

    decision = api.get(f"/api/proposals/{waiting.proposal_id}").json()["decision"]

    assert decision["basis"] == "fallback" and decision["outcome"] == "rejected"
    assert decision["decided_by"] == "deadline fallback"
    assert decision["fallback"]["on_deadline"] == "reject"
    assert _same_instant(decision["fallback"]["due_at"], waiting.due_at)


def test_a_person_s_decision_has_no_fallback(api, decided):
    assert api.get(f"/api/proposals/{decided.pk}").json()["decision"]["fallback"] is None
