"""What a panel would have done with a given set of verdicts, and how two configurations compare.

A replay runs a draft lens or panel on proposals humans already decided; this
is the part that needs no database: routing one proposal under a
configuration (the same table as the live final step, `routing.route`) and
counting a side's automatic decisions, escalations and contradictions of the
human decision.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .checkers import CheckVerdict
from .quorum import Quorum, Verdict
from .routing import route

ESCALATED = "escalated"


def replay_outcome(
    *,
    need: int,
    lenses: Iterable[str],
    verdicts: Mapping[str, str],
    checker_verdicts: Iterable[str] = (),
    requires_sign_off: bool = False,
) -> str:
    """ "approved", "rejected" or "escalated" for these verdicts under this panel.

    `verdicts` names each lens that answered ("pass"/"fail"); a lens of the panel
    missing from it never answered, as a failed lens in the live pipeline.
    """
    quorum = Quorum(need, lenses)
    answered = [(name, Verdict(verdicts[name])) for name in quorum.lenses if name in verdicts]
    missing = [name for name in quorum.lenses if name not in verdicts]
    routed = route(
        checker_verdicts=[CheckVerdict(v) for v in checker_verdicts],
        panel=quorum.tally(answered),
        failed_lenses=missing,
        requires_sign_off=requires_sign_off,
    )
    return routed.outcome or ESCALATED


@dataclass
class Side:
    """One configuration's outcomes on the replayed proposals."""

    approved: int = 0
    rejected: int = 0
    escalated: int = 0
    # Automatic decisions that differ from the human decision, by proposal id.
    contradictions: list[int] = field(default_factory=list)

    @property
    def automatic(self) -> int:
        return self.approved + self.rejected

    def count(self, *, proposal_id: int, outcome: str, human: str) -> None:
        if outcome == ESCALATED:
            self.escalated += 1
            return
        if outcome == "approved":
            self.approved += 1
        else:
            self.rejected += 1
        if outcome != human:
            self.contradictions.append(proposal_id)

    def to_dict(self) -> dict:
        return {
            "approved": self.approved,
            "rejected": self.rejected,
            "automatic": self.automatic,
            "escalated": self.escalated,
            "contradictions": sorted(self.contradictions),
        }


def compare(cases: Iterable[tuple[int, str, str, str]]) -> dict:
    """Both sides over (proposal id, human outcome, current outcome, draft outcome) rows."""
    current, draft = Side(), Side()
    for proposal_id, human, now, then in cases:
        current.count(proposal_id=proposal_id, outcome=now, human=human)
        draft.count(proposal_id=proposal_id, outcome=then, human=human)
    return {"current": current.to_dict(), "draft": draft.to_dict()}
