"""Whose queue an escalation is in: staff's assignments, and the rules applied on open and
when the reviews disagree."""

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q

from .. import events
from ..access import may_sign_decisions
from ..models import AssignmentRule, Escalation


class NotStaffToAssign(PermissionDenied):
    """Only staff assign escalations."""


class AssigneeNotAReviewer(ValueError):
    """Only someone who may decide escalations can have them in their queue."""


class AssignmentClosed(Exception):
    """The escalation is already decided: there is nothing left to assign."""


def _names(user, group) -> dict:
    return {
        "user": user.get_username() if user is not None else None,
        "group": group.name if group is not None else None,
    }


def _assignment_changed(escalation: Escalation, *, by, old: dict, new: dict, note: str = ""):
    if old != new:  # the audit entry commits with the change
        events.escalation_assignment_changed.send(
            sender=Escalation, escalation=escalation, by=by, old=old, new=new, note=note
        )


def escalation_assign(*, escalation: Escalation, user=None, group=None, by, note: str = ""):
    """Put `escalation` in `user`'s and/or `group`'s queue (both None: unassign). Audited.

    Assigning does not claim: the assignee still claims it to work on it.
    """
    if not (by.is_staff or by.is_superuser):
        raise NotStaffToAssign("only staff can assign escalations")
    if user is not None and not may_sign_decisions(user):
        raise AssigneeNotAReviewer(
            f"{user.get_username()} is not a reviewer (not in the reviewers group)"
        )
    with transaction.atomic():
        # Locked so two staff assigning at once are recorded in order, each
        # entry's "old" being what the other one set.
        locked = (
            Escalation.objects.select_for_update(of=("self",))
            .select_related("assigned_user", "assigned_group")
            .get(pk=escalation.pk)
        )
        if locked.is_resolved:
            raise AssignmentClosed(f"escalation {escalation.pk} is already decided")
        old = _names(locked.assigned_user, locked.assigned_group)
        locked.assigned_user = user
        locked.assigned_group = group
        locked.save(update_fields=["assigned_user", "assigned_group"])
        _assignment_changed(locked, by=by, old=old, new=_names(user, group), note=note)
    escalation.assigned_user = user
    escalation.assigned_group = group
    return escalation


def assignment_rule_for(
    *, panel_id: int | None, reasons: list[str], any_reason: bool = True
) -> AssignmentRule | None:
    """The rule for `reasons`: panel and reason, then panel, then reason; oldest first.

    Without `any_reason`, only a rule naming one of `reasons` matches (a rule
    for any reason of its panel was applied when the escalation opened).
    """
    reason_q = Q(reason__in=reasons) | Q(reason="") if any_reason else Q(reason__in=reasons)
    rules = AssignmentRule.objects.filter(
        (Q(panel_id=panel_id) | Q(panel__isnull=True)) & reason_q
    ).select_related("assigned_user", "assigned_group")
    return min(
        rules,
        key=lambda r: (r.panel_id is None, r.reason == "", r.pk),
        default=None,
    )


def _rule_applied(escalation: Escalation, rule: AssignmentRule, old: dict) -> None:
    escalation.assigned_user = rule.assigned_user
    escalation.assigned_group = rule.assigned_group
    escalation.save(update_fields=["assigned_user", "assigned_group"])
    _assignment_changed(
        escalation,
        by="assignment rule",
        old=old,
        new=_names(rule.assigned_user, rule.assigned_group),
        note=f"rule {rule.pk}: {rule}",
    )


def escalation_assign_by_rules(*, escalation: Escalation, panel_id: int | None) -> None:
    """Apply the matching assignment rule to a just-opened escalation (inside its transaction)."""
    rule = assignment_rule_for(panel_id=panel_id, reasons=list(escalation.reasons or []))
    if rule is not None:
        _rule_applied(escalation, rule, _names(None, None))


def escalation_assign_on_reconcile(*, escalation: Escalation) -> None:
    """The reviews disagree: a rule for that reason puts the escalation in its queue now.

    Called inside the transaction that sends it to reconcile, on the locked row;
    with no such rule its assignment stays as it was.
    """
    rule = assignment_rule_for(
        panel_id=escalation.proposal.panel_id,
        reasons=[Escalation.Reason.REVIEWERS_DISAGREE.value],
        any_reason=False,
    )
    if rule is not None:
        old = _names(escalation.assigned_user, escalation.assigned_group)
        _rule_applied(escalation, rule, old)
