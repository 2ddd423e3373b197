"""The human escalation inbox, for reviewers and review clients."""

from django.http import Http404
from ninja import Router, Status
from ninja.errors import HttpError

from reviewapp.review.models import Escalation, LensFailure
from reviewapp.review.services.annotations import AnnotationError
from reviewapp.review.services.escalations import (
    AlreadyReviewed,
    ClaimHeldByOther,
    EscalationClosed,
    NeedsAPerson,
    NotAReconciler,
    ReviewUnverified,
    escalation_decide,
    escalation_review,
)
from reviewapp.review.services.visibility import visible_q
from reviewapp.serializers import (
    audit_out,
    decision_out,
    escalation_out,
    failures_by_proposal,
    public_keys_for,
)

from .auth import ApiAuth
from .cursors import keyset_page
from .schemas import (
    AuditIn,
    AuditOut,
    DecisionIn,
    DecisionOut,
    EscalationOut,
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
    # One query for every row's lens failures: the page costs the same whatever its size.
    failures = failures_by_proposal(e.proposal_id for e in rows)
    items = [escalation_out(e, failures.get(e.proposal_id, ())) for e in rows]
    return {"items": items, "next_cursor": next_cursor}


@router.get(
    "/escalations/{escalation_id}",
    auth=ApiAuth("read"),
    response={200: EscalationOut, **errors(404)},
    summary="One escalation, and why it was raised",
    description="404 for an escalation of a proposal this token may not see.",
)
def escalation_detail(request, escalation_id: ObjectId):
    escalation = (
        Escalation.objects.filter(visible_q(request.auth.client, prefix="proposal__"))
        .select_related("claimed_by")
        .filter(pk=escalation_id)
        .first()
    )
    if escalation is None:
        raise Http404("no such escalation")
    failures = LensFailure.objects.filter(proposal_id=escalation.proposal_id)
    return escalation_out(escalation, failures)


def _visible_reasons(caller, escalation_id: int) -> Escalation:
    """The escalation with only its reasons read, or 404 when the caller may not see it."""
    visible = Escalation.objects.filter(visible_q(caller.client, prefix="proposal__"))
    escalation = visible.filter(pk=escalation_id).only("reasons").first()
    if escalation is None:
        raise Http404("no such escalation")
    return escalation


@router.post(
    "/escalations/{escalation_id}/decision",
    auth=ApiAuth("review"),
    response={201: DecisionOut, 202: ReviewStatusOut, **errors(404, 409)},
    summary="Decide an escalation, or give one of the reviews it needs; all are signed",
    description="When the panel needs several reviews, a personal token's decision is that "
    "person's signed review: 202 `awaiting_reviews` until enough are in, then 201 with the "
    "decision if they agree or 202 `reconcile` if not (a reconciler then decides). "
    "409 if it is already decided, the caller already reviewed it, a reviewer holds a "
    "live claim on it, it is an audit (POST those to `/audit`), or a stored review no "
    "longer verifies as signed (nothing is decided on it); 403 for a token without "
    "a person where reviews are needed, or a non-reconciler on an escalation in reconcile. "
    "422 names any claim id, tag or lens in `claims`, `tags` or `wrong_reason` that does "
    "not fit this proposal.",
)
def escalation_decision_create(request, escalation_id: ObjectId, payload: DecisionIn):
    caller = request.auth
    escalation = _visible_reasons(caller, escalation_id)
    if escalation.is_audit:
        raise HttpError(
            409,
            "this escalation audits an automatic decision, which stands: "
            f"POST the verdict to /api/escalations/{escalation_id}/audit",
        )
    try:
        result = escalation_review(
            escalation_id=escalation_id,
            outcome=payload.outcome,
            rationale=payload.rationale,
            user=caller.user,
            decided_by_name=caller.name,
            marks=[(m.claim, m.mark) for m in payload.claims],
            tags=payload.tags,
            wrong_reason=payload.wrong_reason,
        )
    except AnnotationError as exc:
        raise HttpError(422, str(exc)) from exc
    except Escalation.DoesNotExist as exc:
        raise Http404("no such escalation") from exc
    except (EscalationClosed, ClaimHeldByOther, AlreadyReviewed, ReviewUnverified) as exc:
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


@router.post(
    "/escalations/{escalation_id}/audit",
    auth=ApiAuth("review"),
    response={201: AuditOut, **errors(404, 409)},
    summary="Give an audit verdict on an automatic decision; the verdict is signed",
    description="Only for escalations with reason `audit`. The audited decision stands; a "
    "verdict that differs from it disputes it (`decision.disputed`). 409 if the audit is "
    "already answered, a reviewer holds a live claim on it, or it is not an audit.",
)
def escalation_audit_create(request, escalation_id: ObjectId, payload: AuditIn):
    caller = request.auth
    escalation = _visible_reasons(caller, escalation_id)
    if not escalation.is_audit:
        raise HttpError(
            409,
            f"not an audit: decide it with POST /api/escalations/{escalation_id}/decision",
        )
    try:
        audit = escalation_decide(
            escalation_id=escalation_id,
            outcome=payload.outcome,
            rationale=payload.rationale,
            user=caller.user,
            decided_by_name=caller.name,
        )
    except (EscalationClosed, ClaimHeldByOther) as exc:
        raise HttpError(409, str(exc)) from exc
    return Status(201, audit_out(audit))
