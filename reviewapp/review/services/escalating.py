"""Opening an escalation: the one way a proposal goes to people.

The final step's routing, a final step that keeps failing and an audit draw
all open one here, inside the transaction that makes it true: the row with the
proposal's search vector, the reviews it needs, and the assignment rules
applied. The two that hand the proposal itself to people then announce it
(`escalation_announce`); an audit does not, since its decision stands.
"""

from .. import events
from ..final_notice import proposal_final_notify
from ..models import Escalation, Panel, Proposal
from ..search import escalation_search_vector
from .assignments import escalation_assign_by_rules


def panel_reviews_needed(proposal: Proposal) -> int:
    """How many reviews an escalation of `proposal` will need (its panel's setting now)."""
    return Panel.objects.values_list("reviews_needed", flat=True).get(pk=proposal.panel_id)


def escalation_open(
    *,
    proposal: Proposal,
    reasons: list[str],
    detail: dict,
    reviews_needed: int | None = None,
) -> Escalation:
    """Open an escalation of `proposal` for `reasons` and assign it by the rules.

    `reviews_needed` is copied from the panel unless given (an audit takes one
    verdict whatever the panel says). The caller holds the transaction.
    """
    escalation = Escalation.objects.create(
        proposal=proposal,
        reasons=list(reasons),
        reviews_needed=panel_reviews_needed(proposal) if reviews_needed is None else reviews_needed,
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
