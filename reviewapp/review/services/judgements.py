"""Recording what lenses said (or that they never answered)."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction

from reviewapp.core.cite import (
    ClaimInput,
    GroundedClaim,
    GroundingPolicy,
    UnresolvedCite,
    ground_claims,
)
from reviewapp.core.judging import FailureKind
from reviewapp.core.redaction import redacted
from reviewapp.core.text import storable

from ..models import ApiClient, Claim, Judgement, Lens, LensFailure, Proposal
from ..statements import (
    claim_insert,
    judgement_insert,
    lens_failure_insert,
    proposal_count_save,
    proposal_counter_locked,
)


class JudgementRefused(Exception):
    """An external judgement that the panel cannot take (unknown or non-external lens)."""


class AlreadyJudged(Exception):
    """The lens has already judged this proposal."""


class JudgementForbidden(Exception):
    """The calling client may not answer for this lens (not named by it, or it submitted)."""


class LensGone(Exception):
    """The lens the proposal awaits was deleted; the proposal is escalated instead."""


def _claim_rows(
    claims: Iterable[GroundedClaim], dropped_cites: Iterable[UnresolvedCite]
) -> list[Claim]:
    rows = []
    for claim in claims:
        anchor = claim.anchor
        kind = anchor.kind if anchor is not None else Claim.AnchorKind.UNRESOLVED
        rows.append(
            Claim(
                claim_id=storable(claim.claim_id or ""),
                cite=storable(claim.cite),
                text=None if claim.text is None else storable(claim.text),
                assessment=claim.assessment,
                note=storable(claim.note),
                anchor_kind=kind,
                start_utf16=getattr(anchor, "start_utf16", None),
                end_utf16=getattr(anchor, "end_utf16", None),
            )
        )
    for miss in dropped_cites:
        # The lens's own assessment: a dropped "refuted" must never read as "verified".
        rows.append(
            Claim(
                claim_id=storable(miss.claim_id or ""),
                cite=storable(miss.cite),
                assessment=miss.assessment,
                note=storable(miss.note),
                anchor_kind=Claim.AnchorKind.UNRESOLVED,
                dropped=True,
            )
        )
    for position, row in enumerate(rows):
        row.position = position
    return rows


def lens_has_answered(proposal_id: int, lens_id: int) -> bool:
    """Whether `lens` has a judgement or a recorded failure on the proposal.

    Raw SQL: it runs for nearly every lens answer, and the ORM spends longer
    composing two EXISTS subqueries than the database spends answering them.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM {Judgement._meta.db_table}"
            " WHERE proposal_id = %s AND lens_id = %s)"
            f" OR EXISTS (SELECT 1 FROM {LensFailure._meta.db_table}"
            " WHERE proposal_id = %s AND lens_id = %s)",
            [proposal_id, lens_id, proposal_id, lens_id],
        )
        return bool(cursor.fetchone()[0])


def answered_lens_ids(proposal_id: int) -> set[int]:
    """Lenses with a judgement or a recorded failure on the proposal."""
    # order_by(): the models' default ordering would join the proposal for nothing.
    judged = Judgement.objects.filter(proposal_id=proposal_id).order_by()
    failed = LensFailure.objects.filter(proposal_id=proposal_id).order_by()
    return set(judged.values_list("lens_id", flat=True)) | set(
        failed.values_list("lens_id", flat=True)
    )


@dataclass(frozen=True)
class LensAnswer:
    """One lens's answer, ready to be written on the locked proposal: a judgement or a failure."""

    lens: Lens
    # Builds the unsaved rows: the judgement and its claims, or the failure and
    # no claims. Fresh on every call, so a write that rolled back leaves no ids
    # behind on the rows the next attempt writes.
    rows: Callable[[], tuple[Judgement | LensFailure, list[Claim]]]


def proposal_lock_counter(proposal_id: int) -> Proposal:
    """The proposal row-locked, with what the answer path reads of it (call inside a transaction).

    The proposal row lock serialises lens completions, so the answer count is
    exact and exactly one completion sees the last answer. (A Celery chord
    would need a result backend and does not survive a worker killed
    mid-chord; this survives re-delivery.)
    """
    locked = proposal_counter_locked.first(proposal_id)
    if locked is None:
        raise Proposal.DoesNotExist(f"no proposal {proposal_id}")
    return locked


