"""What a panel would have done with a given set of verdicts, and how two configurations compare.

A replay runs a draft lens or panel on proposals humans already decided; this
is the part that needs no database: routing one proposal under a
configuration (the same table as the live final step, `routing.route`),
counting a side's automatic decisions, escalations and contradictions of the
human decision, and what each lens's verdicts did on either side.
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


def share_text(count: int, total: int) -> str:
    """ "16 of 41 (39 %)": a count with what it is out of, for people."""
    if not total:
        return f"{count} of 0"
    return f"{count} of {total} ({round(100 * count / total)} %)"


@dataclass
class LensChange:
    """One lens on the replayed proposals: its stored verdicts beside the draft's."""

    lens: str
    current_judged: int = 0  # proposals with a stored pass/fail of this lens in the current panel
    current_right: int = 0  # of those, the verdicts that match the human decision
    draft_judged: int = 0
    draft_right: int = 0
    pass_to_fail: int = 0  # a stored pass that the draft judged fail
    fail_to_pass: int = 0
    no_answer: int = 0  # the draft asked and got no verdict (an error, a timeout)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _right(verdict: str, human: str) -> bool:
    return (verdict == "pass") == (human == "approved")


def lens_changes(
    rows: Iterable[tuple[str, Mapping[str, str], Mapping[str, str]]],
) -> list[LensChange]:
    """Per lens of either configuration, over (human outcome, current verdicts, draft verdicts)
    rows, each by lens name: how often it matched the human decision on each side, and which
    verdicts the draft changed. A draft verdict other than pass/fail is a lens that failed."""
    by_lens: dict[str, LensChange] = {}
    for human, current, draft in rows:
        for name in {*current, *draft}:
            change = by_lens.setdefault(name, LensChange(name))
            now, then = current.get(name), draft.get(name)
            if now in ("pass", "fail"):
                change.current_judged += 1
                change.current_right += _right(now, human)
            if then in ("pass", "fail"):
                change.draft_judged += 1
                change.draft_right += _right(then, human)
                change.pass_to_fail += now == "pass" and then == "fail"
                change.fail_to_pass += now == "fail" and then == "pass"
            elif then is not None:
                change.no_answer += 1
    return sorted(by_lens.values(), key=lambda c: c.lens)
