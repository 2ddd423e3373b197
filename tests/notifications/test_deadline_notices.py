"""Deadlines told to people: the reminder before, and keep_open's deadline passing."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group

from reviewapp.notifications.models import Channel, Event, Notice
from reviewapp.review.access import REVIEWERS_GROUP
from reviewapp.review.models import Escalation
from reviewapp.review.services.deadlines import escalation_expire, escalations_remind
from tests.api.conftest import evaluated
from tests.factories import ReviewerFactory

pytestmark = pytest.mark.django_db


def _escalation(**panel_fields) -> Escalation:
    proposal = evaluated("Ship it.", requires_sign_off=True, **panel_fields)
    return Escalation.objects.select_related("proposal").get(proposal=proposal)


def _panel_channel(escalation, *events):
    return Channel.objects.create(
        name="mail", kind=Channel.Kind.EMAIL, panel_id=escalation.proposal.panel_id,
        events=list(events),
    )  # fmt: skip


def test_whoever_is_assigned_is_reminded_once_when_the_deadline_is_near():
    escalation = _escalation(
        review_deadline=timedelta(hours=2), deadline_reminder=timedelta(minutes=30)
    )
    ann = ReviewerFactory(email="ann@example.com")
    Escalation.objects.filter(pk=escalation.pk).update(assigned_user=ann)
    _panel_channel(escalation, Event.DEADLINE_NEAR)

    assert escalations_remind(now=escalation.remind_at - timedelta(seconds=1), limit=10) == 0
    assert escalations_remind(now=escalation.remind_at, limit=10) == 1
    assert escalations_remind(now=escalation.remind_at, limit=10) == 0

    [notice] = Notice.objects.all()
    assert notice.mailbox.user == ann and notice.event == Event.DEADLINE_NEAR
    assert "its review deadline is near" in notice.line and "then rejected" in notice.line


def test_a_kept_open_escalation_past_its_deadline_is_told_to_the_reviewers():
    escalation = _escalation(review_deadline=timedelta(hours=2), on_deadline="keep_open")
    ben = ReviewerFactory(email="ben@example.com")  # joins the reviewers group
    reviewers = Group.objects.get(name=REVIEWERS_GROUP)
    Channel.objects.create(
        name="team", kind=Channel.Kind.EMAIL, group=reviewers, events=[Event.DEADLINE_PASSED]
    )

    escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    [notice] = Notice.objects.all()
    assert notice.mailbox.user == ben
    assert "its review deadline passed; it is kept open" in notice.line


def test_a_fallback_decision_tells_no_one_to_act():
    escalation = _escalation(review_deadline=timedelta(hours=2), on_deadline="reject")
    ReviewerFactory(email="ben@example.com")
    _panel_channel(escalation, Event.DEADLINE_PASSED)

    escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)

    assert not Notice.objects.exists()
