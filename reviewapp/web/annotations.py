"""The adjudication card's claim marks, tags and "right for the wrong reason": form in, context out.

The form names a claim's mark `mark-<claim id>`; tags and lenses are
repeated `tags` and `wrong_reason` fields. What was chosen is echoed back on
a refusal or a claim, so nothing is lost (the same rule as the rationale).
"""

import json

from reviewapp.review.models import Claim, Decision, Judgement, Proposal, Tag
from reviewapp.review.services.annotations import MARKS

from .presenters import excerpt

MARK_PREFIX = "mark-"


def posted_annotations(post) -> dict:
    """What the card's form sent: marks as (claim id, mark) pairs, tag and lens names."""
    marks = []
    for key, value in post.items():
        if not key.startswith(MARK_PREFIX) or not value:
            continue
        raw = key[len(MARK_PREFIX) :]
        marks.append((int(raw) if raw.isdigit() else raw, value))
    return {
        "marks": marks,
        "tags": post.getlist("tags"),
        "wrong_reason": post.getlist("wrong_reason"),
    }


def annotation_form(proposal: Proposal, post=None) -> dict:
    """The card's marks section: every grounded claim, the tags on offer, the lenses; as posted."""
    posted = posted_annotations(post) if post is not None else {}
    chosen = {str(k): v for k, v in posted.get("marks", [])}
    claims = (
        Claim.objects.filter(judgement__proposal=proposal, dropped=False)
        .select_related("judgement")
        .order_by("judgement__lens_name", "position")
    )
    return {
        "mark_choices": MARKS,
        "mark_claims": [
            {
                "id": c.pk,
                "lens": c.judgement.lens_name,
                "assessment": c.assessment,
                "excerpt": excerpt(c.text if c.text is not None else c.cite, 120),
                "span": _span_key(c),
                "mark": chosen.get(str(c.pk), ""),
            }
            for c in claims
        ],
        "tags_offered": [
            {
                "name": t.name,
                "description": t.description,
                "chosen": t.name in posted.get("tags", []),
            }
            for t in Tag.objects.filter(active=True)
        ],
        "wrong_reason_lenses": [
            {
                "name": j.lens_name,
                "verdict": j.verdict,
                "chosen": j.lens_name in posted.get("wrong_reason", []),
            }
            for j in Judgement.objects.filter(proposal=proposal).order_by("lens_name")
        ],
    }


def _span_key(claim: Claim) -> str:
    """Which words a claim cites: claims of several lenses on the same words share it."""
    if claim.start_utf16 is None:
        return f"text:{claim.text if claim.text is not None else claim.cite}"
    return f"{claim.anchor_kind}:{claim.start_utf16}-{claim.end_utf16}"


def signed_annotations(decision: Decision) -> dict:
    """A decision's (or a review's) marks, tags and wrong-reason lenses, read from what it
    signed."""
    try:
        signed = json.loads(decision.payload)
    except ValueError:
        signed = {}
    if not isinstance(signed, dict):
        signed = {}
    found = {k: signed.get(k, []) for k in ("claims", "tags", "wrong_reason")}
    found["claims"] = marks_quoted(found["claims"])
    return found


def marks_quoted(marks: list) -> list[dict]:
    """Signed marks ({claim, lens, mark}) with the words each claim cites, to name it by."""
    marks = [m for m in marks if isinstance(m, dict)]
    ids = [m.get("claim") for m in marks if isinstance(m.get("claim"), int)]
    quotes = {
        pk: excerpt(text if text is not None else cite, 120)
        for pk, text, cite in Claim.objects.filter(pk__in=ids).values_list("pk", "text", "cite")
    }
    return [{**m, "quote": quotes.get(m.get("claim"), "")} for m in marks]


def reviews_compared(reviews: list) -> list[dict]:
    """The reviews' signed marks side by side: every claim any review marked, named by its
    words, with each review's mark and whether two reviews gave it different marks (those
    first). Sets `signed` (its marks, tags and lenses) on each review."""
    rows: dict[object, dict] = {}
    for i, review in enumerate(reviews):
        review.signed = signed_annotations(review)
        for m in review.signed["claims"]:
            row = rows.setdefault(
                m.get("claim"),
                {**m, "marks": [None] * len(reviews)},
            )
            row["marks"][i] = m.get("mark")
    for row in rows.values():
        row["differ"] = len({m for m in row["marks"] if m}) > 1
        row["cells"] = [
            {"reviewer": r.reviewer_name, "mark": m}
            for r, m in zip(reviews, row["marks"], strict=True)
        ]
    return sorted(rows.values(), key=lambda r: (not r["differ"], str(r["lens"]), str(r["claim"])))
