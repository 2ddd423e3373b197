"""A submitter taking a proposal back before it is decided (MCP `tasks/cancel`)."""

from django.db import transaction
from django.utils import timezone

from .. import events
from ..final_notice import proposal_final_notify
from ..models import ApiClient, Escalation, Proposal, ReviewClaim


class WithdrawRefused(Exception):
    """The proposal cannot be withdrawn; the message says why."""


class TooLateToWithdraw(WithdrawRefused):
    """The proposal was decided first: the signed decision stands."""


def proposal_withdraw(*, proposal_id: int, client: ApiClient) -> Proposal:
    """Withdraw a proposal its `client` submitted, unless it is decided; idempotent.

    Its pending lenses and final step find it final and stop; an escalation
    waiting for a person is closed as withdrawn (claims dropped, no decision).
    Locks are taken in the order a reviewer's verdict and the deadline worker
    take them, the escalation before the proposal, so neither can deadlock with
    this; a proposal escalated between the read and the lock is read again.
    """
    for _ in range(3):
        status = Proposal.objects.filter(pk=proposal_id).values_list("status", flat=True).first()
        with transaction.atomic():
            escalation = None
            if status == Proposal.Status.ESCALATED:
                escalation = (
                    Escalation.objects.select_for_update()
                    .filter(proposal_id=proposal_id, status__in=Escalation.UNDECIDED)
                    .first()
                )
            proposal = Proposal.objects.select_for_update().get(pk=proposal_id)
            if proposal.client_id != client.pk:
                raise WithdrawRefused("only the client that submitted a proposal may withdraw it")
            if proposal.status == Proposal.Status.WITHDRAWN:
                return proposal
            if proposal.status == Proposal.Status.DECIDED:
                outcome = proposal.decision.outcome
                raise TooLateToWithdraw(
                    f"too late to withdraw proposal {proposal_id}: it was already {outcome}, "
                    "and its signed decision stands"
                )
            if proposal.status == Proposal.Status.ESCALATED and escalation is None:
                continue  # escalated (or its escalation decided) since the read: again
            _withdraw(proposal, escalation)
            return proposal
    raise WithdrawRefused(f"proposal {proposal_id} kept changing; try again")


def _withdraw(proposal: Proposal, escalation: Escalation | None) -> None:
    now = timezone.now()
    if escalation is not None:
        escalation.status = Escalation.Status.WITHDRAWN
        escalation.resolved_at = now
        escalation.claimed_by = None
        escalation.claimed_at = None
        escalation.search = None  # only waiting escalations are searched
        escalation.save(
            update_fields=["status", "resolved_at", "claimed_by", "claimed_at", "search"]
        )
        ReviewClaim.objects.filter(escalation=escalation).delete()
    proposal.status = Proposal.Status.WITHDRAWN
    proposal.save(update_fields=["status", "updated_at"])
    events.proposal_withdrawn.send(sender=Proposal, proposal=proposal, escalation=escalation)
    proposal_final_notify(proposal_id=proposal.pk)  # wakes wait_for_review
