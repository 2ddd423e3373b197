"""The proposal page and its adjudication card: claim, keep the claim alive, decide, go on.

Nothing a reviewer typed is lost on a refusal: htmx gets the card back with
the rationale still in it (and a 4xx status saying why), a plain form post
gets the whole page re-rendered the same way instead of a redirect that
would drop the text. The browser also keeps a draft per escalation (app.js).
"""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError
from django.db.models import Case, Value, When
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from reviewapp.calibration.queries import drifting_judges
from reviewapp.review.in_ledger.status import ledger_position_for_decision
from reviewapp.review.models import ClaimMark, Decision, DecisionAudit, Escalation, Proposal
from reviewapp.review.models.escalation import claim_ttl
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.services.annotations import AnnotationError
from reviewapp.review.services.escalations import (
    AlreadyReviewed,
    ClaimHeldByOther,
    DeadlinePassed,
    EscalationClosed,
    ReviewUnverified,
    deadline_refusal,
    escalation_claim,
    escalation_claim_extend,
    escalation_release,
    escalation_review,
)

from .annotations import (
    annotation_form,
    posted_annotations,
    reviews_compared,
    signed_annotations,
)
from .presenters import (
    escalation_reasons,
    proposal_view,
    reason_badges,
    tally_outcome,
    tally_text,
)
from .queue import queue_next, queue_params

# While the reviewer types, the page renews the claim at most this often.
HEARTBEAT_SECONDS = 60


def _current_escalation(proposal: Proposal) -> Escalation | None:
    """The unresolved escalation if there is one, else the latest."""
    return (
        Escalation.objects.filter(proposal=proposal)
        .select_related("claimed_by", "assigned_user", "assigned_group")
        .order_by(
            # Unresolved first, then newest.
            Case(When(status=Escalation.Status.RESOLVED, then=Value(1)), default=Value(0)),
            "-created_at",
            "-id",
        )
        .first()
    )


def _queue(request) -> str:
    """The inbox filters the reviewer works under, as a query string (see queue.py)."""
    raw = request.POST.get("queue") if request.method == "POST" else request.GET.get("queue")
    return queue_params(raw or "").urlencode()


def _next_info(request, escalation: Escalation | None, queue: str) -> dict | None:
    if escalation is None or not escalation.is_resolved:
        return None
    following, left = queue_next(queue_params(queue), user=request.user, after_id=escalation.pk)
    return {
        "left": left.label,
        "any_left": left.n > 0,
        "url": reverse("escalation_next")
        + "?"
        + urlencode({"after": escalation.pk, "queue": queue}),
        "exists": following is not None,
    }


