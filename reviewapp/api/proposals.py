"""Submitting proposals, reading them back, and external lenses' judgements."""

from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Router, Status
from ninja.errors import HttpError

from reviewapp.core.cite import ClaimInput
from reviewapp.review.services.judgements import (
    AlreadyJudged,
    JudgementForbidden,
    JudgementRefused,
    LensGone,
    external_judgement_submit,
)
from reviewapp.review.services.proposals import (
    PanelUnavailable,
    SubmissionConflict,
    proposal_submit,
)
from reviewapp.review.services.visibility import proposals_visible_to
from reviewapp.serializers import judgement_out, proposal_out, proposals_in_detail

from .auth import ApiAuth
from .cursors import keyset_page
from .parsing import BODY_LOC, invalid
from .schemas import (
    JudgementIn,
    JudgementOut,
    ObjectId,
    PageSize,
    ProposalIn,
    ProposalOut,
    ProposalPageOut,
    ProposalStatus,
    QueryText,
    SubmittedOut,
    errors,
)

router = Router(tags=["proposals"])


def _url(proposal_id: int) -> str:
    return reverse("api:proposal_detail", args=[proposal_id])


@router.post(
    "/proposals",
    auth=ApiAuth("submit"),
    response={202: SubmittedOut, 200: SubmittedOut, **errors(409)},
    summary="Submit a proposal for judgement",
    description="Idempotent per client on `external_ref`: the same body again answers 200 "
    "with the first proposal; a different body under the same reference is a 409.",
)
def proposal_create(request, payload: ProposalIn):
    try:
        proposal, created = proposal_submit(
            panel_name=payload.panel,
            content=payload.content,
            thought_process=payload.thought_process,
            title=payload.title,
            external_ref=payload.external_ref,
            metadata=payload.metadata,
            client=request.auth.client,
        )
    except PanelUnavailable as exc:
        raise invalid(
            [*BODY_LOC, "panel"], f"no active, valid panel: {exc}", "panel_unavailable"
        ) from exc
    except SubmissionConflict as exc:
        raise HttpError(409, str(exc)) from exc
    body = {"id": proposal.pk, "status": proposal.status, "url": _url(proposal.pk)}
    return Status(202 if created else 200, body)


@router.get(
    "/proposals",
    auth=ApiAuth("read"),
    response={200: ProposalPageOut, **errors()},
    summary="List proposals, newest first",
    description="A token sees the proposals its client submitted and those an external lens "
    "binds it to judge; `read:all` (and a browser session) sees every proposal.",
)
def proposal_list(
    request,
    status: ProposalStatus | None = None,
    panel: QueryText | None = None,
    cursor: QueryText | None = None,
    limit: PageSize = 50,
):
    proposals = (
        proposals_visible_to(request.auth.client)
        .select_related("panel")
        .only("id", "status", "title", "content_sha256", "created_at", "panel__name")
    )
    if status:
        proposals = proposals.filter(status=status)
    if panel:
        proposals = proposals.filter(panel__name=panel)
    rows, next_cursor = keyset_page(proposals, cursor=cursor, limit=limit)
    items = [
        {
            "id": p.pk,
            "status": p.status,
            "panel": p.panel.name,
            "title": p.title,
            "content_sha256": p.content_sha256,
            "created_at": p.created_at,
            "url": _url(p.pk),
        }
        for p in rows
    ]
    return {"items": items, "next_cursor": next_cursor}


@router.get(
    "/proposals/{proposal_id}",
    auth=ApiAuth("read"),
    response={200: ProposalOut, **errors(404)},
    url_name="proposal_detail",
    summary="A proposal with its judgements, evidence, escalation and decision",
    description="404 for a proposal this token may not see, exactly as for one that does "
    "not exist.",
)
def proposal_detail(request, proposal_id: ObjectId):
    return proposal_out(get_object_or_404(proposals_in_detail(request.auth.client), pk=proposal_id))


@router.post(
    "/proposals/{proposal_id}/judgements",
    auth=ApiAuth("judge"),
    response={201: JudgementOut, **errors(404, 409)},
    summary="Submit an external lens's judgement",
    description="Only a lens on the proposal's panel with the `external` backend may judge "
    "here (422 otherwise), once (409 after that), and only a client that lens names (403 "
    "otherwise, also for a client judging a proposal it submitted unless the lens allows "
    "it). A proposal this token may not see is a 404. Cites are grounded like any lens's.",
)
def judgement_create(request, proposal_id: ObjectId, payload: JudgementIn):
    client = request.auth.client
    proposal = get_object_or_404(proposals_visible_to(client), pk=proposal_id)
    try:
        judgement = external_judgement_submit(
            proposal=proposal,
            lens_name=payload.lens,
            verdict=payload.verdict,
            rationale=payload.rationale,
            claims=[
                ClaimInput(cite=c.cite, assessment=c.assessment, claim_id=c.claim_id)
                for c in payload.claims
            ],
            client=client,
        )
    except JudgementRefused as exc:
        raise invalid([*BODY_LOC, "lens"], str(exc), "lens_refused") from exc
    except JudgementForbidden as exc:
        raise HttpError(403, str(exc)) from exc
    except (AlreadyJudged, LensGone) as exc:
        raise HttpError(409, str(exc)) from exc
    return Status(201, judgement_out(judgement))
