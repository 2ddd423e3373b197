"""What a proposal, its judgements and its decision look like to a machine client.

The REST API (`reviewapp.api`) and the MCP server (`reviewapp.mcp`) answer
with the same shapes, so both take them from here; the API's schemas say
which of these fields it publishes.
"""

import json
from collections.abc import Iterable

from django.db.models import Prefetch, QuerySet

from reviewapp.core.judging import FailureKind
from reviewapp.core.redaction import capped
from reviewapp.ledger.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import (
    ApiClient,
    Claim,
    Decision,
    DecisionAudit,
    Escalation,
    Judgement,
    LensFailure,
    Panel,
    Proposal,
    Review,
)
from reviewapp.review.services.visibility import proposals_visible_to


def public_keys_for(key_ids) -> dict[str, str]:
    """Trusted public keys only: a key that only the database knows is served as null."""
    trusted = public_keys_b64(trusted_keys())
    return {k: trusted[k] for k in set(key_ids) if k in trusted}


def _signed(payload: str) -> dict:
    # A tampered row may hold anything; the verifier says so, this must not crash.
    try:
        signed = json.loads(payload)
    except ValueError:
        return {}
    return signed if isinstance(signed, dict) else {}


def decision_out(decision: Decision, public_keys: dict[str, str]) -> dict:
    """A decision as verifiable by itself: the signed bytes, signature and public key.

    The reviewer's annotations are read from the signed bytes, so they say
    exactly what was signed (absent keys: none given).
    """
    signed = _signed(decision.payload)
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
        "ledger_index": _ledger_index(decision),
        "claims": signed.get("claims", []),
        "tags": signed.get("tags", []),
        "wrong_reason": signed.get("wrong_reason", []),
        "reviews": [review_out(r) for r in decision.escalation.reviews.all()]
        if decision.escalation_id
        else [],
        # What made a fallback decision, as signed (None for any other decision).
        "fallback": signed.get("fallback"),
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


def audit_out(audit: DecisionAudit) -> dict:
    """An audit verdict as verifiable by itself: its signed bytes, signature and key id."""
    return {
        "id": audit.pk,
        "proposal": audit.escalation.proposal_id,
        "decision": audit.decision_id,
        "outcome": audit.outcome,
        "agrees": audit.agrees,
        "decided_by": audit.decided_by_name,
        "rationale": audit.rationale,
        "payload": audit.payload,
        "signature": audit.signature,
        "key_id": audit.key_id,
        "hash": audit.hash,
    }


def _ledger_index(decision: Decision) -> int | None:
    """The decision's leaf in the ledger, to ask its inclusion proof by; None before it is in."""
    entry = getattr(decision, "ledger_entry", None)  # the reverse one-to-one raises when absent
    return entry.leaf_index if entry else None


def proposals_in_detail(client: ApiClient | None) -> QuerySet[Proposal]:
    """The proposals `client` may see, with what `proposal_out` reads fetched alongside."""
    return (
        proposals_visible_to(client)
        .select_related("panel", "decision__ledger_entry")
        .prefetch_related(
            Prefetch("judgements", queryset=Judgement.objects.prefetch_related("claims")),
            "evidence",
            "lens_failures",
            "escalations",
            "decision__escalation__reviews",
        )
    )


def proposal_out(proposal: Proposal) -> dict:
    """A proposal with its judgements, lens failures, evidence, escalation and decision."""
    # The latest, from the prefetched rows: a query per proposal would make a batch's
    # read (the MCP watch's) grow with the number of proposals in it.
    escalation = max(proposal.escalations.all(), key=lambda e: e.pk, default=None)
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
        "lens_failures": lens_failures_out(
            proposal.lens_failures.all(),
            (escalation.detail or {}).get("failed_lenses", ()) if escalation else (),
        ),
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
            {
                "id": escalation.pk,
                "status": escalation.status,
                "reasons": escalation.reasons,
                **escalation_deadline(escalation),
                **escalation_why(escalation, proposal.lens_failures.all()),
            }
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
        "kind": failure.kind,
        "message": capped(failure.error),
        "attempts": failure.attempts,
        "at": failure.created_at.isoformat(),
    }


def lens_failures_out(failures: Iterable[LensFailure], failed_names: Iterable[str] = ()) -> list:
    """Each failed lens by name: its recorded failure, or, for a name among `failed_names`
    with none (a lens deleted after submission, which no row can point to), that it never ran."""
    recorded = sorted(failures, key=_by_lens)
    named = {f.lens_name for f in recorded}
    deleted = [
        {
            "lens": name,
            "lens_version": None,
            "kind": FailureKind.DELETED.value,
            "message": "the lens was deleted after submission, so it never ran",
            "attempts": 0,
            "at": None,
        }
        for name in sorted(set(failed_names) - named)
    ]
    return sorted([*map(lens_failure_out, recorded), *deleted], key=lambda f: f["lens"])


