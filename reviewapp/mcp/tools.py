"""What each MCP tool does against the database: plain functions, run by `db.in_db`.

They apply the REST API's rules through the same services: a proposal the
caller may not see is "not found" exactly like one that does not exist, and a
service's refusal comes back as a tool error saying why.
"""

import json

from django.urls import reverse
from mcp.server.mcpserver.exceptions import ToolError

# The offline verifier's check of one decision as the API serves it, and of its content.
from reviewapp_client.verify.export import check_api_decisions
from reviewapp_client.verify.ledger import content_problem

from reviewapp.core.cite import ClaimInput
from reviewapp.ledger.keys import trusted_keys
from reviewapp.review.access import may_sign_decisions, may_sign_decisions_many
from reviewapp.review.models import ApiClient, AwaitedLens, Escalation, Lens, Proposal
from reviewapp.review.services.clients import effective_scopes
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
from reviewapp.review.services.visibility import (
    may_review,
    proposals_visible_to,
    sees_everything,
)
from reviewapp.review.services.withdrawals import WithdrawRefused, proposal_withdraw
from reviewapp.serializers import (
    judgement_out,
    panel_out,
    panels_open,
    proposal_out,
    proposals_in_detail,
)

from .auth import client_by_id

FINAL = (Proposal.Status.DECIDED, Proposal.Status.ESCALATED, Proposal.Status.WITHDRAWN)
# How often a task's client is asked to poll (the Tasks extension's pollIntervalMs): while
# lenses run, and while a person decides (minutes to days).
POLL_JUDGING_MS = 1_000
POLL_ESCALATED_MS = 15_000


def not_found(proposal_id: int) -> ToolError:
    return ToolError(
        f"no review {proposal_id} that this token may see (it does not exist, or another "
        "client submitted it)"
    )


def _url(proposal_id: int) -> str:
    return reverse("api:proposal_detail", args=[proposal_id])


def review_request(
    *,
    client_id: int,
    panel: str,
    content: str,
    external_ref: str,
    metadata: dict,
    title: str,
    thought_process: str,
) -> dict:
    try:
        proposal, created = proposal_submit(
            panel_name=panel,
            content=content,
            thought_process=thought_process,
            title=title,
            external_ref=external_ref,
            metadata=metadata,
            client=client_by_id(client_id),
        )
    except PanelUnavailable as exc:
        raise ToolError(
            f"no active, valid panel: {exc}; list_panels names the panels that take reviews"
        ) from exc
    except SubmissionConflict as exc:
        raise ToolError(str(exc)) from exc
    return {
        "id": proposal.pk,
        "status": proposal.status,
        "url": _url(proposal.pk),
        "created": created,
    }


def review_statuses(keys: list[tuple[int, int]]) -> dict[tuple[int, int], str | ToolError]:
    """The status of each (client, proposal) asked, or the error for a proposal the client
    may not see: calls starting to wait at once, in one query per client (and one more)."""
    wanted: dict[int, set[int]] = {}
    for client_id, proposal_id in keys:
        wanted.setdefault(client_id, set()).add(proposal_id)
    clients = ApiClient.objects.live().filter(pk__in=list(wanted))
    clients = {c.pk: c for c in clients.select_related("user")}
    answers: dict[tuple[int, int], str | ToolError] = {}
    for client_id, proposal_ids in wanted.items():
        client = clients.get(client_id)
        statuses = (
            dict(
                proposals_visible_to(client).filter(pk__in=proposal_ids).values_list("pk", "status")
            )
            if client is not None
            else {}
        )
        for proposal_id in proposal_ids:
            answers[client_id, proposal_id] = statuses.get(proposal_id) or (
                not_found(proposal_id) if client else ToolError("this token was revoked")
            )
    return answers


def reviews_read(keys: list[tuple[int, int]]) -> dict[tuple[int, int], dict | ToolError]:
    """`review_detail` of each (client, proposal) asked: the calls whose wait ended at once
    (their timeout, mostly) in a constant number of queries, however many."""
    proposals = proposals_in_detail(None).filter(pk__in={p for _, p in keys})
    bodies = {proposal.pk: _review_body(proposal) for proposal in proposals}
    clients_of: dict[int, set[int]] = {}
    for client_id, proposal_id in keys:
        clients_of.setdefault(proposal_id, set()).add(client_id)
    refusals = woken_refusals(clients_of)
    return {
        (client_id, proposal_id): refusals.get((proposal_id, client_id))
        or bodies.get(proposal_id)
        or not_found(proposal_id)
        for client_id, proposal_id in keys
    }


