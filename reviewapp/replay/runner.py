"""Running a replay on the worker process's LLM loop, where live proposals' LLM calls go.

The task only hands the replay to the loop (``llm_loop.runtime``) and returns,
so no worker slot waits on a model; every LLM call takes its endpoint's shared
slots like live traffic's. The replay's state is in the database: each case is
written once when its lenses have answered (a conditional update, so a second
runner after a lost worker never counts a proposal twice), and whichever
delivery of the task claims the replay next runs only the cases still open.
"""

import asyncio
import copy
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import LensFailed
from reviewapp.core.replay import replay_outcome
from reviewapp.review.evaluation.evaluators import evaluate_lens
from reviewapp.review.evaluation.llm_loop import runtime
from reviewapp.review.models import Lens, Proposal

from .models import Replay, ReplayCase, stale_before
from .services import checker_verdicts, lenses_to_run, replay_store_result, stored_verdicts

log = logging.getLogger(__name__)


def replay_claim(replay_id: int) -> Replay | None:
    """The replay, now running here; None if it runs elsewhere, is not started or has ended."""
    now = timezone.now()
    # Conditional update: of two deliveries (or a sweep and a late delivery), one claims it.
    claimed = (
        Replay.objects.filter(pk=replay_id, status=Replay.Status.PENDING).update(
            status=Replay.Status.RUNNING, heartbeat_at=now
        )
    ) or (
        Replay.objects.filter(
            pk=replay_id, status=Replay.Status.RUNNING, heartbeat_at__lt=stale_before()
        ).update(heartbeat_at=now)
    )
    return Replay.objects.get(pk=replay_id) if claimed else None


def _heartbeat(replay_id: int) -> str:
    """Refresh the replay's heartbeat; its status, so a cancel is seen."""
    Replay.objects.filter(pk=replay_id, status=Replay.Status.RUNNING).update(
        heartbeat_at=timezone.now()
    )
    return Replay.objects.filter(pk=replay_id).values_list("status", flat=True).first() or ""


def _draft_lens(stored: Lens, changes: dict) -> Lens:
    """The lens as the draft has it: an unsaved copy, never written."""
    lens = copy.copy(stored)
    for name, value in changes.items():
        setattr(lens, name, value)
    return lens


def _open_cases(replay: Replay) -> list[dict]:
    """What each unfinished case needs: its text, the verdicts it reuses, the lenses to run."""
    draft = replay.draft
    lenses = Lens.objects.in_bulk([lens["id"] for lens in draft["lenses"]])
    cases = list(
        ReplayCase.objects.filter(replay=replay, done_at__isnull=True).select_related("proposal")
    )
    ids = [case.proposal_id for case in cases]
    stored, checks = stored_verdicts(ids), checker_verdicts(ids)
    work = []
    for case in cases:
        by_id = stored.get(case.proposal_id, {})
        run = lenses_to_run(draft, by_id)
        run_ids = {lens["id"] for lens in run}
        work.append(
            {
                "case": case.pk,
                "proposal": case.proposal,
                "reused": {
                    lens["name"]: by_id[lens["id"]]
                    for lens in draft["lenses"]
                    if lens["id"] not in run_ids and lens["id"] in by_id
                },
                "run": [
                    _draft_lens(lenses[lens["id"]], lens["changes"])
                    for lens in run
                    if lens["id"] in lenses
                ],
                "checks": checks.get(case.proposal_id, []),
            }
        )
    return work


def _case_save(case_id: int, outcome: str, verdicts: dict, calls: int) -> bool:
    # Conditional update: a case finished by an earlier runner is not counted again.
    return bool(
        ReplayCase.objects.filter(pk=case_id, done_at__isnull=True).update(
            draft_outcome=outcome, draft_verdicts=verdicts, calls=calls, done_at=timezone.now()
        )
    )


def _finish(replay_id: int) -> None:
    """Mark the replay done once every case is; store the side-by-side counts either way.

    One transaction: a reader never sees it done without its counts.
    """
    with transaction.atomic():
        if not ReplayCase.objects.filter(replay_id=replay_id, done_at__isnull=True).exists():
            Replay.objects.filter(pk=replay_id, status=Replay.Status.RUNNING).update(
                status=Replay.Status.DONE, finished_at=timezone.now()
            )
        replay_store_result(replay_id)


def _fail(replay_id: int, error: str) -> None:
    with transaction.atomic():  # as _finish: the failure and its counts together
        Replay.objects.filter(pk=replay_id, status=Replay.Status.RUNNING).update(
            status=Replay.Status.FAILED, error=error, finished_at=timezone.now()
        )
        replay_store_result(replay_id)


async def _judge(rt, lens: Lens, proposal: Proposal, replay_id: int) -> tuple[str, int]:
    """(verdict or "failed: why", calls made) of one draft lens on one proposal."""
    policy = GroundingPolicy(proposal.panel_snapshot["grounding_policy"])
    try:
        if lens.backend == Lens.Backend.LLM:
            outcome = await rt.judge_lens(
                lens,
                content=proposal.content,
                thought_process=proposal.thought_process,
                policy=policy,
                target_id=f"replay-{replay_id}-{proposal.pk}",
            )
        else:
            outcome = await rt.on_db(evaluate_lens, lens=lens, proposal=proposal)
    except LensFailed as exc:
        return f"failed: {exc}", exc.attempts
    return outcome.verdict, outcome.transport_calls


async def _run_case(rt, replay: Replay, item: dict) -> None:
    answers = await asyncio.gather(
        *(_judge(rt, lens, item["proposal"], replay.pk) for lens in item["run"])
    )
    verdicts = dict(item["reused"])
    shown = {name: {"verdict": v, "reused": True} for name, v in item["reused"].items()}
    for lens, (verdict, _calls) in zip(item["run"], answers, strict=True):
        shown[lens.name] = {"verdict": verdict, "reused": False}
        if verdict in ("pass", "fail"):
            verdicts[lens.name] = verdict
    draft = replay.draft
    outcome = replay_outcome(
        need=draft["need"],
        lenses=[lens["name"] for lens in draft["lenses"]],
        verdicts=verdicts,
        checker_verdicts=item["checks"],
        requires_sign_off=draft["requires_sign_off"],
    )
    calls = sum(c for _, c in answers)
    await rt.on_db(_case_save, item["case"], outcome, shown, calls)


async def replay_run_async(replay_id: int) -> None:
    """Claim the replay and run its open cases at once; safe to call twice, and after a crash."""
    rt = runtime()
    replay = await rt.on_db(replay_claim, replay_id)
    if replay is None:
        return
    try:
        work = await rt.on_db(_open_cases, replay)
        tasks = [asyncio.ensure_future(_run_case(rt, replay, item)) for item in work]
        every = max(0.5, min(2.0, settings.REVIEWAPP_STUCK_AFTER_SECONDS / 4))
        pending = set(tasks)
        while pending:
            _done, pending = await asyncio.wait(pending, timeout=every)
            if await rt.on_db(_heartbeat, replay_id) != Replay.Status.RUNNING:
                for task in pending:  # cancelled: the calls in flight are abandoned
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                break
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()
    except Exception as exc:  # a replay reports, it never crashes the worker's loop
        log.error("replay %s crashed", replay_id, exc_info=exc)
        await rt.on_db(_fail, replay_id, f"{type(exc).__name__}: {exc}")
        return
    await rt.on_db(_finish, replay_id)
