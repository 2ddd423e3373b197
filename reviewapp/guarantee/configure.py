"""Setting a panel's guarantee: its target, its confidence, and where audits go."""

from django.db import transaction

from reviewapp.audit.services import audit_change, snapshot
from reviewapp.review.models import Panel

from .evidence import Change, guarantee_locked, standings_refresh
from .models import PanelGuarantee

SETTINGS = ("target", "confidence", "audit_focus")


def guarantee_configure(
    *, panel: Panel, target: float | None, confidence: float, audit_focus: str, actor
) -> list[Change]:
    """Store the settings (validated as every door validates them), record the change,
    and compute every pattern's standing again under them.

    Under the guarantee row's lock, so a label arriving meanwhile waits and is
    counted under the new settings; each pattern whose trust changes is
    announced once, as a label's would be.
    """
    with transaction.atomic():
        guarantee = guarantee_locked(panel.pk)
        before = snapshot(guarantee, SETTINGS)
        guarantee.target, guarantee.confidence, guarantee.audit_focus = (
            target,
            confidence,
            audit_focus,
        )
        guarantee.full_clean(exclude=["panel"])
        guarantee.save(update_fields=[*SETTINGS, "updated_at"])
        audit_change(
            actor=actor,
            target_type="panel",
            target=panel,
            before={f"guarantee {k}": v for k, v in before.items()},
            after={f"guarantee {k}": v for k, v in snapshot(guarantee, SETTINGS).items()},
        )
        if before == snapshot(guarantee, SETTINGS):
            return []
        return standings_refresh(guarantee=guarantee)


def guarantee_of(panel: Panel) -> PanelGuarantee:
    """The panel's guarantee as stored, or the default (off) without saving one."""
    return PanelGuarantee.objects.filter(panel=panel).first() or PanelGuarantee(panel=panel)
