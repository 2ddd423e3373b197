"""The routing table (docs/architecture.md) as a total function of what the machines said.

| checkers                    | panel        | result                                   |
|-----------------------------|--------------|------------------------------------------|
| any fail                    | any          | rejected                                 |
| any inconclusive, none fail | any          | escalated                                |
| all pass                    | no quorum    | escalated                                |
| all pass                    | reached fail | rejected                                 |
| all pass                    | reached pass | approved, or escalated for sign-off      |
| all pass                    | reached      | escalated, if the panel's guarantee does |
|                             |              | not (yet) trust its vote pattern         |

A lens that never answered is a missing judgement, not an abstention: when one
is missing the machines may still reject (a rejection never commits anything),
but they may not approve, so the proposal goes to a human naming the lens.

The last row is asked of the panel's guarantee by the final step once `route`
gives an outcome the panel's vote decided (`core.guarantee.patterns`): the
table itself knows nothing of human labels.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from .checkers import CheckVerdict
from .quorum import NoQuorum, Reached, Verdict

NO_QUORUM = "no_quorum"
INCONCLUSIVE = "inconclusive"
LENS_FAILED = "lens_failed"
SIGN_OFF = "sign_off"
BELOW_GUARANTEE = "below_guarantee"

APPROVED = "approved"
REJECTED = "rejected"


@dataclass(frozen=True)
class Route:
    """Either a system outcome, or the reasons a human must decide."""

    outcome: str | None
    explanation: str
    reasons: tuple[str, ...] = field(default=())

    @property
    def escalates(self) -> bool:
        return self.outcome is None


def route(
    *,
    checker_verdicts: Iterable[CheckVerdict],
    panel: Reached | NoQuorum,
    failed_lenses: Iterable[str] = (),
    requires_sign_off: bool = False,
) -> Route:
    verdicts = list(checker_verdicts)
    lens_failed = (LENS_FAILED,) if tuple(failed_lenses) else ()
    if CheckVerdict.FAIL in verdicts:
        return Route(REJECTED, "a checker failed")
    if CheckVerdict.INCONCLUSIVE in verdicts:
        no_quorum = (NO_QUORUM,) if isinstance(panel, NoQuorum) else ()
        return Route(None, "a checker was inconclusive", (INCONCLUSIVE, *no_quorum, *lens_failed))
    if isinstance(panel, NoQuorum):
        return Route(None, "the panel reached no quorum", (NO_QUORUM, *lens_failed))
    if panel.verdict is Verdict.FAIL:
        return Route(REJECTED, "the panel reached fail")
    if lens_failed:
        return Route(None, "a lens never answered", lens_failed)
    if requires_sign_off:
        return Route(None, "the panel asks for sign-off", (SIGN_OFF,))
    return Route(APPROVED, "the panel reached pass and every checker passed")


def below_guarantee(explanation: str) -> Route:
    """The table's last row: an outcome the guarantee does not trust goes to a person."""
    return Route(None, explanation, (BELOW_GUARANTEE,))
