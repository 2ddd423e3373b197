"""Panel state for versioning and audit, and writing a panel's ordered lenses.

`panel_configure` keys panels by name; the admin edits a panel in place
(renames included), so it saves through `panel_save_lenses` and
`panel_bump_version_if_changed` inside the admin's transaction instead, with
the same rules: the quorum is re-checked before the lenses are written, and
any change to what the panel judges with bumps its version.
"""

from django.core.exceptions import ValidationError
from django.db.models import F

from ..models import Lens, Panel, PanelLens
from .panels import panel_quorum_error

# Changing any of these changes how a proposal is judged (description does not).
PANEL_VERSIONED_FIELDS = (
    "name",
    "need",
    "grounding_policy",
    "requires_sign_off",
    "external_deadline_seconds",
    "active",
)


def panel_state(panel: Panel) -> dict:
    """The panel as stored: fields, ordered lens names, checker names, version."""
    stored = Panel.objects.get(pk=panel.pk)
    return {
        **{name: getattr(stored, name) for name in PANEL_VERSIONED_FIELDS},
        "description": stored.description,
        "audit_rate": stored.audit_rate,
        "priority": stored.priority,
        "lenses": [
            name
            for name in PanelLens.objects.filter(panel=stored)
            .order_by("position", "id")
            .values_list("lens__name", flat=True)
        ],
        "lens_ids": list(
            PanelLens.objects.filter(panel=stored)
            .order_by("position", "id")
            .values_list("lens_id", flat=True)
        ),
        "checkers": sorted(stored.checkers.values_list("name", flat=True)),
        "checker_ids": sorted(stored.checkers.values_list("pk", flat=True)),
        "version": stored.version,
    }


def versioned_part(state: dict) -> dict:
    return {
        k: v for k, v in state.items() if k not in ("description", "version", "lenses", "checkers")
    }


def audited_part(state: dict) -> dict:
    return {k: v for k, v in state.items() if k not in ("lens_ids", "checker_ids")}


def panel_save_lenses(panel: Panel, lenses: list[Lens]) -> None:
    """Replace the panel's lenses with `lenses`, in order; refuses what the quorum refuses."""
    refusal = panel_quorum_error(need=panel.need, lenses=lenses)
    if refusal:
        raise ValidationError({"need": refusal})
    PanelLens.objects.filter(panel=panel).delete()
    PanelLens.objects.bulk_create(
        PanelLens(panel=panel, lens=lens, position=i) for i, lens in enumerate(lenses)
    )


def panel_bump_version_if_changed(panel: Panel, before: dict | None) -> bool:
    """Bump the version when what the panel judges with differs from `before`."""
    if before is None:
        return False
    after = panel_state(panel)
    if versioned_part(before) == versioned_part(after):
        return False
    Panel.objects.filter(pk=panel.pk).update(version=F("version") + 1)
    panel.refresh_from_db(fields=["version"])
    return True
