"""What a proposal, its judgements and its decision look like to a machine client.

The REST API (`reviewapp.api`) and the MCP server (`reviewapp.mcp`) answer
with the same shapes, so both take them from here; the API's schemas say
which of these fields it publishes.
"""

from django.db.models import Prefetch, QuerySet

from reviewapp.review.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import (
    ApiClient,
    Claim,
    Decision,
    Judgement,
    LensFailure,
    Proposal,
    Review,
)
from reviewapp.review.services.visibility import proposals_visible_to


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
        "reviews": [review_out(r) for r in decision.escalation.reviews.all()]
        if decision.escalation_id
        else [],
    }


def review_out(review: Review) -> dict:
    return {
        "id": review.pk,
        "reviewer": review.reviewer_name,
        "outcome": review.outcome,
        "payload": review.payload,
        "signature": review.signature,
        "key_id": review.key_id,
        "hash": review.hash,
    }


def proposals_in_detail(client: ApiClient | None) -> QuerySet[Proposal]:
    """The proposals `client` may see, with what `proposal_out` reads fetched alongside."""
    return (
        proposals_visible_to(client)
        .select_related("panel", "decision")
        .prefetch_related(
            Prefetch("judgements", queryset=Judgement.objects.prefetch_related("claims")),
            "evidence",
            "lens_failures",
            "decision__escalation__reviews",
        )
    )


def proposal_out(proposal: Proposal) -> dict:
    """A proposal with its judgements, lens failures, evidence, escalation and decision."""
    escalation = proposal.escalations.order_by("-id").first()
    decision = getattr(proposal, "decision", None)  # the reverse one-to-one raises when absent
    return {
        "id": proposal.pk,
        "status": proposal.status,
        "panel": proposal.panel.name,
        "title": proposal.title,
        "content": proposal.content,
        "thought_process": proposal.thought_process,
        "content_sha256": proposal.content_sha256,
        "progress": {"answered": proposal.lenses_answered, "asked": proposal.lenses_asked},
        "tally": proposal.tally,
        "judgements": [judgement_out(j) for j in proposal.judgements.all()],
        "lens_failures": [
            lens_failure_out(f) for f in sorted(proposal.lens_failures.all(), key=_by_lens)
        ],
        "evidence": [
            {
                "checker": e.checker_name,
                "version": e.checker_version,
                "verdict": e.verdict,
                "reason": e.reason,
                "key_id": e.key_id,
                "signature": e.signature,
                "payload": e.payload,
            }
            for e in sorted(proposal.evidence.all(), key=lambda e: e.checker_name)
        ],
        "escalation": (
            {"id": escalation.pk, "status": escalation.status, "reasons": escalation.reasons}
            if escalation
            else None
        ),
        "decision": (
            decision_out(decision, public_keys_for([decision.key_id])) if decision else None
        ),
    }


def _by_lens(failure: LensFailure) -> str:
    return failure.lens_name


def lens_failure_out(failure: LensFailure) -> dict:
    """A lens that gave no judgement, and why (the error its last attempt ended with)."""
    return {
        "lens": failure.lens_name,
        "lens_version": failure.lens_version,
        "message": failure.error,
        "attempts": failure.attempts,
        "at": failure.created_at.isoformat(),
    }


def judgement_out(judgement: Judgement) -> dict:
    claims = sorted(judgement.claims.all(), key=lambda c: c.position)
    return {
        "lens": judgement.lens_name,
        "lens_version": judgement.lens_version,
        "verdict": judgement.verdict,
        "rationale": judgement.rationale,
        "claims": [claim_out(c) for c in claims if not c.dropped],
        "unresolved_cites": [
            {
                "cite": c.cite,
                "assessment": c.assessment or None,
                "note": c.note,
                "claim_id": c.claim_id,
            }
            for c in claims
            if c.dropped
        ],
    }


def claim_out(claim: Claim) -> dict:
    match claim.anchor_kind:
        case Claim.AnchorKind.ANSWER_BODY:
            anchor = {
                "kind": "answer_body",
                "start_utf16": claim.start_utf16,
                "end_utf16": claim.end_utf16,
            }
        case Claim.AnchorKind.THOUGHT_WINDOW:
            anchor = {"kind": "thought_window"}
        case _:
            anchor = None
    return {
        "claim_id": claim.claim_id,
        "cite": claim.cite,
        "text": claim.text,
        "assessment": claim.assessment,
        "anchor": anchor,
    }