def _adjudication_context(
    request, proposal, *, error: str = "", notice: str = "", draft: str = "", focus: str = ""
) -> dict:
    escalation = _current_escalation(proposal)
    decision = Decision.objects.filter(proposal=proposal).first()
    queue = _queue(request)
    auditing = escalation is not None and escalation.is_audit and not escalation.is_resolved
    deciding = escalation is not None and decision is None
    # What was chosen in the card comes back with it, like the rationale.
    post = request.POST if request.method == "POST" else None
    return {
        **(annotation_form(proposal, post) if deciding else {}),
        "annotations": signed_annotations(decision) if decision else None,
        "auditing": auditing,
        "decision_audit": DecisionAudit.objects.filter(decision=decision).first()
        if decision
        else None,
        "proposal": proposal,
        "escalation": escalation,
        **_reviews_context(escalation, request.user),
        "escalation_badges": reason_badges(escalation.reasons) if escalation else [],
        "escalation_reasons": escalation_reasons(escalation, proposal.tally) if escalation else [],
        "claim": escalation.standing(request.user) if escalation else None,
        "decision": decision,
        "ledger_position": ledger_position_for_decision(decision) if decision else None,
        "claim_ttl_minutes": int(claim_ttl().total_seconds() // 60),
        "heartbeat_seconds": HEARTBEAT_SECONDS,
        "adjudication_error": error,
        "adjudication_notice": notice,
        "draft": draft,
        "focus": focus or ("message" if error else ""),
        "queue": queue,
        "next": _next_info(request, escalation, queue) if decision else None,
    }


def _reviews_context(escalation: Escalation | None, user) -> dict:
    """The reviews of an escalation that needs several: counted always, shown when not blind."""
    if escalation is None or escalation.reviews_needed <= 1:
        return {"reviews_needed": 1}
    reviews = list(escalation.reviews.order_by("id"))
    shown = escalation.shows_reviews_to(user)
    return {
        "reviews_needed": escalation.reviews_needed,
        "reviews_count": len(reviews),
        "reviews": reviews if shown else None,
        "reviews_marks": reviews_compared(reviews) if shown else [],
    }


def _proposal_page(request, proposal: Proposal, *, status: int = 200, **adjudication):
    judgements = list(proposal.judgements.prefetch_related("claims").order_by("id"))
    failures = list(proposal.lens_failures.order_by("id"))
    evidence = list(proposal.evidence.order_by("checker_name"))
    marks = dict(
        ClaimMark.objects.filter(decision__proposal=proposal).values_list("claim_id", "mark")
    )
    context = {
        **_adjudication_context(request, proposal, **adjudication),
        "view": proposal_view(proposal, judgements, failures, marks),
        "evidence": evidence,
        "tally_text": tally_text(proposal.tally),
        "tally_outcome": tally_outcome(proposal.tally),
        "running": not proposal.is_final,
        "poll_seconds": settings.REVIEWAPP_PROGRESS_POLL_SECONDS,
        "progress": _progress(proposal, judgements, failures),
        "drifting_judges": drifting_judges(judgements),
    }
    return render(request, "web/proposal_detail.html", context, status=status)


@require_GET
@reviewer_required
def proposal_detail(request, pk: int):
    proposal = get_object_or_404(Proposal.objects.select_related("panel", "client"), pk=pk)
    return _proposal_page(request, proposal)


def _progress(proposal: Proposal, judgements, failures) -> dict:
    answered = {j.lens_name: j.verdict for j in judgements}
    answered.update({f.lens_name: "failed" for f in failures})
    lenses = [
        {"name": entry["name"], "state": answered.get(entry["name"], "waiting")}
        for entry in (proposal.panel_snapshot or {}).get("lenses", [])
    ]
    return {
        "answered": proposal.lenses_answered,
        "asked": proposal.lenses_asked,
        "lenses": lenses,
        "status": proposal.status,
    }


@require_GET
@vary_on_headers("HX-Request")  # once final: htmx is told to refresh, a browser redirected
@reviewer_required
def proposal_progress(request, pk: int):
    """The live progress indicator; once the proposal is final the page reloads itself."""
    proposal = get_object_or_404(Proposal.objects.defer("content", "thought_process"), pk=pk)
    if proposal.is_final:
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"
            return response
        return redirect("proposal_detail", pk=pk)
    judgements = list(proposal.judgements.only("lens_name", "verdict"))
    failures = list(proposal.lens_failures.only("lens_name"))
    return render(
        request,
        "web/proposal_detail.html#progress",
        {
            "proposal": proposal,
            "progress": _progress(proposal, judgements, failures),
            "poll_seconds": settings.REVIEWAPP_PROGRESS_POLL_SECONDS,
            "running": True,
        },
    )


# --- adjudication ---------------------------------------------------------------


def _page_url(escalation: Escalation, queue: str = "") -> str:
    query = "?" + urlencode({"queue": queue}) if queue else ""
    return reverse("proposal_detail", args=[escalation.proposal_id]) + query + "#adjudication"


def _refused(request, escalation: Escalation, error: str, *, status: int = 409):
    """A refusal, shown in the card with whatever was typed still in the box."""
    draft = request.POST.get("rationale", "")
    if request.htmx:
        proposal = Proposal.objects.defer("content", "thought_process").get(
            pk=escalation.proposal_id
        )
        return render(
            request,
            "web/proposal_detail.html#card_update",
            _adjudication_context(request, proposal, error=error, draft=draft),
            status=status,
        )
    proposal = Proposal.objects.select_related("panel", "client").get(pk=escalation.proposal_id)
    return _proposal_page(request, proposal, status=status, error=error, draft=draft)


def _done(request, escalation: Escalation, notice: str, *, focus: str = ""):
    """Success: htmx gets the card and status again; a plain post is redirected (PRG)."""
    if request.htmx:
        proposal = Proposal.objects.defer("content", "thought_process").get(
            pk=escalation.proposal_id
        )
        return render(
            request,
            "web/proposal_detail.html#card_update",
            _adjudication_context(
                request,
                proposal,
                notice=notice,
                draft=request.POST.get("rationale", ""),
                focus=focus,
            ),
        )
    messages.success(request, notice)
    return redirect(_page_url(escalation, _queue(request)))


@require_POST
@reviewer_required
def escalation_claim_view(request, pk: int):
    escalation = get_object_or_404(Escalation, pk=pk)
    try:
        escalation_claim(escalation_id=escalation.pk, user=request.user)
    except ClaimHeldByOther as exc:
        return _refused(request, escalation, f"Already claimed by {exc.holder}. They hold it now.")
    except DeadlinePassed as exc:
        return _refused(request, escalation, _sentence(exc), status=409)
    except EscalationClosed:
        return _refused(request, escalation, "This escalation is already decided.")
    except AlreadyReviewed:
        return _refused(request, escalation, "You already reviewed this escalation.")
    return _done(request, escalation, "Claimed.", focus="rationale")


@require_POST
@reviewer_required
def escalation_release_view(request, pk: int):
    escalation = get_object_or_404(Escalation, pk=pk)
    if escalation_release(escalation_id=escalation.pk, user=request.user):
        return _done(request, escalation, "Claim released.")
    return _refused(request, escalation, "You do not hold a claim on this escalation.")


@require_POST
@reviewer_required
def escalation_heartbeat_view(request, pk: int):
    """The reviewer is still working: renew their claim, or say it is gone (JSON for app.js)."""
    escalation = get_object_or_404(Escalation.objects.select_related("claimed_by"), pk=pk)
    expires_at = escalation_claim_extend(escalation_id=escalation.pk, user=request.user)
    if expires_at is not None:
        return JsonResponse({"held": True, "expires_at": expires_at.isoformat()})
    escalation.refresh_from_db()
    state = escalation.standing(request.user)
    if state.resolved:
        message = "This escalation has been decided."
    elif state.live:
        message = f"{state.holder} holds this escalation now."
    else:
        message = "Your claim has lapsed or was released."
    return JsonResponse(
        {"held": False, "message": message + " Your draft is kept in this browser."}, status=409
    )


@require_POST
@reviewer_required
def escalation_decide_view(request, pk: int):
    escalation = get_object_or_404(Escalation.objects.select_related("claimed_by"), pk=pk)
    outcome = request.POST.get("outcome", "")
    rationale = request.POST.get("rationale", "")
    if outcome not in Decision.Outcome.values:
        return _refused(request, escalation, "Choose approve or reject.", status=400)
    if not rationale.strip():
        return _refused(request, escalation, "A rationale is required to decide.", status=400)
    state = escalation.standing(request.user)
    if state.resolved:
        return _refused(request, escalation, "This escalation is already decided.")
    if state.past_deadline:
        # What they wrote stays in the form (`_refused` renders it back).
        return _refused(request, escalation, _sentence(deadline_refusal(escalation)), status=409)
    if not state.can_decide:
        error, status = _why_not_yours(state)
        return _refused(request, escalation, error, status=status)
    try:
        result = escalation_review(
            escalation_id=escalation.pk,
            outcome=outcome,
            rationale=rationale.strip(),
            user=request.user,
            decided_by_name=request.user.get_username(),
            **posted_annotations(request.POST),
        )
    except ClaimHeldByOther as exc:
        return _refused(request, escalation, f"Claimed by {exc.holder}: only they can decide it.")
    except DeadlinePassed as exc:
        # What they wrote stays in the form (`_refused` renders it back).
        return _refused(request, escalation, _sentence(exc), status=409)
    except (EscalationClosed, IntegrityError):
        return _refused(request, escalation, "This escalation is already decided.")
    except AlreadyReviewed:
        return _refused(request, escalation, "You already reviewed this escalation.")
    except ReviewUnverified as exc:
        return _refused(request, escalation, str(exc), status=409)
    except PermissionDenied as exc:
        return _refused(request, escalation, str(exc).capitalize() + ".", status=403)
    except AnnotationError as exc:
        message = str(exc)
        return _refused(request, escalation, message[0].upper() + message[1:] + ".", status=422)
    except ValueError as exc:
        return _refused(request, escalation, str(exc).capitalize() + ".", status=400)
    if result.status == "awaiting_reviews":
        notice = (
            f"Review signed: {outcome}. {result.reviews} of {result.reviews_needed} reviews are in."
        )
        return _done(request, escalation, notice)
    if result.status == "reconcile":
        return _done(
            request, escalation, "Review signed. The reviews disagree: a reconciler decides."
        )
    notice = f"Decision signed: {outcome}."
    signed = result.decision
    if isinstance(signed, DecisionAudit):
        notice = f"Audit verdict signed: {outcome}." + (
            "" if signed.agrees else " It disputes the automatic decision, which stands."
        )
    if request.POST.get("then") == "next":
        return _go_next(request, escalation, notice)
    return _done(request, escalation, notice)


def _why_not_yours(state) -> tuple[str, int]:
    """Why this reviewer may not decide now, in words, and the status that says so."""
    if state.reconcile:
        if state.may_reconcile:
            return "You gave one of the disagreeing reviews: another reconciler decides.", 403
        return "The reviewers disagree: only a member of the reconcilers group can decide.", 403
    if state.several and state.reviewed_by_me:
        return "You already reviewed this escalation.", 409
    if state.several:
        return f"Every place left is held by {', '.join(state.holders)}: they review it.", 409
    if state.live:
        return f"Claimed by {state.holder}: only they can decide it.", 409
    return (
        "You do not hold this escalation (never claimed, lapsed or released):"
        " claim it, then decide.",
        409,
    )


def _go_next(request, escalation: Escalation, notice: str):
    """Decide & next: straight to the next escalation in the queue, the notice going along."""
    queue = _queue(request)
    following, left = queue_next(queue_params(queue), user=request.user, after_id=escalation.pk)
    if following is None:
        return _done(request, escalation, notice + " That was the last one in this queue.")
    messages.success(
        request, f"{notice[:-1]} on #{escalation.proposal_id}. {left.label} left in this queue."
    )
    url = _page_url(following, queue)
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@require_GET
@reviewer_required
def escalation_next_view(request):
    """The next escalation under the inbox filters in `queue`, or the inbox when none is left."""
    queue = _queue(request)
    try:
        after_id = int(request.GET.get("after", ""))
    except ValueError:
        after_id = None
    following, _ = queue_next(queue_params(queue), user=request.user, after_id=after_id)
    if following is None:
        messages.info(request, "Nothing left in this queue.")
        return redirect(reverse("inbox") + ("?" + queue if queue else ""))
    return redirect(_page_url(following, queue))


def _sentence(exc: Exception) -> str:
    text = str(exc)
    return text[0].upper() + text[1:]