def escalation_why(escalation: Escalation, failures: Iterable[LensFailure]) -> dict:
    """Why a proposal went to a person: a sentence per reason naming what failed, each
    failed lens with its kind and message, and each inconclusive checker with its reason.

    `failures`: the proposal's lens failures, fetched by the caller (in bulk for a list).
    """
    detail = escalation.detail or {}
    lens_failures = lens_failures_out(failures, detail.get("failed_lenses", ()))
    checkers = [
        {"checker": c["checker"], "reason": c["reason"]}
        for c in detail.get("inconclusive_checkers", ())
    ]
    return {
        "explanation": _explanation(escalation, lens_failures, checkers),
        "lens_failures": lens_failures,
        "inconclusive_checkers": checkers,
    }


def _explanation(escalation: Escalation, lens_failures: list, checkers: list) -> str:
    """One sentence per reason, naming the lenses and checkers (the lists say why each)."""
    reason = Escalation.Reason
    said = []
    for each in escalation.reasons:
        if each == reason.INCONCLUSIVE and checkers:
            names = ", ".join(c["checker"] for c in checkers)
            said.append(f"Could not say pass or fail: checker {names}.")
        elif each == reason.LENS_FAILED and lens_failures:
            names = ", ".join(f"{f['lens']} ({f['kind'].replace('_', ' ')})" for f in lens_failures)
            said.append(f"Gave no judgement: lens {names}.")
        elif each == reason.NO_QUORUM:
            said.append("The lenses that answered did not reach the panel's quorum.")
        elif each == reason.SIGN_OFF:
            said.append("The panel approves only with a person's sign-off.")
    stored = (escalation.detail or {}).get("explanation", "").rstrip(".")
    if stored and (not said or reason.FINAL_STEP_FAILED in escalation.reasons):
        # A reason with nothing to name (or the final step's own account): as stored.
        said.insert(0, stored + ".")
    return " ".join(said)


def failures_by_proposal(proposal_ids: Iterable[int]) -> dict[int, list[LensFailure]]:
    """The lens failures of many proposals in one query, by proposal id."""
    by_proposal: dict[int, list[LensFailure]] = {}
    for failure in LensFailure.objects.filter(proposal_id__in=set(proposal_ids)).order_by():
        by_proposal.setdefault(failure.proposal_id, []).append(failure)
    return by_proposal


def escalation_deadline(escalation: Escalation) -> dict:
    """When the escalation's review deadline falls and what happens then (None: no deadline)."""
    due_at = escalation.due_at.isoformat() if escalation.due_at else None
    return {"due_at": due_at, "on_deadline": escalation.on_deadline or None}


def escalation_out(escalation: Escalation, failures: Iterable[LensFailure]) -> dict:
    """An escalation as the inbox lists it, with why it was raised."""
    return {
        "id": escalation.pk,
        "proposal": escalation.proposal_id,
        "status": escalation.status,
        "reasons": escalation.reasons,
        "claimed_by": escalation.claimed_by.get_username() if escalation.claimed_by else None,
        "created_at": escalation.created_at,
        **escalation_deadline(escalation),
        **escalation_why(escalation, failures),
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


def panels_open() -> QuerySet[Panel]:
    """The panels a submission may name (active ones), with what `panel_out` reads (the
    guarantee joined in: no query more)."""
    return (
        Panel.objects.filter(active=True)
        .select_related("guarantee")
        .prefetch_related("panel_lenses__lens", "checkers")
    )


def panel_out(panel: Panel) -> dict:
    """A panel as an agent chooses one: what judges it, what it needs, its review deadline,
    and the guarantee it gives (null without one)."""
    deadline = panel.review_deadline
    return {
        "name": panel.name,
        "description": panel.description,
        "need": panel.need,
        "lenses": [
            {"name": pl.lens.name, "backend": pl.lens.backend}
            for pl in sorted(panel.panel_lenses.all(), key=lambda pl: pl.position)
        ],
        "checkers": sorted(c.name for c in panel.checkers.all() if c.active),
        "requires_sign_off": panel.requires_sign_off,
        "reviews_needed": panel.reviews_needed,
        "external_deadline_seconds": panel.external_deadline_seconds,
        "review_deadline_seconds": int(deadline.total_seconds()) if deadline else None,
        "on_deadline": panel.on_deadline if deadline else None,
        "guarantee": _guarantee_part(panel),
    }


def _guarantee_part(panel: Panel) -> dict | None:
    # The guarantee app's row, by its reverse one-to-one: absent, or without a target, is off.
    guarantee = getattr(panel, "guarantee", None)
    if guarantee is None or guarantee.target is None:
        return None
    return {"target": guarantee.target, "confidence": guarantee.confidence}
