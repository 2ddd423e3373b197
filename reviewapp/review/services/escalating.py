"""Opening an escalation: the one way a proposal goes to people.

The final step's routing, a final step that keeps failing and an audit draw
all open one here, inside the transaction that makes it true: the row with the
proposal's search vector, the reviews it needs and its deadline (its panel's
now), and the assignment rules applied. The two that hand the proposal itself
to people then announce it (`escalation_announce`); an audit does not, since
its decision stands.
"""

from datetime import datetime

from django.utils import timezone

from .. import events
from ..final_notice import proposal_final_notify
from ..models import Escalation, Panel, Proposal
from ..search import escalation_search_vector
from .assignments import escalation_assign_by_rules


def escalation_terms(proposal: Proposal, now: datetime | None = None) -> dict:
    """What a new escalation of `proposal` copies from its panel now: the reviews it needs
    and, if the panel has a review deadline, when it falls due, what happens then and
    when the people holding it are reminded. One query."""
    reviews_needed, deadline, on_deadline, reminder = Panel.objects.values_list(
        "reviews_needed", "review_deadline", "on_deadline", "deadline_reminder"
    ).get(pk=proposal.panel_id)
    terms = {"reviews_needed": reviews_needed}
    if deadline is not None:
        now = now or timezone.now()
        terms["due_at"] = now + deadline
        terms["on_deadline"] = on_deadline
        if reminder is not None and reminder < deadline:
            terms["remind_at"] = now + deadline - reminder
    return terms


def escalation_open(
    *,
    proposal: Proposal,
    reasons: list[str],
    detail: dict,
    terms: dict | None = None,
) -> Escalation:
    """Open an escalation of `proposal` for `reasons` and assign it by the rules.

    Its `terms` (the reviews it needs, its deadline) are copied from the panel
    unless given: an audit takes one verdict and has no deadline, whatever the
    panel says, since the decision it audits stands. The caller holds the
    transaction.
    """
    escalation = Escalation.objects.create(
        proposal=proposal,
        reasons=list(reasons),
        **(escalation_terms(proposal) if terms is None else terms),
        search=escalation_search_vector(proposal.pk),
        detail=detail,
    )
    escalation_assign_by_rules(escalation=escalation, panel_id=proposal.panel_id)
    return escalation


def escalation_announce(*, escalation: Escalation) -> None:
    """The proposal went to people: the event commits with the escalation (its webhook's
    outbox row), and calls waiting on the proposal are woken once it is committed."""
    events.proposal_escalated.send(sender=Escalation, escalation=escalation)
    proposal_final_notify(proposal_id=escalation.proposal_id)
