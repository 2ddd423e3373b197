"""Audit entries for what review tells (review/events.py): escalation work, assignments,
a panel's priority, a key rotation. Each is written inside the sender's transaction, so
the entry commits with its action or not at all."""

from django.dispatch import receiver

from reviewapp.review import events as review_events

from .models import AuditEntry
from .services import audit_change, audit_record


def _escalation_entry(escalation, *, actor, action: str, changes=None, note: str = "") -> None:
    audit_record(
        actor=actor,
        action=action,
        target_type="escalation",
        target=escalation,
        target_repr=f"escalation {escalation.pk} (proposal {escalation.proposal_id})",
        changes=changes,
        note=note,
    )


@receiver(review_events.escalation_claimed)
@receiver(review_events.review_place_claimed)
def claimed(sender, *, escalation, user, **kwargs):
    _escalation_entry(escalation, actor=user, action=AuditEntry.Action.CLAIM)


@receiver(review_events.escalation_released)
def released(sender, *, escalation, user, **kwargs):
    _escalation_entry(escalation, actor=user, action=AuditEntry.Action.RELEASE)


@receiver(review_events.escalation_reassigned)
def reassigned(sender, *, escalation, by, previous, note, **kwargs):
    _escalation_entry(
        escalation,
        actor=by,
        action=AuditEntry.Action.REASSIGN,
        changes={"claimed_by": {"old": previous, "new": escalation.claimed_by.get_username()}},
        note=note,
    )


@receiver(review_events.escalation_assignment_changed)
def assignment_changed(sender, *, escalation, by, old, new, note, **kwargs):
    if not any(new.values()):
        action = AuditEntry.Action.UNASSIGN
    elif not any(old.values()):
        action = AuditEntry.Action.ASSIGN
    else:
        action = AuditEntry.Action.REASSIGN
    _escalation_entry(
        escalation,
        actor=by,
        action=action,
        changes={f"assigned_{k}": {"old": old[k], "new": new[k]} for k in new if old[k] != new[k]},
        note=note,
    )


@receiver(review_events.panel_priority_changed)
def panel_priority_changed(sender, *, panel, by, old, **kwargs):
    audit_change(
        actor=by,
        target_type="panel",
        target=panel,
        before={"priority": old},
        after={"priority": panel.priority},
    )


@receiver(review_events.signing_key_rotated)
def signing_key_rotated(sender, *, key, by, old_key_id, retired, retired_file, **kwargs):
    audit_record(
        actor=by,
        action=AuditEntry.Action.ROTATE,
        target_type="signing key",
        target=key,
        changes={
            "signing_key": {"old": old_key_id, "new": key.key_id},
            "retired": {"old": [], "new": retired},
        },
        note=f"old seed moved to {retired_file}" if retired_file else "no previous key file",
    )
