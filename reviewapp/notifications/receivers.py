"""What people hear when review (review/events.py) or calibration (calibration/events.py)
tells something happened.

Each receiver runs inside the sender's transaction, so a notice exists exactly
when its event does; messages are composed and sent after commit.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.dispatch import receiver

from reviewapp.calibration import events as calibration_events
from reviewapp.review import events as review_events
from reviewapp.review.groups import RECONCILERS_GROUP, REVIEWERS_GROUP

from . import content
from .models import Event
from .services import Addressed, escalation_notices, notices_record


def _holders(escalation) -> tuple[list, list[int]]:
    """Who holds or is assigned the escalation (people, groups); the reviewers if no one."""
    users = [escalation.claimed_by, escalation.assigned_user]
    users += [claim.user for claim in escalation.review_claims.select_related("user")]
    groups = [escalation.assigned_group_id] if escalation.assigned_group_id else []
    if not any(users) and not groups:
        groups = list(Group.objects.filter(name=REVIEWERS_GROUP).values_list("pk", flat=True))
    return [u for u in users if u is not None], groups


@receiver(review_events.escalation_deadline_near)
def deadline_near(sender, *, escalation, **kwargs):
    users, groups = _holders(escalation)
    escalation_notices(
        event=Event.DEADLINE_NEAR, escalation=escalation, users=users, group_ids=groups
    )


@receiver(review_events.escalation_deadline_passed)
def deadline_passed(sender, *, escalation, decision, **kwargs):
    if decision is not None:
        return  # the fallback decided it: nothing is left for anyone to do
    users, groups = _holders(escalation)
    escalation_notices(
        event=Event.DEADLINE_PASSED, escalation=escalation, users=users, group_ids=groups
    )


@receiver(review_events.escalation_assignment_changed)
def assigned(sender, *, escalation, old, new, **kwargs):
    """Whoever the escalation was just put before: a person, and/or a group's members."""
    users = [escalation.assigned_user] if new["user"] and new["user"] != old["user"] else []
    groups = (
        [escalation.assigned_group_id]
        if new["group"] and new["group"] != old["group"] and escalation.assigned_group_id
        else []
    )
    if users or groups:
        escalation_notices(
            event=Event.ASSIGNED, escalation=escalation, users=users, group_ids=groups
        )


@receiver(review_events.reviews_disagreed)
def reconcile_waiting(sender, *, escalation, **kwargs):
    """The reconcilers, less the reviewers who disagreed (they may not settle it)."""
    groups = Group.objects.filter(name=RECONCILERS_GROUP).values_list("pk", flat=True)
    escalation_notices(
        event=Event.RECONCILE,
        escalation=escalation,
        group_ids=list(groups),
        excluded_user_ids=list(escalation.reviews.values_list("reviewer_id", flat=True)),
    )


@receiver(calibration_events.lens_drift_crossed)
def lens_drifted(sender, *, floor, drifted, kappa, **kwargs):
    """Admins (active staff) hear a lens fell below its floor; not when it recovers."""
    if not drifted:
        return
    staff = list(get_user_model().objects.filter(is_staff=True, is_active=True))
    panels = floor.lens.panel_memberships.values_list("panel_id", flat=True)
    notices_record(
        event=Event.DRIFT,
        addressed=Addressed(users=tuple(staff), panel_ids=tuple(panels)),
        line=content.drift_line(floor.lens.name, kappa, floor.floor),
        path=f"/admin/calibration/lensfloor/{floor.pk}/change/",
        may_hear=lambda user: user.is_staff,
    )
