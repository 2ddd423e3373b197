"""Trying a lens or a checker on a pasted sample, outside any proposal.

Nothing here writes a proposal, a judgement or evidence: the lens runs on an
unsaved Proposal carrying only the sample, and a checker's verdict is signed
with a throwaway key, so a trial can never pass for a real verdict.
The result is stored on a `Trial` row for the admin page to poll. Trials live
here, with their model and result pages, and run review's lenses and checkers.
"""

import hashlib
import logging

from celery import shared_task
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.core import checkers as core_checkers
from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import JudgeOutcome, LensFailed
from reviewapp.core.signing import Signer
from reviewapp.review.evaluation.evaluators import evaluate_lens
from reviewapp.review.evaluation.llm_loop import runtime
from reviewapp.review.models import CheckerConfig, Lens, Proposal

from .models import AuditEntry, Trial, lost_before
from .services import audit_record

log = logging.getLogger(__name__)

# The name it had in review: a trial queued before an upgrade still runs after it.
TRIAL_TASK_NAME = "reviewapp.review.trial.run_trial"


class TrialFailed(Exception):
    """The lens or checker produced no verdict; the message says why."""


def sample_proposal(*, content: str, thought_process: str = "", grounding_policy: str) -> Proposal:
    """An unsaved Proposal holding only what a lens reads. Never saved."""
    return Proposal(
        content=content,
        thought_process=thought_process,
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        panel_snapshot={"grounding_policy": GroundingPolicy(grounding_policy).value},
        panel_version=0,
        request_sha256="",
    )


def lens_trial(
    *, lens: Lens, content: str, thought_process: str = "", grounding_policy: str = "reject"
) -> dict:
    """Run `lens` once on the sample; its verdict and grounded claims, as JSON."""
    if lens.backend == Lens.Backend.EXTERNAL:
        raise TrialFailed(
            f"lens {lens.name!r} is external: its judgements arrive over the API, so there "
            "is nothing here to run."
        )
    proposal = sample_proposal(
        content=content, thought_process=thought_process, grounding_policy=grounding_policy
    )
    try:
        outcome = evaluate_lens(lens=lens, proposal=proposal)
    except LensFailed as exc:
        raise TrialFailed(str(exc)) from exc
    return _lens_result(lens, outcome, grounding_policy)


def _lens_result(lens: Lens, outcome: JudgeOutcome, grounding_policy: str) -> dict:
    return {
        "lens": lens.name,
        "lens_version": lens.version,
        "backend": lens.backend,
        "grounding_policy": grounding_policy,
        "verdict": outcome.verdict,
        "rationale": outcome.rationale,
        "claims": [claim.to_dict() for claim in outcome.claims],
        "unresolved_cites": list(outcome.unresolved_cites),
        "raw_response": outcome.raw_response,
        "transport_calls": outcome.transport_calls,
        "requote_rounds": outcome.requote_rounds,
    }


def checker_trial(*, checker: CheckerConfig, content: str) -> dict:
    """Run `checker` once on the sample; its verdict and reason, as JSON."""
    try:
        built = checker.build()
    except (core_checkers.CheckError, core_checkers.CheckerConfigError, ValueError) as exc:
        raise TrialFailed(f"checker {checker.name!r} is refused: {exc}") from exc
    try:
        # A throwaway key: a trial verdict must never verify as real evidence.
        evidence = built.check(core_checkers.CheckInput(content=content), Signer.generate())
    except core_checkers.CheckError as exc:
        raise TrialFailed(str(exc)) from exc
    return {
        "checker": checker.name,
        "checker_version": checker.version,
        "kind": checker.kind,
        "verdict": evidence.verdict.value,
        "reason": evidence.reason,
        "details": dict(evidence.details),
        "digests": dict(evidence.digests),
    }


