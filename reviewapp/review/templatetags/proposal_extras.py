"""The guideline each lens judged a proposal by, for the proposal page."""

from django import template

from reviewapp.review.models import Lens

register = template.Library()


@register.simple_tag
def lens_guidelines(proposal) -> list[dict]:
    """One entry per lens of the proposal's panel snapshot, in panel order. One query.

    A lens row holds only its current text. When the lens changed after the
    proposal was judged (its version moved on), the entry says so rather than
    passing today's text off as the one the lens judged by.
    """
    entries = (proposal.panel_snapshot or {}).get("lenses", [])
    rows = Lens.objects.only("id", "instructions", "mandate", "backend", "version").in_bulk(
        [e["id"] for e in entries if "id" in e]
    )
    out = []
    for entry in entries:
        lens = rows.get(entry.get("id"))
        out.append(
            {
                "name": entry.get("name", ""),
                "version": entry.get("version"),
                "backend": entry.get("backend", ""),
                "instructions": lens.instructions if lens else "",
                "mandate": lens.mandate if lens else "",
                "current_version": lens.version if lens else None,
                "changed": lens is None or lens.version != entry.get("version"),
                "deleted": lens is None,
            }
        )
    return out
