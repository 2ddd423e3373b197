"""The human escalation inbox, for reviewers and review clients."""

from django.http import Http404
from ninja import Router, Status
from ninja.errors import HttpError

from reviewapp.review.models import Escalation
from reviewapp.review.services.escalations import (
    AlreadyReviewed,
    ClaimHeldByOther,
    EscalationClosed,
    NeedsAPerson,
    NotAReconciler,
    escalation_review,
)
from reviewapp.review.services.visibility import visible_q
from reviewapp.serializers import decision_out, public_keys_for

from .auth import ApiAuth
from .cursors import keyset_page
from .schemas import (
    DecisionIn,
    DecisionOut,
    EscalationPageOut,
    EscalationStatus,
    ObjectId,
    PageSize,
    QueryText,
    ReviewStatusOut,
    errors,
)

router = Router(tags=["escalations"])


@router.get(
    "/escalations",
    auth=ApiAuth("read"),
    response={200: EscalationPageOut, **errors()},
    summary="List escalations, newest first",
    description="Only escalations of proposals this token may see.",
)
def escalation_list(
    request,
    status: EscalationStatus | None = None,
    cursor: QueryText | None = None,
    limit: PageSize = 50,
):
    escalations = Escalation.objects.filter(
        visible_q(request.auth.client, prefix="proposal__")
    ).select_related("claimed_by")
    if status:
        escalations = escalations.filter(status=status)
    rows, next_cursor = keyset_page(escalations, cursor=cursor, limit=limit)
    items = [
        {
            "id": e.pk,
            "proposal": e.proposal_id,
            "status": e.status,
            "reasons": e.reasons,
            "claimed_by": e.claimed_by.get_username() if e.claimed_by else None,
            "created_at": e.created_at,
        }
        for e in rows
    ]
    return {"items": items, "next_cursor": next_cursor}


@router.post(
    "/escalations/{escalation_id}/decision",
    auth=ApiAuth("review"),
    response={201: DecisionOut, 202: ReviewStatusOut, **errors(404, 409)},
    summary="Decide an escalation, or give one of the reviews it needs; all are signed",
    description="When the panel needs several reviews, a personal token's decision is that "
    "person's signed review: 202 `awaiting_reviews` until enough are in, then 201 with the "
    "decision if they agree or 202 `reconcile` if not (a reconciler then decides). "
    "409 if it is already decided, the caller already reviewed it, or a reviewer holds a "
    "live claim on it; 403 for a token without a person where reviews are needed, or a "
    "non-reconciler on an escalation in reconcile.",
)
def escalation_decision_create(request, escalation_id: ObjectId, payload: DecisionIn):
    caller = request.auth
    visible = Escalation.objects.filter(visible_q(caller.client, prefix="proposal__"))
    if not visible.filter(pk=escalation_id).exists():
        raise Http404("no such escalation")
    try:
        result = escalation_review(
            escalation_id=escalation_id,
            outcome=payload.outcome,
            rationale=payload.rationale,
            user=caller.user,
            decided_by_name=caller.name,
        )
    except Escalation.DoesNotExist as exc:
        raise Http404("no such escalation") from exc
    except (EscalationClosed, ClaimHeldByOther, AlreadyReviewed) as exc:
        raise HttpError(409, str(exc)) from exc
    except (NotAReconciler, NeedsAPerson) as exc:
        raise HttpError(403, str(exc)) from exc
    decision = result.decision
    if decision is None:
        return Status(
            202,
            {
                "status": result.status,
                "reviews": result.reviews,
                "reviews_needed": result.reviews_needed,
            },
        )
    return Status(201, decision_out(decision, public_keys_for([decision.key_id])))