def trial_start(
    *,
    kind: str,
    target: Lens | CheckerConfig,
    sample: str,
    thought_process: str = "",
    grounding_policy: str = "reject",
    user=None,
) -> Trial:
    """Store a pending trial and enqueue it once the row is committed."""
    trial = Trial.objects.create(
        kind=kind,
        target_id=target.pk,
        target_name=target.name,
        sample=sample,
        thought_process=thought_process,
        grounding_policy=grounding_policy,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    audit_record(
        actor=user if user is not None and user.is_authenticated else None,
        action=AuditEntry.Action.TRIAL,
        target_type=kind,
        target=target,
        note=f"trial {trial.pk} on a {len(sample)}-character sample",
    )
    transaction.on_commit(lambda: run_trial.delay(trial.pk))
    return trial


def _trial_claim(trial_id: int) -> Trial | None:
    """The trial, now running here; None if another delivery holds it or it is over.

    A trial still running past the task time limit lost its worker; a later
    delivery of its task (the broker hands back unacknowledged work) runs it.
    """
    # Conditional update: of two deliveries, exactly one claims the trial.
    claimed = (
        Trial.objects.filter(pk=trial_id)
        .filter(
            Q(status=Trial.Status.PENDING)
            | Q(status=Trial.Status.RUNNING, started_at__lt=lost_before())
        )
        .update(status=Trial.Status.RUNNING, started_at=timezone.now())
    )
    return Trial.objects.get(pk=trial_id) if claimed else None


def _trial_lens(trial: Trial) -> Lens:
    lens = Lens.objects.filter(pk=trial.target_id).first()
    if lens is None:
        raise TrialFailed("the lens no longer exists")
    trial.target_version = lens.version
    return lens


def _is_llm_lens_trial(trial_id: int) -> bool:
    return Trial.objects.filter(
        pk=trial_id,
        kind=Trial.Kind.LENS,
        target_id__in=Lens.objects.filter(backend=Lens.Backend.LLM).values("pk"),
    ).exists()


def _trial_failed(trial: Trial, exc: Exception) -> None:
    if isinstance(exc, TrialFailed):
        trial.error = str(exc)
    else:  # a trial reports, it never crashes the worker's loop
        log.error("trial %s crashed", trial.pk, exc_info=exc)
        trial.error = f"{type(exc).__name__}: {exc}"
    trial.status = Trial.Status.FAILED


def _trial_save(trial: Trial) -> Trial:
    trial.finished_at = timezone.now()
    trial.save(update_fields=["status", "result", "error", "target_version", "finished_at"])
    return trial


def trial_run(trial_id: int) -> Trial | None:
    """Run a pending trial once and store what came of it. Safe to call twice.

    A trial of an LLM lens is not run here (a worker slot never waits on a
    model): it is handed to this process's LLM loop, where proposals' LLM
    calls go, and this returns the trial as it stands.
    """
    if _is_llm_lens_trial(trial_id):
        runtime().start(llm_trial_run(trial_id))
        return Trial.objects.filter(pk=trial_id).first()
    trial = _trial_claim(trial_id)
    if trial is None:
        return Trial.objects.filter(pk=trial_id).first()
    try:
        if trial.kind == Trial.Kind.LENS:
            lens = _trial_lens(trial)
            trial.result = lens_trial(
                lens=lens,
                content=trial.sample,
                thought_process=trial.thought_process,
                grounding_policy=trial.grounding_policy,
            )
        else:
            checker = CheckerConfig.objects.filter(pk=trial.target_id).first()
            if checker is None:
                raise TrialFailed("the checker no longer exists")
            trial.target_version = checker.version
            trial.result = checker_trial(checker=checker, content=trial.sample)
        trial.status = Trial.Status.DONE
    except Exception as exc:
        _trial_failed(trial, exc)
    return _trial_save(trial)


async def llm_trial_run(trial_id: int) -> None:
    """Run a pending trial of an LLM lens on the process's LLM loop. Safe to call twice.

    The call takes the same endpoint slots, client and time limit as a
    proposal's; the trial's row is read and written on the loop's one
    database thread, so trials add no database connection either.
    """
    rt = runtime()
    trial = await rt.on_db(_trial_claim, trial_id)
    if trial is None:
        return
    try:
        lens = await rt.on_db(_trial_lens, trial)
        if lens.backend != Lens.Backend.LLM:
            # Changed since the trial was started: nothing to wait on, run it as is.
            result = await rt.on_db(
                lens_trial,
                lens=lens,
                content=trial.sample,
                thought_process=trial.thought_process,
                grounding_policy=trial.grounding_policy,
            )
        else:
            try:
                outcome = await rt.judge_lens(
                    lens,
                    content=trial.sample,
                    thought_process=trial.thought_process,
                    policy=GroundingPolicy(trial.grounding_policy),
                    target_id=f"trial-{trial.pk}",
                )
            except LensFailed as exc:
                raise TrialFailed(str(exc)) from exc
            result = _lens_result(lens, outcome, trial.grounding_policy)
        trial.result = result
        trial.status = Trial.Status.DONE
    except Exception as exc:
        _trial_failed(trial, exc)
    await rt.on_db(_trial_save, trial)


@shared_task(name=TRIAL_TASK_NAME)
def run_trial(trial_id: int) -> None:
    trial_run(trial_id)
