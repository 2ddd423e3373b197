"""Celery tasks: take ids, re-fetch, call a service. Each is safe to run twice.

Each task keeps the name it had when this module was ``reviewapp.review.tasks``:
messages already queued, and the beat schedule, route by that name.
"""

import json
import logging
from datetime import timedelta
from functools import partial

from celery import current_app, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection

from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import FailureKind, JudgeOutcome, LensFailed

from ..models import Lens, Proposal, RecordedResponse
from ..services.final_step import (
    proposal_escalate_final_step,
    proposal_final_step_attempt,
    proposal_final_step_failed,
)
from ..services.finalize import proposal_finalize
from ..services.judgements import (
    LensAnswer,
    answered_lens_ids,
    judgement_answer,
    lens_answers_record,
    lens_failure_answer,
)
from ..services.proposals import (
    external_lens_ids,
    proposal_begin_evaluation,
    proposal_swept,
    proposals_past_external_deadline,
    proposals_stuck,
    worker_lens_ids,
)
from ..statements import lenses_by_pk, proposal_row
from . import llm_loop
from .evaluators import evaluate_lens
from .llm_loop import answer_outcome

log = logging.getLogger(__name__)


@shared_task(name="reviewapp.review.tasks.evaluate_proposal")
def evaluate_proposal(
    proposal_id: int, llm_answers: list[dict] | None = None, swept: bool = False
) -> None:
    """A proposal's task: its CPU lenses inline, its LLM lenses on the loop, the final step.

    The CPU lenses (constraints, recorded) run here, so a proposal with no LLM
    lens costs this one task. The LLM lenses are handed to this process's
    event loop (``llm_loop``), which judges them with every other proposal's
    while this task returns; their answers are recorded and the final step
    run in this process (``_finish_llm_answers_here``), or they come back
    here as ``llm_answers`` in one more task. The sweeper comes back in here with
    ``swept``: whatever is still missing is run or sent again, until it has
    been re-sent REVIEWAPP_SWEEP_ATTEMPTS times; after that the lenses still
    missing are failed, saying so. A final step that keeps not finishing is
    escalated after REVIEWAPP_FINAL_STEP_ATTEMPTS runs. Outstanding external
    lenses are waited for by the sweeper's deadline check.
    """
    proposal = proposal_row.first(proposal_id)
    if proposal is None or proposal.is_final:
        return
    if swept and proposal.all_lenses_answered:
        # Every lens answered long ago: only the final step is left, and an
        # earlier run of it failed or never finished.
        _final_step(proposal_id, loaded=proposal, retry=True)
        return
    worker_lenses = worker_lens_ids(proposal.panel_snapshot)
    by_id = lenses_by_pk.in_bulk(worker_lenses)
    if len(by_id) < len(worker_lenses):
        # A lens deleted since submission will never answer: the final step
        # escalates the proposal now, naming it, instead of it waiting forever.
        _final_step(proposal_id, deadline_passed=True)
        return
    answered = answered_lens_ids(proposal_id) if proposal.lenses_answered else set()
    if proposal.status == Proposal.Status.QUEUED:
        proposal_begin_evaluation(proposal_id=proposal_id)
    llm_by_lens = {answer["lens"]: answer for answer in llm_answers or ()}
    todo = [by_id[i] for i in worker_lenses if i not in answered]
    if swept and todo and proposal.sweeps > settings.REVIEWAPP_SWEEP_ATTEMPTS:
        stalled = _stalled(proposal.sweeps)
        answers = [_answer(proposal, lens, stalled) for lens in todo]
        completes = proposal.lenses_answered + len(answers) >= proposal.lenses_asked
        _record_and_finish(proposal, answers, completes=completes)
        return
    # The answers computed or delivered here, recorded together: one lock, one commit.
    answers = [
        _answer(proposal, lens, answer_outcome(llm_by_lens[lens.pk]))
        for lens in todo
        if lens.backend == Lens.Backend.LLM and lens.pk in llm_by_lens
    ]
    llm_pending = [
        lens for lens in todo if lens.backend == Lens.Backend.LLM and lens.pk not in llm_by_lens
    ]
    answers += _cpu_answers(proposal, [lens for lens in todo if lens.backend != Lens.Backend.LLM])
    if llm_pending and llm_answers is None:
        if answers:
            lens_answers_record(proposal_id=proposal_id, answers=answers)
        _hand_to_the_loop(proposal, llm_pending)
        return
    if not answers:
        # Nothing left to answer here (a re-delivery): finish what a lost run began.
        _final_step(proposal_id)
        return
    completes = proposal.lenses_answered + len(answers) >= proposal.lenses_asked
    _record_and_finish(proposal, answers, completes=completes)


