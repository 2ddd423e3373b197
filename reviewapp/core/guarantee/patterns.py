"""A vote pattern: the panel's own confidence signal for one automatic decision.

A unanimous panel is stronger than a bare majority, a lens that answered is
stronger than one that failed, and a passing checker is stronger than none
("Trust or Escalate", Jung, Brahman & Choi 2024, arXiv 2407.18370, calibrates a
judge's confidence in the same spirit). A pattern is the outcome the panel's
vote gave, its pass / fail / failed-lens counts, and whether checkers ran and
passed. Only an outcome the panel's vote decided has one: a failing checker's
rejection is the checker's, and what the routing table escalates anyway
(no quorum, an inconclusive checker, a missing lens on a pass, sign-off) is
decided by a person whatever the guarantee says.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..checkers import CheckVerdict
from ..quorum import NoQuorum, Reached, Verdict, allowed_needs
from ..routing import APPROVED, REJECTED, Route

OUTCOMES = (APPROVED, REJECTED)
_KEY = re.compile(r"(approved|rejected):(\d{1,3})p(\d{1,3})f(\d{1,3})m:(checked|unchecked)")


@dataclass(frozen=True, slots=True)
class VotePattern:
    outcome: str  # APPROVED or REJECTED
    passed: int
    failed: int
    # Lenses that gave no judgement (a failed lens: not an abstention).
    missing: int
    # The panel's checkers all ran and passed; False when the panel has none.
    checked: bool

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"a pattern's outcome is approved or rejected, not {self.outcome!r}")
        if min(self.passed, self.failed, self.missing) < 0:
            raise ValueError("a pattern's counts cannot be negative")

    @property
    def key(self) -> str:
        """Stable and short, for storage: ``approved:3p0f0m:checked``."""
        checked = "checked" if self.checked else "unchecked"
        return f"{self.outcome}:{self.passed}p{self.failed}f{self.missing}m:{checked}"

    @classmethod
    def from_key(cls, key: str) -> "VotePattern":
        match = _KEY.fullmatch(key)
        if match is None:
            raise ValueError(f"not a vote pattern: {key!r}")
        outcome, passed, failed, missing, checked = match.groups()
        return cls(outcome, int(passed), int(failed), int(missing), checked == "checked")

    @property
    def lenses(self) -> int:
        return self.passed + self.failed + self.missing

    @property
    def votes(self) -> str:
        """For people: "2 of 3 pass, 1 fail, checkers passed"."""
        votes_for, against = self._sides
        said_for, said_against = ("pass", "fail") if self.outcome == APPROVED else ("fail", "pass")
        parts = [f"{votes_for} of {self.lenses} {said_for}"]
        if against:
            parts.append(f"{against} {said_against}")
        if self.missing:
            parts.append(f"{self.missing} gave no judgement")
        parts.append("checkers passed" if self.checked else "no checkers")
        return ", ".join(parts)

    @property
    def strength(self) -> tuple[int, int, int]:
        """Sorts a chain strongest first: every lens answered, then more votes for the
        outcome, then fewer against. Fixed before any label is seen, as the fixed
        sequence needs."""
        votes_for, against = self._sides
        return (self.missing, -votes_for, against)

    @property
    def _sides(self) -> tuple[int, int]:
        """(votes for the outcome, votes against it)."""
        if self.outcome == APPROVED:
            return self.passed, self.failed
        return self.failed, self.passed


def vote_pattern(
    *,
    routed: Route,
    panel: Reached | NoQuorum,
    failed_lenses: Iterable[str],
    checker_verdicts: Iterable[CheckVerdict],
) -> VotePattern | None:
    """The pattern of an outcome the panel's vote decided alone, else None."""
    verdicts = list(checker_verdicts)
    if routed.escalates or not isinstance(panel, Reached):
        return None
    if any(v is not CheckVerdict.PASS for v in verdicts):
        return None  # a checker's rejection: deterministic checkers rule
    outcome = APPROVED if panel.verdict is Verdict.PASS else REJECTED
    if routed.outcome != outcome:
        return None
    return VotePattern(
        outcome=outcome,
        passed=panel.tally.passed,
        failed=panel.tally.failed,
        missing=len(list(failed_lenses)),
        checked=bool(verdicts),
    )


def possible_patterns(*, lenses: int, need: int, checked: bool) -> list[VotePattern]:
    """Every pattern a panel of `lenses` lenses needing `need` can decide alone.

    An approval needs every lens to have answered (the routing table escalates a
    pass with a missing lens); a rejection stands with missing lenses.
    """
    if need not in allowed_needs(lenses):
        raise ValueError(f"a need of {need} with {lenses} lenses decides nothing")
    approvals = [
        VotePattern(APPROVED, passed, lenses - passed, 0, checked)
        for passed in range(need, lenses + 1)
    ]
    rejections = [
        VotePattern(REJECTED, lenses - failed - missing, failed, missing, checked)
        for failed in range(need, lenses + 1)
        for missing in range(lenses - failed + 1)
    ]
    return approvals + rejections


def chains(patterns: Iterable[VotePattern]) -> dict[str, list[VotePattern]]:
    """The patterns of each outcome, strongest first: the order each chain is tested in."""
    by_outcome: dict[str, list[VotePattern]] = {outcome: [] for outcome in OUTCOMES}
    for pattern in patterns:
        by_outcome[pattern.outcome].append(pattern)
    return {
        outcome: sorted(chain, key=lambda p: p.strength) for outcome, chain in by_outcome.items()
    }