def answers_write(locked: Proposal, answers: list[LensAnswer]) -> list[Judgement | LensFailure]:
    """Write the answers of lenses yet to answer on the locked proposal and count them.

    Each lens answers once, with a judgement or a failure: every path takes
    the lock and this check. The answered check is its own statement after
    the lock: under READ COMMITTED it then sees every answer committed by
    whoever held the lock before us, which a subquery inside the locking
    SELECT would not. The rows go in one INSERT per table, however many
    lenses answered. The caller saves the count.
    """
    answered = _answered_among(locked, [answer.lens.pk for answer in answers])
    built = [answer.rows() for answer in answers if answer.lens.pk not in answered]
    rows = [row for row, _ in built]
    for row in rows:
        row.proposal = locked
    judgement_insert.many([row for row in rows if isinstance(row, Judgement)])
    lens_failure_insert.many([row for row in rows if isinstance(row, LensFailure)])
    claims = []
    for row, row_claims in built:
        for claim in row_claims:
            claim.judgement = row
            claims.append(claim)
    claim_insert.many(claims)
    locked.lenses_answered += len(rows)
    return rows


def _record_answers(
    proposal_id: int, answers: list[LensAnswer], *, enqueue_final_step: bool
) -> tuple[Proposal, list[Judgement | LensFailure]] | None:
    """Lock, write the answers of lenses yet to answer and count them; None if none may.

    Answers that arrive together (a proposal's LLM lenses, its CPU lenses)
    share one lock, one check, one count.
    """
    try:
        with transaction.atomic():
            proposal = proposal_lock_counter(proposal_id)
            if proposal.is_final:
                return None
            written = answers_write(proposal, answers)
            if not written:
                return None
            proposal_count_save(proposal)
            if proposal.all_lenses_answered and enqueue_final_step:
                # robust: a broker outage must not undo the answer; the sweeper re-enqueues.
                transaction.on_commit(lambda: _enqueue_finalize(proposal.pk), robust=True)
    except IntegrityError:
        # Only a writer that skipped the lock could get here; the unique
        # constraint kept its answer and rolled back all of ours.
        return None
    return proposal, written


def _answered_among(proposal: Proposal, lens_ids: list[int]) -> set[int]:
    """Which of `lens_ids` have answered the locked proposal."""
    if proposal.lenses_answered == 0:  # exact under the lock: none has
        return set()
    if len(lens_ids) == 1:  # one EXISTS costs less than listing every answer
        return set(lens_ids) if lens_has_answered(proposal.pk, lens_ids[0]) else set()
    return answered_lens_ids(proposal.pk) & set(lens_ids)


def lens_answers_record(*, proposal_id: int, answers: list[LensAnswer]) -> Proposal | None:
    """Lenses' answers in one transaction under one lock; lenses that had answered skip.

    The locked proposal with its new count (its ``all_lenses_answered`` says
    whether the final step is due; none is enqueued: the worker runs it), or
    None if it is final or none of them was new.
    """
    recorded = _record_answers(proposal_id, answers, enqueue_final_step=False)
    return recorded[0] if recorded else None


def _enqueue_finalize(proposal_id: int) -> None:
    from ..evaluation.tasks import finalize_proposal

    finalize_proposal.delay(proposal_id)


def judgement_answer(
    *,
    lens: Lens,
    verdict: str,
    rationale: str,
    claims: list[GroundedClaim],
    dropped_cites: Iterable[UnresolvedCite] = (),
    raw_response: str = "",
    attempts: int = 1,
    requote_rounds: int = 0,
) -> LensAnswer:
    """A lens's judgement, ready to write with ``lens_answers_record``."""

    def rows() -> tuple[Judgement, list[Claim]]:
        judgement = Judgement(
            lens=lens,
            lens_name=lens.name,
            lens_version=lens.version,
            verdict=verdict,
            # A model's text as answered, minus what no database stores (NUL, half pairs).
            rationale=storable(rationale),
            raw_response=storable(raw_response),
            attempts=attempts,
            requote_rounds=requote_rounds,
        )
        return judgement, _claim_rows(claims, dropped_cites)

    return LensAnswer(lens=lens, rows=rows)


