"""Recording configuration changes as field diffs."""

import datetime
import decimal
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import models

from .models import AuditEntry


def _plain(value: Any) -> Any:
    """A JSON-storable rendering of a field value."""
    if isinstance(value, models.Model):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def snapshot(obj: models.Model | None, fields: Iterable[str]) -> dict[str, Any]:
    """The named attributes of `obj` as plain values ({} for None)."""
    if obj is None:
        return {}
    return {name: _plain(getattr(obj, name)) for name in fields}


def field_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, dict]:
    """{field: {"old", "new"}} for every field whose value differs."""
    diff = {}
    for name in list(before) + [k for k in after if k not in before]:
        old, new = before.get(name), after.get(name)
        if old != new:
            diff[name] = {"old": old, "new": new}
    return diff


def _actor_name(actor) -> str:
    if actor is None:
        return "system"
    if isinstance(actor, str):
        return actor
    return actor.get_username() or f"user {actor.pk}"


def audit_record(
    *,
    actor,
    action: str,
    target_type: str,
    target: models.Model | None = None,
    target_id: str | int | None = None,
    target_repr: str | None = None,
    changes: Mapping[str, Any] | None = None,
    note: str = "",
) -> AuditEntry:
    """Write one audit entry. `actor` is a user, a name (a command, "system") or None."""
    user = actor if isinstance(actor, models.Model) else None
    return AuditEntry.objects.create(
        actor=user,
        actor_name=_actor_name(actor)[:150],
        action=action,
        target_type=target_type,
        target_id=str(target_id if target_id is not None else getattr(target, "pk", "")),
        target_repr=(target_repr if target_repr is not None else str(target))[:200],
        changes=_plain(dict(changes or {})),
        note=note,
    )


def audit_change(
    *,
    actor,
    target_type: str,
    target: models.Model,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    note: str = "",
) -> AuditEntry | None:
    """Record a create (before is None) or an update (only if something differs)."""
    if before is None:
        action = AuditEntry.Action.CREATE
        changes = {name: {"old": None, "new": value} for name, value in after.items()}
    else:
        action = AuditEntry.Action.UPDATE
        changes = field_diff(before, after)
        if not changes:
            return None
    return audit_record(
        actor=actor,
        action=action,
        target_type=target_type,
        target=target,
        changes=changes,
        note=note,
    )


def audit_delete(*, actor, target_type: str, target: models.Model, before: Mapping[str, Any]):
    return audit_record(
        actor=actor,
        action=AuditEntry.Action.DELETE,
        target_type=target_type,
        target=target,
        changes={name: {"old": value, "new": None} for name, value in before.items()},
    )
