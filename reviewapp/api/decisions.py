"""Signed decisions and the public keys that verify them."""

from typing import Annotated

from django.shortcuts import get_object_or_404
from ninja import Query, Router

from reviewapp.review.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import Decision, SigningKey
from reviewapp.review.services.visibility import visible_q

from .auth import ApiAuth
from .schemas import DecisionOut, DecisionPageOut, KeyOut, ObjectId, PageSize, errors

router = Router(tags=["decisions"])

AfterId = Annotated[int, Query(ge=0, le=2**63 - 1)]


def public_keys_for(key_ids) -> dict[str, str]:
    """Trusted public keys only: a key that only the database knows is served as null."""
    trusted = public_keys_b64(trusted_keys())
    return {k: trusted[k] for k in set(key_ids) if k in trusted}


def decision_out(decision: Decision, public_keys: dict[str, str]) -> dict:
    """A decision as verifiable by itself: the signed bytes, signature and public key."""
    return {
        "id": decision.pk,
        "proposal": decision.proposal_id,
        "outcome": decision.outcome,
        "basis": decision.basis,
        "decided_by": decision.decided_by_name,
        "rationale": decision.rationale,
        "payload": decision.payload,
        "signature": decision.signature,
        "key_id": decision.key_id,
        "public_key": public_keys.get(decision.key_id),
        "prev_hash": decision.prev_hash,
        "hash": decision.hash,
    }


@router.get(
    "/decisions",
    auth=ApiAuth("read"),
    response={200: DecisionPageOut, **errors()},
    summary="Export decisions in chain order",
    description="Ascending id, starting after `after`; follow `next_after` until it is null. "
    "Only decisions on proposals this token may see.",
)
def decision_list(
    request,
    after: AfterId = 0,
    limit: PageSize = 100,
):
    visible = Decision.objects.filter(visible_q(request.auth.client, prefix="proposal__"))
    rows = list(visible.filter(pk__gt=after).order_by("pk")[: limit + 1])
    page = rows[:limit]
    keys = public_keys_for(d.key_id for d in page)
    return {
        "items": [decision_out(d, keys) for d in page],
        "next_after": page[-1].pk if len(rows) > limit else None,
    }


@router.get(
    "/decisions/{decision_id}",
    auth=ApiAuth("read"),
    response={200: DecisionOut, **errors(404)},
    summary="One signed decision",
)
def decision_detail(request, decision_id: ObjectId):
    decision = get_object_or_404(
        Decision.objects.filter(visible_q(request.auth.client, prefix="proposal__")),
        pk=decision_id,
    )
    return decision_out(decision, public_keys_for([decision.key_id]))


@router.get(
    "/keys",
    auth=ApiAuth("read"),
    response={200: list[KeyOut], **errors()},
    summary="Public signing keys (private keys never leave the server)",
    description="Only keys that are trust anchors (REVIEWAPP_TRUSTED_KEYS): a key row "
    "inserted into the database is never served.",
)
def key_list(request):
    trusted = public_keys_for(trusted_keys())
    rows = SigningKey.objects.filter(key_id__in=list(trusted)).order_by("created_at", "pk")
    return [
        row
        for row in rows.values("key_id", "public_key", "created_at", "retired_at")
        if trusted[row["key_id"]] == row["public_key"]
    ]
