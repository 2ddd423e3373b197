"""What people hear when review tells something happened (review/events.py).

Each receiver runs inside the sender's transaction, so a notice exists exactly
when its event does; messages are composed and sent after commit.
"""

from django.contrib.auth.models import Group
from django.dispatch import receiver

from reviewapp.review import events as review_events
from reviewapp.review.access import REVIEWERS_GROUP

from .models import Event
from .services import escalation_notices


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