def _cpu_answers(proposal: Proposal, lenses: list[Lens]) -> list[LensAnswer]:
    """The CPU lenses' answers, judged here in turn. Once the task's soft time limit is
    reached, this lens and the ones after it fail at once, so the proposal ends instead of
    waiting for the sweeper."""
    recorded = _recorded_responses(proposal, lenses)
    answers, out_of_time = [], None
    for lens in lenses:
        if out_of_time is not None:
            outcome = LensFailed(out_of_time, 0, [], kind=FailureKind.TIMEOUT)
        else:
            try:
                outcome = evaluate_lens(lens=lens, proposal=proposal, recorded=recorded)
            except LensFailed as exc:
                outcome = exc
            except SoftTimeLimitExceeded:
                out_of_time = "the worker's time limit was reached before this lens answered"
                outcome = LensFailed(out_of_time, 0, [], kind=FailureKind.TIMEOUT)
        answers.append(_answer(proposal, lens, outcome))
    return answers


def _hand_to_the_loop(proposal: Proposal, lenses: list[Lens]) -> None:
    """The LLM lenses go to this process's loop; their answers are recorded here or sent on."""
    llm_loop.judge_in_background(
        llm_loop.LlmJob(
            proposal_id=proposal.pk,
            content=proposal.content,
            thought_process=proposal.thought_process,
            policy=GroundingPolicy(proposal.panel_snapshot["grounding_policy"]),
            lenses=lenses,
            finish_here=partial(_finish_llm_answers_here, proposal, lenses),
            deliver=partial(_deliver_llm_answers, proposal.pk),
        )
    )


def _stalled(sweeps: int) -> LensFailed:
    """Why a lens still unanswered after the sweeper's last re-send failed."""
    return LensFailed(
        f"no answer though the sweeper re-sent this proposal {sweeps} times "
        f"(REVIEWAPP_SWEEP_ATTEMPTS allows {settings.REVIEWAPP_SWEEP_ATTEMPTS} before it gives "
        "up): each time its worker was lost or its call never ended; see the worker logs",
        0,
        [],
        kind=FailureKind.TIMEOUT,
    )


def _record_and_finish(proposal: Proposal, answers: list[LensAnswer], *, completes: bool) -> None:
    """Record answers; run the final step here if the panel is then complete.

    Answers expected to complete the panel are written by the final step
    itself, under its lock, rather than in a transaction of their own. If this
    worker dies first, the task's re-delivery (or the sweeper) runs it again.
    """
    if completes:
        _final_step(proposal.pk, loaded=proposal, answers=answers)
        return
    counted = lens_answers_record(proposal_id=proposal.pk, answers=answers)
    if counted is not None and counted.all_lenses_answered:
        # The lens that was still to answer (an external one) answered meanwhile.
        _final_step(proposal.pk, loaded=proposal)


def _finish_llm_answers_here(proposal: Proposal, lenses: list[Lens], answers: list[dict]) -> None:
    """A proposal's LLM answers, recorded in the process that judged them.

    From what its first task read (the proposal, the lenses): no second read.
    Its CPU lenses answered before the LLM lenses were handed over, so these
    complete the panel unless an external lens is on it.
    """
    by_lens = {answer["lens"]: answer for answer in answers}
    recorded = [
        _answer(proposal, lens, answer_outcome(by_lens[lens.pk]))
        for lens in lenses
        if lens.pk in by_lens
    ]
    completes = not external_lens_ids(proposal.panel_snapshot)
    _record_and_finish(proposal, recorded, completes=completes)


# Answers sent on through the queue go behind waiting first tasks (Redis's
# lowest priority step; the embedded broker keeps one order): a first task
# starts LLM calls, whose latency the final steps then hide.
ANSWERS_PRIORITY = 9


def _deliver_llm_answers(proposal_id: int, answers: list[dict]) -> None:
    evaluate_proposal.apply_async((proposal_id, answers), priority=ANSWERS_PRIORITY)


