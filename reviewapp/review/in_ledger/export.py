"""What the ledger's export carries besides its entries: the reviews a decision rests on.

Reviews are signed records outside the log; each travels on a line of its
own before the decision that names it, so the offline verifier checks the
decision against them (``reviewapp.ledger-export/2``).
"""

from __future__ import annotations

import json

from reviewapp.ledger.models import LedgerEntry

from ..models import Decision, Review


def review_json(review: Review) -> dict:
    """A review as exported: its signed bytes, and the columns that restate them."""
    return {
        "reviewer": review.reviewer_name,
        "outcome": review.outcome,
        "payload": review.payload,
        "signature": review.signature,
        "key_id": review.key_id,
    }


def _names_reviews(entry: LedgerEntry) -> bool:
    # Most decisions rest on no reviews: only those that might are parsed.
    if entry.kind != LedgerEntry.Kind.DECISION:
        return False
    payload = json.loads(entry.entry)["payload"]
    return '"reviews":' in payload and isinstance(json.loads(payload).get("reviews"), list)


def reviews_before_decisions(entries: list[LedgerEntry]) -> dict[int, list[dict]]:
    """For each decision entry resting on reviews, every review of its escalation, as
    stored (what was changed or removed is exported as it is now: finding it is the
    verifier's job)."""
    naming = [entry for entry in entries if _names_reviews(entry)]
    if not naming:
        return {}
    escalation_of = dict(
        Decision.objects.filter(pk__in=[entry.decision_id for entry in naming]).values_list(
            "pk", "escalation_id"
        )
    )
    reviews: dict[int, list[dict]] = {}
    for review in Review.objects.filter(escalation_id__in=set(escalation_of.values())).order_by(
        "id"
    ):
        reviews.setdefault(review.escalation_id, []).append({"review": review_json(review)})
    return {
        entry.pk: reviews.get(escalation_of.get(entry.decision_id), []) for entry in naming
    }
