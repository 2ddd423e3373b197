"""Celery tasks: take ids, re-fetch, call a service. Each is safe to run twice."""

import logging
from datetime import timedelta

from celery import current_app, shared_task
from django.conf import settings
from kombu.exceptions import ChannelError

from reviewapp.core.judging import LensFailed

from .evaluators import evaluate_lens
from .models import Lens, Proposal
from .services.finalize import proposal_finalize
from .services.judgements import judgement_record, lens_failure_record
from .services.proposals import (
    lenses_to_run,
    proposal_for_lens,
    proposal_touch,
    proposals_past_external_deadline,
    proposals_stuck,
)

log = logging.getLogger(__name__)


@shared_task
def evaluate_proposal(proposal_id: int) -> None:
    """Re-enqueue what a stuck proposal still needs: its unanswered lenses, or the final step.

    Submission enqueues the lenses itself; this is the sweeper's way back in.
    Outstanding external lenses are waited for by the sweeper's deadline check.
    """
    proposal = Proposal.objects.filter(pk=proposal_id).first()
    if proposal is None or proposal.is_final:
        return
    for lens in lenses_to_run(proposal):
        run_lens.delay(proposal_id, lens.pk)
    if proposal.all_lenses_answered:
        finalize_proposal.delay(proposal_id)


@shared_task
def run_lens(proposal_id: int, lens_id: int) -> None:
    """Judge the proposal with one lens; the lens that answers last runs the final step."""
    try:
        lens = Lens.objects.get(pk=lens_id)
    except Lens.DoesNotExist:
        return
    proposal = proposal_for_lens(proposal_id=proposal_id, lens=lens)
    if proposal is None:
        # Final, or a re-delivered task whose lens answered: if the worker that
        # recorded the last answer died before the final step, run it now.
        proposal_finalize(proposal_id=proposal_id)
        return
    try:
        outcome = evaluate_lens(lens=lens, proposal=proposal)
    except LensFailed as exc:
        log.warning("lens %s failed on proposal %s: %s", lens.name, proposal_id, exc)
        answer = lens_failure_record(
            proposal_id=proposal_id,
            lens=lens,
            error=str(exc),
            attempts=exc.attempts,
            enqueue_final_step=False,
        )
    else:
        answer = judgement_record(
            proposal_id=proposal_id,
            lens=lens,
            verdict=outcome.verdict,
            rationale=outcome.rationale,
            claims=outcome.claims,
            dropped_cites=outcome.unresolved_cites
            if proposal.panel_snapshot["grounding_policy"] == "reject"
            else [],
            raw_response=outcome.raw_response,
            attempts=outcome.transport_calls,
            requote_rounds=outcome.requote_rounds,
            enqueue_final_step=False,
        )
    # The answer is committed; the final step runs here rather than as one
    # more task. If this worker dies first, the task's re-delivery or the
    # sweeper finds every lens answered and runs it.
    if answer is None:
        proposal_finalize(proposal_id=proposal_id)
    elif answer.proposal.all_lenses_answered:
        proposal_finalize(proposal_id=proposal_id, loaded=proposal)


@shared_task
def finalize_proposal(proposal_id: int, deadline_passed: bool = False) -> None:
    proposal_finalize(proposal_id=proposal_id, deadline_passed=deadline_passed)


def broker_backlog() -> int:
    """Messages waiting in the default queue (not counting those a worker holds)."""
    with current_app.connection_for_read() as conn:
        try:
            return conn.default_channel.queue_declare(
                queue=current_app.conf.task_default_queue, passive=True
            ).message_count
        except ChannelError:  # never declared: nothing was ever sent
            return 0


@shared_task
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
        proposal_touch(proposal_id=proposal_id)
        evaluate_proposal.delay(proposal_id)
    deadline_sweep()
    return len(stuck)


def deadline_sweep() -> None:
    """Finalize proposals whose external deadline has passed."""
    for proposal_id in proposals_past_external_deadline():
        finalize_proposal.delay(proposal_id, deadline_passed=True)
