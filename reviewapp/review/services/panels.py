"""Configuring panels: quorum refusals apply before anything is written."""

from django.core.exceptions import ValidationError
from django.db import transaction

from reviewapp.core.quorum import Quorum, QuorumError

from .. import events
from ..models import CheckerConfig, Lens, Panel, PanelLens
from ..models.panel import MAX_PRIORITY, MAX_REVIEWS_NEEDED


def panel_quorum_error(*, need: int, lenses: list[Lens]) -> str | None:
    """The core's refusal of this panel shape, in its own words, or None."""
    try:
        Quorum(need, [lens.name for lens in lenses])
    except QuorumError as exc:
        return str(exc)
    return None


def _refuse_bad_settings(*, need, lenses, reviews_needed, priority, audit_rate) -> None:
    """A ValidationError naming the field, for what `core.quorum` or the ranges refuse."""
    refusal = panel_quorum_error(need=need, lenses=lenses)
    if refusal:
        raise ValidationError({"need": refusal})
    if not 1 <= reviews_needed <= MAX_REVIEWS_NEEDED:
        raise ValidationError(
            {"reviews_needed": f"reviews_needed must be 1 to {MAX_REVIEWS_NEEDED}"}
        )
    if priority is not None and not -MAX_PRIORITY <= priority <= MAX_PRIORITY:
        raise ValidationError(
            {"priority": f"the priority is a whole number from {-MAX_PRIORITY} to {MAX_PRIORITY}"}
        )
    if audit_rate is not None and not 0 <= audit_rate <= 100:
        raise ValidationError({"audit_rate": "the audit rate is a percentage, 0 to 100"})


def _members_set(panel: Panel, lenses: list[Lens], checkers) -> None:
    """The panel's lenses, in order, and its checkers, as given."""
    panel.panel_lenses.all().delete()
    PanelLens.objects.bulk_create(
        PanelLens(panel=panel, lens=lens, position=i) for i, lens in enumerate(lenses)
    )
    panel.checkers.set(checkers)


@transaction.atomic
def panel_configure(
    *,
    name: str,
    need: int,
    lenses: list[Lens],
    checkers: list[CheckerConfig] = (),
    description: str = "",
    grounding_policy: str = "reject",
    requires_sign_off: bool = False,
    external_deadline_seconds: int = 3600,
    reviews_needed: int = 1,
    audit_rate: int | None = None,
    priority: int | None = None,
    by=None,
) -> Panel:
    """Create or update a panel; refuses what `core.quorum` refuses, writing nothing.

    `audit_rate` (percent of automatic decisions audited) and `priority` (the
    inbox's priority order) are kept as they are when None; neither changes
    how proposals are judged, so no new version. A priority change is audited
    with `by` as its actor (None: "system").
    """
    _refuse_bad_settings(
        need=need,
        lenses=lenses,
        reviews_needed=reviews_needed,
        priority=priority,
        audit_rate=audit_rate,
    )
    panel = Panel.objects.select_for_update().filter(name=name).first() or Panel(name=name)
    changed = panel.pk is None or (
        panel.need != need
        or panel.grounding_policy != grounding_policy
        or panel.requires_sign_off != requires_sign_off
        or panel.external_deadline_seconds != external_deadline_seconds
        or [pl.lens_id for pl in panel.panel_lenses.order_by("position")]
        != [lens.pk for lens in lenses]
        or set(panel.checkers.values_list("pk", flat=True)) != {c.pk for c in checkers}
    )
    panel.description = description
    panel.need = need
    panel.grounding_policy = grounding_policy
    panel.requires_sign_off = requires_sign_off
    panel.external_deadline_seconds = external_deadline_seconds
    panel.reviews_needed = reviews_needed
    if audit_rate is not None:
        panel.audit_rate = audit_rate
    old_priority = panel.priority if panel.pk else None
    if priority is not None:
        panel.priority = priority
    if changed and panel.pk:
        panel.version += 1
    panel.save()
    _members_set(panel, lenses, checkers)
    if old_priority is not None and old_priority != panel.priority:  # a change only
        events.panel_priority_changed.send(sender=Panel, panel=panel, by=by, old=old_priority)
    return panel