def _recorded_responses(proposal: Proposal, lenses: list[Lens]) -> dict[int, list]:
    """The stored responses of the proposal's recorded lenses, in one query.

    Raw SQL: it runs for every proposal of recorded lenses, and the ORM spends longer
    composing it than the database spends answering it.
    """
    ids = [lens.pk for lens in lenses if lens.backend == Lens.Backend.RECORDED]
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT lens_id, responses FROM {RecordedResponse._meta.db_table}"
            f" WHERE content_sha256 = %s AND lens_id IN ({', '.join(['%s'] * len(ids))})",
            [proposal.content_sha256, *ids],
        )
        # Both backends hand JSON columns back as text (Django decodes them in the ORM).
        return {lens_id: json.loads(responses) for lens_id, responses in cursor.fetchall()}


def _answer(proposal: Proposal, lens: Lens, outcome: JudgeOutcome | LensFailed) -> LensAnswer:
    """A lens's outcome, ready to record: its judgement, or its failure."""
    if isinstance(outcome, LensFailed):
        log.warning("lens %s failed on proposal %s: %s", lens.name, proposal.pk, outcome)
        return lens_failure_answer(
            lens=lens, error=str(outcome), attempts=outcome.attempts, kind=outcome.kind
        )
    return judgement_answer(
        lens=lens,
        verdict=outcome.verdict,
        rationale=outcome.rationale,
        claims=outcome.claims,
        dropped_cites=outcome.unresolved
        if proposal.panel_snapshot["grounding_policy"] == "reject"
        else [],
        raw_response=outcome.raw_response,
        attempts=outcome.transport_calls,
        requote_rounds=outcome.requote_rounds,
    )


def _final_step(
    proposal_id: int,
    *,
    loaded: Proposal | None = None,
    retry: bool = False,
    answers: list[LensAnswer] = (),
    **kwargs,
) -> None:
    """The final step, bounded: one that keeps failing or dying is escalated, not retried forever.

    A retry (the sweeper found the proposal fully answered but not final) is
    counted before it runs, so runs that die outright (a killed worker, a
    hard time limit) count too; an error's text is kept for the escalation.
    `answers` complete the panel and are written by the step itself; if the
    step fails they are recorded on their own, so the failure is counted like
    any other final step's and the sweeper's retries stay bounded.
    """
    if retry:
        attempts = proposal_final_step_attempt(proposal_id=proposal_id)
        if attempts >= settings.REVIEWAPP_FINAL_STEP_ATTEMPTS:
            proposal_escalate_final_step(proposal_id=proposal_id, attempts=attempts)
            return
    try:
        proposal_finalize(proposal_id=proposal_id, loaded=loaded, answers=answers, **kwargs)
    except Exception as exc:
        if answers:
            # The step's transaction took the answers with it.
            lens_answers_record(proposal_id=proposal_id, answers=answers)
        proposal_final_step_failed(proposal_id=proposal_id, error=f"{type(exc).__name__}: {exc}")
        raise


@shared_task(name="reviewapp.review.tasks.finalize_proposal")
def finalize_proposal(proposal_id: int, deadline_passed: bool = False) -> None:
    proposal_finalize(proposal_id=proposal_id, deadline_passed=deadline_passed)


def broker_backlog() -> int:
    """Messages waiting in the queue (not counting those a worker holds)."""
    # Declared, not asked passively: kombu's Redis transport checks a queue's existence
    # with a command it does not prefix (EXISTS), so under a `global_keyprefix` a
    # passive declare calls every queue missing. Declaring is what a worker does anyway.
    with current_app.connection_for_read() as conn:
        return conn.default_channel.queue_declare(
            queue=current_app.conf.task_default_queue
        ).message_count


@shared_task(name="reviewapp.review.tasks.sweep_stuck_proposals")
def sweep_stuck_proposals() -> int:
    """Re-enqueue proposals that stopped moving (a worker died, a message was lost).

    Only while the queue is empty: a backlog means work is still flowing, and
    re-enqueueing proposals that are merely waiting behind it multiplies the
    very load that made them wait.
    """
    if broker_backlog():
        return 0
    stuck = proposals_stuck(older_than=timedelta(seconds=settings.REVIEWAPP_STUCK_AFTER_SECONDS))
    for proposal_id in stuck:
        proposal_swept(proposal_id=proposal_id)
        evaluate_proposal.delay(proposal_id, swept=True)
    deadline_sweep()
    return len(stuck)


def deadline_sweep() -> None:
    """Finalize proposals whose external deadline has passed."""
    for proposal_id in proposals_past_external_deadline():
        finalize_proposal.delay(proposal_id, deadline_passed=True)
