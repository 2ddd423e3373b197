"""Recording what lenses said (or that they never answered)."""

from collections.abc import Iterable

from django.db import IntegrityError, transaction

from reviewapp.core.cite import ClaimInput, GroundedClaim, GroundingPolicy, ground_claims

from ..models import Claim, Judgement, Lens, LensFailure, Proposal


class JudgementRefused(Exception):
    """An external judgement that the panel cannot take (unknown or non-external lens)."""


class AlreadyJudged(Exception):
    """The lens has already judged this proposal."""


def _claim_rows(claims: Iterable[GroundedClaim], dropped_cites: Iterable[str]) -> list[Claim]:
    rows = []
    for claim in claims:
        anchor = claim.anchor
        kind = anchor.kind if anchor is not None else Claim.AnchorKind.UNRESOLVED
        rows.append(
            Claim(
                claim_id=claim.claim_id or "",
                cite=claim.cite,
                text=claim.text,
                assessment=claim.assessment,
                note=claim.note,
                anchor_kind=kind,
                start_utf16=getattr(anchor, "start_utf16", None),
                end_utf16=getattr(anchor, "end_utf16", None),
            )
        )
    for cite in dropped_cites:
        rows.append(
            Claim(
                cite=cite,
                assessment=Claim.Assessment.VERIFIED,
                anchor_kind=Claim.AnchorKind.UNRESOLVED,
                dropped=True,
            )
        )
    for position, row in enumerate(rows):
        row.position = position
    return rows


def _after_answer(proposal: Proposal) -> None:
    """Count one more answer on the locked proposal; the last answer enqueues the final step.

    Exact because each lens answers once: a judgement or a failure, never both
    (checked under the same lock), and the unique constraints refuse a second.
    """
    proposal.lenses_answered += 1
    proposal.save(update_fields=["lenses_answered", "updated_at"])
    if proposal.lenses_answered >= proposal.lenses_asked:
        # robust: a broker outage must not undo the answer; the sweeper re-enqueues.
        transaction.on_commit(lambda: _enqueue_finalize(proposal.pk), robust=True)


def _enqueue_finalize(proposal_id: int) -> None:
    from ..tasks import finalize_proposal

    finalize_proposal.delay(proposal_id)


def judgement_record(
    *,
    proposal_id: int,
    lens: Lens,
    verdict: str,
    rationale: str,
    claims: list[GroundedClaim],
    dropped_cites: list[str] = (),
    raw_response: str = "",
    attempts: int = 1,
    requote_rounds: int = 0,
) -> Judgement | None:
    """Store one lens's judgement; None if the lens already answered or the proposal is final."""
    with transaction.atomic():
        # The proposal row lock serialises lens completions, so the answer
        # count is exact and exactly one completion sees the last answer.
        # (A Celery chord would need a result backend and does not survive a
        # worker killed mid-chord; this survives re-delivery.)
        proposal = Proposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.is_final or proposal.lens_failures.filter(lens=lens).exists():
            return None
        try:
            with transaction.atomic():
                judgement = Judgement.objects.create(
                    proposal=proposal,
                    lens=lens,
                    lens_name=lens.name,
                    lens_version=lens.version,
                    verdict=verdict,
                    rationale=rationale,
                    raw_response=raw_response,
                    attempts=attempts,
                    requote_rounds=requote_rounds,
                )
                rows = _claim_rows(claims, dropped_cites)
                for row in rows:
                    row.judgement = judgement
                Claim.objects.bulk_create(rows)
        except IntegrityError:
            return None  # a re-delivered task; the first delivery's judgement stands
        _after_answer(proposal)
    return judgement


def lens_failure_record(*, proposal_id: int, lens: Lens, error: str, attempts: int) -> bool:
    """Record that a lens never answered; False if it had already answered or failed."""
    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.is_final or proposal.judgements.filter(lens=lens).exists():
            return False
        try:
            with transaction.atomic():
                LensFailure.objects.create(
                    proposal=proposal,
                    lens=lens,
                    lens_name=lens.name,
                    lens_version=lens.version,
                    error=error[:4000],
                    attempts=attempts,
                )
        except IntegrityError:
            return False
        _after_answer(proposal)
    return True


def external_judgement_submit(
    *,
    proposal: Proposal,
    lens_name: str,
    verdict: str,
    rationale: str,
    claims: list[ClaimInput],
) -> Judgement:
    """A judgement from an external lens, grounded here like any other."""
    entry = next((e for e in proposal.panel_snapshot["lenses"] if e["name"] == lens_name), None)
    if entry is None:
        raise JudgementRefused(f"lens {lens_name!r} is not on the panel of proposal {proposal.pk}")
    if entry["backend"] != Lens.Backend.EXTERNAL:
        raise JudgementRefused(
            f"lens {lens_name!r} is not an external lens; its judgements come from the worker"
        )
    lens = Lens.objects.get(pk=entry["id"])
    policy = GroundingPolicy(proposal.panel_snapshot["grounding_policy"])
    grounded = ground_claims(
        content=proposal.content,
        thought_process=proposal.thought_process,
        claims=claims,
        target_id=str(proposal.pk),
        policy=policy,
    )
    # Under Reject the misses were removed from the claims; keep them on record.
    dropped = [u.cite for u in grounded.unresolved] if policy is GroundingPolicy.REJECT else []
    judgement = judgement_record(
        proposal_id=proposal.pk,
        lens=lens,
        verdict=verdict,
        rationale=rationale,
        claims=grounded.claims,
        dropped_cites=dropped,
    )
    if judgement is None:
        if proposal.judgements.filter(lens=lens).exists():
            raise AlreadyJudged(f"lens {lens_name!r} has already judged proposal {proposal.pk}")
        raise AlreadyJudged(f"proposal {proposal.pk} is already final; judgements are closed")
    return judgement
