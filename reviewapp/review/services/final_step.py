"""Bounding the final step: one that keeps failing escalates instead of looping.

The sweeper re-sends a proposal whose lenses all answered but which is not
final. Each such retry is counted before it runs (so a run that kills its
worker counts too); the last error, if there was one, is kept. Past
REVIEWAPP_FINAL_STEP_ATTEMPTS the proposal is escalated to a person with a
reason saying so, and nothing more is retried.
"""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ..models import Escalation, Proposal
from .escalating import escalation_announce, escalation_open

ERROR_LIMIT = 2000


def storable_text(text: str) -> str:
    """Text any database accepts: no NUL (PostgreSQL refuses it), no lone surrogate."""
    cleaned = text.replace("\x00", "\ufffd")[:ERROR_LIMIT]
    return cleaned.encode("utf-8", "replace").decode("utf-8")


def proposal_final_step_attempt(*, proposal_id: int) -> int:
    """Count one more retry of the final step; the count so far."""
    # Conditional update with F(): two sweeps racing each count once.
    Proposal.objects.filter(pk=proposal_id).update(final_step_attempts=F("final_step_attempts") + 1)
    return (
        Proposal.objects.filter(pk=proposal_id)
        .values_list("final_step_attempts", flat=True)
        .first()
        or 0
    )


def proposal_final_step_failed(*, proposal_id: int, error: str) -> None:
    """Keep why the final step failed, for the escalation that may follow."""
    Proposal.objects.filter(pk=proposal_id).update(final_step_error=storable_text(error))


def proposal_escalate_final_step(*, proposal_id: int, attempts: int) -> Escalation | None:
    """Hand the proposal to a person: its final step failed or died `attempts` times."""
    with transaction.atomic():
        # The row lock: a final step that does succeed meanwhile wins, and
        # this writes nothing.
        proposal = (
            Proposal.objects.select_for_update()
            .only("id", "status", "final_step_error", "panel_id")
            .get(pk=proposal_id)
        )
        if proposal.is_final:
            return None
        last_error = proposal.final_step_error or "no error was recorded (the worker was lost)"
        escalation = escalation_open(
            proposal=proposal,
            reasons=[Escalation.Reason.FINAL_STEP_FAILED.value],
            detail={
                "explanation": (
                    f"The final step (checkers, tally, routing) did not finish after {attempts} "
                    f"attempts, so it is no longer retried. Last error: {last_error}"
                ),
                "failed_lenses": [],
                "inconclusive_checkers": [],
            },
        )
        proposal.status = Proposal.Status.ESCALATED
        proposal.finalized_at = timezone.now()
        proposal.save(update_fields=["status", "finalized_at", "updated_at"])
        escalation_announce(escalation=escalation)
    return escalation
