"""Signed decisions and the public keys that verify them."""

from typing import Annotated

from django.shortcuts import get_object_or_404
from ninja import Query, Router

from reviewapp.ledger.keys import trusted_keys
from reviewapp.ledger.models import SigningKey
from reviewapp.review.models import Decision
from reviewapp.review.services.visibility import visible_q
from reviewapp.serializers import decision_out, public_keys_for

from .auth import ApiAuth
from .schemas import DecisionOut, DecisionPageOut, KeyOut, ObjectId, PageSize, errors

router = Router(tags=["decisions"])

AfterId = Annotated[int, Query(ge=0, le=2**63 - 1)]


@router.get(
    "/decisions",
    auth=ApiAuth("read"),
    response={200: DecisionPageOut, **errors()},
    summary="Export decisions in id order",
    description="Ascending id, starting after `after`; follow `next_after` until it is null. "
    "Only decisions on proposals this token may see. Their order in the ledger is their "
    "`ledger_index` (null for a decision signed moments ago, until it is sequenced).",
)
def decision_list(
    request,
    after: AfterId = 0,
    limit: PageSize = 100,
):
    visible = Decision.objects.filter(
        visible_q(request.auth.client, prefix="proposal__")
    ).select_related("ledger_entry")
    rows = list(
        visible.filter(pk__gt=after)
        .prefetch_related("escalation__reviews")
        .order_by("pk")[: limit + 1]
    )
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
        Decision.objects.filter(visible_q(request.auth.client, prefix="proposal__")).select_related(
            "ledger_entry"
        ),
        pk=decision_id,
    )
    return decision_out(decision, public_keys_for([decision.key_id]))


@router.get(
    "/keys",
    auth=None,
    response={200: list[KeyOut], **errors()},
    summary="Public signing keys (private keys never leave the server)",
    description="Public, as a transparency log's keys are: no token needed. Only keys that "
    "are trust anchors (REVIEWAPP_TRUSTED_KEYS): a key row inserted into the database is "
    "never served. Save the answer as a key file for `reviewapp-verify --public-key`; pin "
    "the keys you verify with rather than fetching them anew each time.",
)
def key_list(request):
    trusted = public_keys_for(trusted_keys())
    rows = SigningKey.objects.filter(key_id__in=list(trusted)).order_by("created_at", "pk")
    return [
        row
        for row in rows.values("key_id", "public_key", "created_at", "retired_at")
        if trusted[row["key_id"]] == row["public_key"]
    ]