def final_among(proposal_ids: list[int]) -> list[int]:
    """Which of `proposal_ids` are decided or escalated: one light query, ids only."""
    final = Proposal.objects.filter(pk__in=proposal_ids, status__in=FINAL).order_by()
    return list(final.values_list("pk", flat=True))


def final_reviews(proposal_ids: list[int]) -> dict[int, dict]:
    """Which of `proposal_ids` are decided or escalated, each as `review_detail` has it.

    The watch's one read for every call it wakes at once: a handful of queries
    however many. Each waiting call was shown its proposal was visible to it
    before it waited (`review_statuses`); whether it still may read it is asked
    by `woken_refusals` when it wakes.
    """
    final = proposals_in_detail(None).filter(pk__in=proposal_ids, status__in=FINAL)
    return {proposal.pk: _review_body(proposal) for proposal in final}


def woken_refusals(clients_of: dict[int, set[int]]) -> dict[tuple[int, int], ToolError]:
    """Of the calls the watch wakes (a proposal's id → the clients waiting on it), those that
    may no longer read the review, by (proposal, client), each with the error a call made
    now would get: the token revoked (or its user may no longer review), the read scope
    taken away, or the proposal no longer visible to the client (unbound from the lens
    that showed it, `read:all` taken away). At most five queries however many woke.
    """
    wanted = set().union(*clients_of.values())
    clients = {
        c.pk: c for c in ApiClient.objects.live().filter(pk__in=wanted).select_related("user")
    }
    may_sign_decisions_many(c.user for c in clients.values() if c.user_id)
    refusals: dict[tuple[int, int], ToolError] = {}
    unsure: set[tuple[int, int]] = set()
    for proposal_id, client_ids in clients_of.items():
        for client_id in client_ids:
            client = clients.get(client_id)
            if client is None or (client.user_id and not may_sign_decisions(client.user)):
                refusals[proposal_id, client_id] = ToolError(
                    "this token was revoked while it waited"
                )
            elif ApiClient.Scope.READ not in effective_scopes(client):
                refusals[proposal_id, client_id] = ToolError(
                    "this token lost the 'read' scope, which this tool needs, while it waited"
                )
            elif not sees_everything(client):
                unsure.add((proposal_id, client_id))
    if unsure:
        reviewers = {pk for pk, client in clients.items() if may_review(client)}
        for pair in unsure - _visible_pairs(unsure, reviewers):
            refusals[pair] = not_found(pair[0])
    return refusals


def _visible_pairs(pairs: set[tuple[int, int]], reviewers: set[int]) -> set[tuple[int, int]]:
    """Which (proposal, client) pairs the visibility rule (`visible_q`) admits, for clients
    without `read:all`: the submitter's, an escalated proposal's for a client that may
    review (`reviewers`), then those bound to an external lens the proposal awaits. Three
    queries for any number of pairs."""
    proposal_ids = {p for p, _ in pairs}
    submitted = set(
        Proposal.objects.filter(pk__in=proposal_ids, client__isnull=False).values_list(
            "pk", "client_id"
        )
    )
    if reviewers:
        escalated = set(
            Escalation.objects.filter(proposal_id__in=proposal_ids).values_list(
                "proposal_id", flat=True
            )
        )
        submitted |= {(p, c) for p, c in pairs if c in reviewers and p in escalated}
    rest = pairs - submitted
    if not rest:
        return submitted
    bound = AwaitedLens.objects.filter(
        proposal_id__in={p for p, _ in rest},
        lens__backend=Lens.Backend.EXTERNAL,
        lens__judge_clients__in={c for _, c in rest},
    ).values_list("proposal_id", "lens__judge_clients")
    return (submitted | set(bound)) & pairs


def review_detail(*, client_id: int, proposal_id: int) -> dict:
    """A proposal as `proposal_out` has it, less the texts the agent sent (cites carry
    their own text and offsets), with the outcome and the reasons to escalate on top."""
    proposal = proposals_in_detail(client_by_id(client_id)).filter(pk=proposal_id).first()
    if proposal is None:
        raise not_found(proposal_id)
    return _review_body(proposal)


