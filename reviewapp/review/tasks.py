"""Celery tasks: take ids, re-fetch, call a service. Each is safe to run twice."""

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings

from reviewapp.core.judging import LensFailed

from .evaluators import evaluate_lens
from .models import Lens, Proposal
from .services.finalize import proposal_finalize
from .services.judgements import judgement_record, lens_failure_record
from .services.proposals import (
    lenses_to_run,
    proposal_begin_evaluation,
    proposal_touch,
    proposals_past_external_deadline,
    proposals_stuck,
)

log = logging.getLogger(__name__)


@shared_task
def evaluate_proposal(proposal_id: int) -> None:
    """Fan the proposal out to one task per lens that still has to answer."""
    proposal = proposal_begin_evaluation(proposal_id=proposal_id)
    if proposal is None:
        return
    lenses = lenses_to_run(proposal)
    for lens in lenses:
        run_lens.delay(proposal_id, lens.pk)
    # With every lens answered already (a re-delivery) only the final step is
    # left. Outstanding external lenses are waited for by the sweeper's
    # deadline check.
    if proposal.lenses_answered >= proposal.lenses_asked:
        finalize_proposal.delay(proposal_id)


@shared_task
def run_lens(proposal_id: int, lens_id: int) -> None:
    proposal = Proposal.objects.filter(pk=proposal_id).first()
    lens = Lens.objects.filter(pk=lens_id).first()
    if proposal is None or lens is None or proposal.is_final:
        return
    if (
        proposal.judgements.filter(lens=lens).exists()
        or proposal.lens_failures.filter(lens=lens).exists()
    ):
        return
    try:
        outcome = evaluate_lens(lens=lens, proposal=proposal)
    except LensFailed as exc:
        log.warning("lens %s failed on proposal %s: %s", lens.name, proposal_id, exc)
        lens_failure_record(
            proposal_id=proposal_id, lens=lens, error=str(exc), attempts=exc.attempts
        )
        return
    judgement_record(
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
    )


@shared_task
def finalize_proposal(proposal_id: int, deadline_passed: bool = False) -> None:
    proposal_finalize(proposal_id=proposal_id, deadline_passed=deadline_passed)


@shared_task
def sweep_stuck_proposals() -> int:
    """Re-enqueue proposals that stopped moving (a worker died, a message was lost)."""
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
