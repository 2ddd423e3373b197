"""What review and calibration announce reaches the people concerned."""

import pytest
from django.contrib.auth.models import Group

from reviewapp.calibration import events as calibration_events
from reviewapp.calibration.models import LensFloor
from reviewapp.notifications.models import Channel, Event, Notice
from reviewapp.review.groups import RECONCILERS_GROUP
from reviewapp.review.models import Escalation
from reviewapp.review.services.assignments import escalation_assign
from reviewapp.review.services.escalations import escalation_review
from tests.api.conftest import evaluated
from tests.factories import LensFactory, ReconcilerFactory, ReviewerFactory, UserFactory

pytestmark = pytest.mark.django_db


def _escalation(**panel_fields) -> Escalation:
    proposal = evaluated("Ship it on Friday.", requires_sign_off=True, **panel_fields)
    return Escalation.objects.select_related("proposal").get(proposal=proposal)


def _mailed(user) -> list[str]:
    return list(Notice.objects.filter(mailbox__user=user).values_list("event", flat=True))


def test_an_escalation_assigned_by_staff_reaches_the_assignee():
    escalation = _escalation()
    ann = ReviewerFactory(email="ann@example.com")
    team = Group.objects.create(name="billing")
    ann.groups.add(team)
    Channel.objects.create(name="mail", kind="email", group=team, events=[Event.ASSIGNED])
    staff = UserFactory(is_staff=True)

    escalation_assign(escalation=escalation, user=ann, by=staff)

    assert _mailed(ann) == [Event.ASSIGNED]


def test_a_reconcile_reaches_the_reconcilers_but_not_the_reviewers_who_disagreed():
    escalation = _escalation(reviews_needed=2)
    rita = ReconcilerFactory(email="rita@example.com")
    reconcilers = Group.objects.get(name=RECONCILERS_GROUP)
    Channel.objects.create(name="mail", kind="email", group=reconcilers,
                           events=[Event.RECONCILE])  # fmt: skip
    ann, ben = ReviewerFactory(email="a@example.com"), ReconcilerFactory(email="b@example.com")
    for person, outcome in ((ann, "approved"), (ben, "rejected")):
        escalation_review(escalation_id=escalation.pk, outcome=outcome, rationale="Mine.",
                          user=person, decided_by_name=person.username)  # fmt: skip

    assert _mailed(rita) == [Event.RECONCILE]
    assert _mailed(ben) == []  # a reconciler, but one of the two who disagreed


def test_a_lens_drift_reaches_the_admins_and_a_recovery_does_not():
    admin = UserFactory(is_staff=True, email="admin@example.com")
    ops = Group.objects.create(name="ops")
    admin.groups.add(ops)
    Channel.objects.create(name="mail", kind="email", group=ops, events=[Event.DRIFT])
    floor = LensFloor.objects.create(lens=LensFactory(name="tone"), floor=0.6)

    for drifted in (True, False):
        calibration_events.lens_drift_crossed.send(
            sender=LensFloor, floor=floor, drifted=drifted, kappa=0.41, adjudications=50
        )

    [notice] = Notice.objects.filter(mailbox__user=admin)
    assert notice.line == "Lens tone drifted from the reviewers: kappa 0.41, below its floor 0.60."