def _review_body(proposal: Proposal) -> dict:
    body = proposal_out(proposal)
    del body["content"], body["thought_process"]
    decision, escalation = body["decision"], body["escalation"]
    return {
        "id": body.pop("id"),
        "status": body.pop("status"),
        "final": proposal.status in FINAL,
        "outcome": decision["outcome"] if decision else None,
        "reasons": escalation["reasons"] if escalation else [],
        "url": _url(proposal.pk),
        **body,
    }


def task_state(*, client_id: int, proposal_id: int) -> dict:
    """A review as a task of the Tasks extension (`tasks.py`): its status, a sentence on
    it, and once decided the result `get_review` would return, as a CallToolResult."""
    proposal = proposals_in_detail(client_by_id(client_id)).filter(pk=proposal_id).first()
    if proposal is None:
        raise not_found(proposal_id)
    task = {
        "createdAt": _iso(proposal.created_at),
        "lastUpdatedAt": _iso(proposal.updated_at),
        "ttlMs": None,  # reviews are kept
    }
    status = proposal.status
    if status == Proposal.Status.DECIDED:
        review = _review_body(proposal)
        outcome = review["outcome"]
        return {
            **task,
            "status": "completed",
            "statusMessage": f"Decided: {outcome} ({review['decision']['basis']}), signed.",
            "result": {
                "content": [{"type": "text", "text": json.dumps(review, ensure_ascii=False)}],
                "structuredContent": review,
                "isError": False,
            },
        }
    if status == Proposal.Status.WITHDRAWN:
        return {**task, "status": "cancelled", "statusMessage": "Withdrawn by its submitter."}
    if status == Proposal.Status.ESCALATED:
        message = _escalated_message(proposal)
        return {**task, "status": "working", "statusMessage": message,
                "pollIntervalMs": POLL_ESCALATED_MS}  # fmt: skip
    answered, asked = proposal.lenses_answered, proposal.lenses_asked
    return {
        **task,
        "status": "working",
        "statusMessage": f"Being judged: {answered} of {asked} lenses answered.",
        "pollIntervalMs": POLL_JUDGING_MS,
    }


def _escalated_message(proposal: Proposal) -> str:
    escalation = max(proposal.escalations.all(), key=lambda e: e.pk)
    said = f"Escalated to a human reviewer ({', '.join(escalation.reasons)})."
    if escalation.due_at is None:
        return said
    then = {
        "reject": "the panel's fallback rejects it",
        "approve": "the panel's fallback approves it",
        "keep_open": "reviewers are reminded and it waits on",
    }[escalation.on_deadline]
    return f"{said} Due {_iso(escalation.due_at)}; if no one decides by then, {then}."


def _iso(when) -> str:
    return when.isoformat().replace("+00:00", "Z")


def review_withdraw(*, client_id: int, proposal_id: int) -> tuple[bool, str]:
    """Withdraw a review its caller submitted: (withdrawn, what happened)."""
    client = client_by_id(client_id)
    if not proposals_visible_to(client).filter(pk=proposal_id).exists():
        raise not_found(proposal_id)
    try:
        proposal_withdraw(proposal_id=proposal_id, client=client)
    except WithdrawRefused as exc:
        return False, str(exc)
    return True, f"review {proposal_id} withdrawn: it will not be decided"


def panel_list() -> list[dict]:
    """The panels a submission may name: active ones, with what they are made of."""
    return [panel_out(panel) for panel in panels_open()]


def judgement_submit(
    *,
    client_id: int,
    proposal_id: int,
    lens: str,
    verdict: str,
    rationale: str,
    claims: list[ClaimInput],
) -> dict:
    client = client_by_id(client_id)
    proposal = proposals_visible_to(client).filter(pk=proposal_id).first()
    if proposal is None:
        raise not_found(proposal_id)
    try:
        judgement = external_judgement_submit(
            proposal=proposal,
            lens_name=lens,
            verdict=verdict,
            rationale=rationale,
            claims=claims,
            client=client,
        )
    except (JudgementRefused, JudgementForbidden, AlreadyJudged, LensGone) as exc:
        raise ToolError(str(exc)) from exc
    return judgement_out(judgement)


def decision_verify(decision: dict, content: str | None = None) -> dict:
    """A decision object (as get_review returns it) checked against this server's trust
    anchors, and with `content` against the text an agent is about to act on."""
    [(_, problem)] = check_api_decisions([decision], trusted_keys())
    if problem is None and content is not None:
        problem = content_problem(json.loads(decision["payload"]), content)
    return {"valid": problem is None, "problem": problem}
