"""Posting to the admin like a browser does: the form plus the inline formset's management data."""

import re

from django.urls import reverse

from reviewapp.review.models import Panel

PREFIX = "panel_lenses"


def panel_form_data(
    *,
    name: str,
    need,
    lenses=(),
    positions=None,
    panel: Panel | None = None,
    checkers=(),
    **fields,
) -> dict:
    """POST data for the panel add/change page with `lenses` as inline rows.

    On a change page the existing rows come first (their ids, marked for
    deletion when not wanted), then the new ones.
    """
    data = {
        "name": name,
        "description": fields.pop("description", ""),
        "need": need,
        "grounding_policy": fields.pop("grounding_policy", "reject"),
        "external_deadline_seconds": fields.pop("external_deadline_seconds", 3600),
        "reviews_needed": fields.pop("reviews_needed", 1),
        "audit_rate": fields.pop("audit_rate", 0),
        "review_deadline": fields.pop("review_deadline", ""),
        "on_deadline": fields.pop("on_deadline", "reject"),
        "deadline_reminder": fields.pop("deadline_reminder", ""),
        "checkers": [c.pk for c in checkers],
        "_save": "Save",
    }
    if fields.pop("active", True):
        data["active"] = "on"
    if fields.pop("requires_sign_off", False):
        data["requires_sign_off"] = "on"
    for flag in ("confirm_approve_fallback", "notify_with_text"):
        if fields.pop(flag, False):
            data[flag] = "on"
    assert not fields, fields
    positions = list(positions) if positions is not None else list(range(len(lenses)))
    existing = list(panel.panel_lenses.order_by("position")) if panel else []
    rows = []
    for pl in existing:
        rows.append(
            {
                "id": pl.pk,
                "panel": panel.pk,
                "lens": pl.lens_id,
                "position": pl.position,
                "DELETE": "on",
            }
        )
    # Reuse existing rows in order for the wanted lenses, delete the rest.
    for i, lens in enumerate(lenses):
        if i < len(existing):
            rows[i].update({"lens": lens.pk, "position": positions[i]})
            rows[i].pop("DELETE")
        else:
            row = {"lens": lens.pk, "position": positions[i]}
            if panel:
                row["panel"] = panel.pk
            rows.append(row)
    data.update(
        {
            f"{PREFIX}-TOTAL_FORMS": len(rows),
            f"{PREFIX}-INITIAL_FORMS": len(existing),
            f"{PREFIX}-MIN_NUM_FORMS": 0,
            f"{PREFIX}-MAX_NUM_FORMS": 1000,
        }
    )
    for i, row in enumerate(rows):
        for key, value in row.items():
            data[f"{PREFIX}-{i}-{key}"] = value
    return data


def external_lens_data(**overrides) -> dict:
    """The lens admin's form for an external lens named `outside`."""
    data = {
        "name": "outside",
        "description": "",
        "instructions": "",
        "backend": "external",
        "active": "on",
        "temperature": "0.0",
        "timeout_seconds": "60",
        "response_format": "json_schema",
        "max_concurrent_calls": "64",
        "calls_per_minute": "6000",
        "deadline_seconds": "240",
        "_save": "Save",
    }
    data.update(overrides)
    return data


def add_url(model: str) -> str:
    return reverse(f"admin:review_{model}_add")


def change_url(model: str, pk) -> str:
    return reverse(f"admin:review_{model}_change", args=[pk])


def errors_of(response) -> str:
    """The error text of an admin form response, whitespace collapsed."""
    html = response.content.decode()
    found = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', html, re.S)
    text = " ".join(re.sub(r"<[^>]+>", " ", chunk) for chunk in found)
    return re.sub(r"\s+", " ", text).replace("&#x27;", "'").replace("&quot;", '"').strip()