def lens_failure_answer(*, lens: Lens, error: str, attempts: int, kind: FailureKind) -> LensAnswer:
    """That a lens never answered, ready to write with ``lens_answers_record``."""

    def rows() -> tuple[LensFailure, list[Claim]]:
        failure = LensFailure(
            lens=lens,
            lens_name=lens.name,
            lens_version=lens.version,
            # A provider's error body may echo the key or name the account: never kept.
            error=storable(redacted(error)[:4000]),
            kind=kind,
            attempts=attempts,
        )
        return failure, []

    return LensAnswer(lens=lens, rows=rows)


def judgement_record(
    *,
    proposal_id: int,
    lens: Lens,
    verdict: str,
    rationale: str,
    claims: list[GroundedClaim],
    dropped_cites: Iterable[UnresolvedCite] = (),
    raw_response: str = "",
    attempts: int = 1,
    requote_rounds: int = 0,
) -> Judgement | None:
    """Store one lens's judgement (an external lens's); None if the lens already answered or
    the proposal is final. The last answer enqueues the final step.
    """
    answer = judgement_answer(
        lens=lens,
        verdict=verdict,
        rationale=rationale,
        claims=claims,
        dropped_cites=dropped_cites,
        raw_response=raw_response,
        attempts=attempts,
        requote_rounds=requote_rounds,
    )
    recorded = _record_answers(proposal_id, [answer], enqueue_final_step=True)
    return recorded[1][0] if recorded else None


def external_judgement_submit(
    *,
    proposal: Proposal,
    lens_name: str,
    verdict: str,
    rationale: str,
    claims: list[ClaimInput],
    client: ApiClient,
) -> Judgement:
    """A judgement from an external lens, grounded here like any other.

    Only a client the lens names may answer for it, and never on a proposal
    that client submitted unless the lens allows it. Refusals write nothing.
    """
    entry = next((e for e in proposal.panel_snapshot["lenses"] if e["name"] == lens_name), None)
    if entry is None:
        raise JudgementRefused(f"lens {lens_name!r} is not on the panel of proposal {proposal.pk}")
    if entry["backend"] != Lens.Backend.EXTERNAL:
        raise JudgementRefused(
            f"lens {lens_name!r} is not an external lens; its judgements come from the worker"
        )
    lens = Lens.objects.filter(pk=entry["id"]).first()
    if lens is None:
        proposal_escalate_for_missing(proposal_id=proposal.pk)
        raise LensGone(
            f"lens {lens_name!r} no longer exists, so it cannot judge proposal {proposal.pk}; "
            "the proposal is escalated to a human instead"
        )
    external_judge_check(lens=lens, client=client, proposal=proposal)
    policy = GroundingPolicy(proposal.panel_snapshot["grounding_policy"])
    grounded = ground_claims(
        content=proposal.content,
        thought_process=proposal.thought_process,
        claims=claims,
        target_id=str(proposal.pk),
        policy=policy,
    )
    # Under Reject the misses were removed from the claims; keep them on record.
    dropped = grounded.unresolved if policy is GroundingPolicy.REJECT else []
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


def external_judge_check(*, lens: Lens, client: ApiClient, proposal: Proposal) -> None:
    """Raise JudgementForbidden unless `client` may answer for `lens` on `proposal`."""
    if not lens.judge_clients.filter(pk=client.pk).exists():
        if not lens.judge_clients.exists():
            raise JudgementForbidden(
                f"lens {lens.name!r} names no API client allowed to answer for it, so it "
                "accepts no judgement; an admin must bind a client to it"
            )
        raise JudgementForbidden(
            f"client {client.name!r} is not allowed to answer for lens {lens.name!r}"
        )
    if proposal.client_id == client.pk and not lens.allow_self_judgement:
        raise JudgementForbidden(
            f"client {client.name!r} submitted proposal {proposal.pk}, and lens {lens.name!r} "
            "does not let a submitter judge its own proposal"
        )


def proposal_escalate_for_missing(*, proposal_id: int) -> None:
    """A lens the proposal awaits is gone: stop waiting, and let the final step escalate it.

    The final step names what is gone; waiting for the deadline would only delay that.
    """
    from ..evaluation.tasks import finalize_proposal

    transaction.on_commit(
        lambda: finalize_proposal.delay(proposal_id, deadline_passed=True), robust=True
    )
