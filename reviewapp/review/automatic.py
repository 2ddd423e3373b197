"""Whether an outcome the panel's vote decided may stand without a person.

The routing table (`core.routing`) gives the final step an outcome. When the
panel's vote decided it alone (a vote pattern, `core.guarantee.patterns`), the
step asks the apps above review before it writes anything, by sending
`automatic_outcome_asked`; review defines the question and never imports an
answer. The guarantee app answers it (`reviewapp.guarantee.receivers`) in one
query. With no receiver, or one that has no say, the outcome stands, exactly
as the table gave it.
"""

from dataclasses import dataclass, field

from django.dispatch import Signal

from reviewapp.core.guarantee.patterns import VotePattern

from .models import Proposal

automatic_outcome_asked = Signal()
"""Sent by the final step (sender `Proposal`; `proposal`, `pattern`: its `VotePattern`)
inside its transaction, before the outcome is written. A receiver returns a `Ruling`,
or None to have no say; at most one receiver may rule."""


@dataclass(frozen=True)
class Ruling:
    """The answer: hold the outcome for a person, or let it stand; and how to audit it."""

    hold: bool
    # Why it goes to a person, for the escalation (when held).
    explanation: str = ""
    # Kept with the escalation, or with an audit of the decision, under "guarantee".
    detail: dict = field(default_factory=dict)
    # The percent of such decisions to audit; None: the panel's audit rate.
    audit_percent: float | None = None


class TwoRulings(RuntimeError):
    """Two apps answered: which one decides would depend on the order they were loaded."""


def automatic_outcome_ruling(*, proposal: Proposal, pattern: VotePattern) -> Ruling | None:
    answers = [
        ruling
        for _, ruling in automatic_outcome_asked.send(
            sender=Proposal, proposal=proposal, pattern=pattern
        )
        if ruling is not None
    ]
    if len(answers) > 1:
        raise TwoRulings(f"{len(answers)} receivers ruled on one automatic outcome; one may")
    return answers[0] if answers else None
