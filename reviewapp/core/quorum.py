"""A panel of lenses that judges one high-stakes step, and how its judgements are tallied.

Running one judgement several times mostly measures variance: identical prompts against
the same model share the same blind spots and agree, confidently, on exactly the cases a
second opinion was meant to catch. Only judging from different angles catches bias, so a
panel is declared as a set of distinct *lenses* and a repeated lens is refused outright.

A panel that fails to agree is itself the answer: it marks the hard case a person should
look at. `NoQuorum` therefore reports its tally and nothing else; there is deliberately no
way to ask it for "the side with more votes", because resolving a split silently is how
"we do not know" becomes "approved".
"""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from reviewapp.core.whitespace import is_blank


class Verdict(StrEnum):
    """One judge's answer."""

    PASS = "pass"
    FAIL = "fail"


class QuorumError(ValueError):
    """A panel that cannot do its job, or a set of judgements that cannot be counted."""


class NeedsNobody(QuorumError):
    def __init__(self) -> None:
        super().__init__("a quorum that needs no agreeing judgements decides nothing")


class Unreachable(QuorumError):
    def __init__(self, need: int, of: int) -> None:
        self.need = need
        self.of = of
        super().__init__(f"a quorum of {need} can never be reached with only {of} judgement(s)")


class NotAMajority(QuorumError):
    def __init__(self, need: int, of: int) -> None:
        self.need = need
        self.of = of
        super().__init__(
            f"{need} of {of} is not a majority: 'pass' and 'fail' could both reach the "
            "quorum at once, and which one gets reported would depend on the order of "
            "counting rather than on the judgements"
        )


class RepeatedLens(QuorumError):
    def __init__(self, lens: str) -> None:
        self.lens = lens
        super().__init__(
            f"lens {lens!r} appears more than once; identical judges share their blind "
            "spots, so a repeated lens is repetition, not the diversity a quorum exists for"
        )


class UnnamedLens(QuorumError):
    def __init__(self) -> None:
        super().__init__("a lens without a name cannot be a distinct angle")


class NotALens(QuorumError):
    def __init__(self, lens: str) -> None:
        self.lens = lens
        super().__init__(f"a judgement came from {lens!r}, which is not a lens of this panel")


class JudgedTwice(QuorumError):
    def __init__(self, lens: str) -> None:
        self.lens = lens
        super().__init__(
            f"lens {lens!r} gave more than one judgement; one judge counted twice is not two judges"
        )


def allowed_needs(of: int) -> range:
    """Every need a panel of `of` distinct lenses accepts: a strict majority up to all of them."""
    if of < 1:
        return range(0)
    return range(of // 2 + 1, of + 1)


def allowed_needs_text(of: int) -> str:
    """`allowed_needs(of)` in words, for whoever is choosing the need."""
    allowed = allowed_needs(of)
    if not allowed:
        return "Add a lens first: with no lens, no need can be reached."
    lenses = "1 lens" if of == 1 else f"{of} lenses"
    if len(allowed) == 1:
        values = str(allowed[0])
    elif len(allowed) == 2:
        values = f"{allowed[0]} or {allowed[1]}"
    else:
        values = f"from {allowed[0]} to {allowed[-1]}"
    return f"With {lenses} the need must be {values}."


@dataclass(frozen=True, slots=True)
class Tally:
    passed: int
    failed: int
    # How many judgements the panel asked for, so a panel that came back short shows it.
    asked: int


@dataclass(frozen=True, slots=True)
class Reached:
    verdict: Verdict
    tally: Tally

    @property
    def decided(self) -> Verdict:
        return self.verdict


@dataclass(frozen=True, slots=True)
class NoQuorum:
    """The panel did not agree. Carries the tally only: a split is escalated, never resolved."""

    tally: Tally

    @property
    def decided(self) -> None:
        return None


PanelOutcome = Reached | NoQuorum


class Quorum:
    """How many judgements, from which lenses, and how many of them must agree.

    Construction is the only way to obtain one and it refuses every panel that could not
    do its job, because a quorum is configuration read from files, stores and step
    arguments, and a weakened panel is precisely what a hijacked input would ask for.
    """

    __slots__ = ("_need", "_lenses")

    def __init__(self, need: int, lenses: Iterable[str]) -> None:
        if isinstance(need, bool) or not isinstance(need, int):
            raise TypeError(f"need must be an int, not {type(need).__name__}")
        # A bare string is iterable too; taking its characters as lenses would be a silent
        # misreading of the configuration.
        if isinstance(lenses, str):
            raise TypeError("lenses must be an iterable of names, not a single string")
        declared = tuple(lenses)
        for lens in declared:
            if not isinstance(lens, str):
                raise TypeError(f"a lens must be named by a str, not {type(lens).__name__}")
        of = len(declared)

        # The reference's count is unsigned, so below one is the same refusal as zero.
        if need < 1:
            raise NeedsNobody()
        if need > of:
            raise Unreachable(need, of)
        # Unanimity of two is strict and legitimate; one of two lets either judge decide
        # alone while the other's disagreement is thrown away, which is worse than a single
        # judgement because it looks like a panel.
        if of > 1 and need * 2 <= of:
            raise NotAMajority(need, of)
        seen: set[str] = set()
        for lens in declared:
            if lens in seen:
                raise RepeatedLens(lens)
            seen.add(lens)
        # The reference's `trim`: U+001C..U+001F are names, not whitespace.
        if any(is_blank(lens) for lens in declared):
            raise UnnamedLens()

        self._need = need
        self._lenses = declared

    @property
    def need(self) -> int:
        return self._need

    @property
    def of(self) -> int:
        """How many judgements this panel takes."""
        return len(self._lenses)

    @property
    def lenses(self) -> tuple[str, ...]:
        return self._lenses

    def tally(self, verdicts: Iterable[tuple[str, Verdict]]) -> Reached | NoQuorum:
        """Count judgements, each named by the lens that gave it, into a decision or not.

        A judgement that never arrived is not an abstention the others may outvote: it is
        evidence the panel did not fully run, so a short panel can only reach quorum on the
        judgements it has. A judgement from an undeclared lens, or a second one from the
        same lens, is refused, since either would let one judge stand in for another.
        """
        judged: list[tuple[str, Verdict]] = []
        seen: set[str] = set()
        for lens, verdict in verdicts:
            if lens not in self._lenses:
                raise NotALens(lens)
            if lens in seen:
                raise JudgedTwice(lens)
            seen.add(lens)
            judged.append((lens, Verdict(verdict)))

        tally = Tally(
            passed=sum(1 for _, v in judged if v is Verdict.PASS),
            failed=sum(1 for _, v in judged if v is Verdict.FAIL),
            asked=self.of,
        )
        if tally.passed >= self._need:
            return Reached(Verdict.PASS, tally)
        if tally.failed >= self._need:
            return Reached(Verdict.FAIL, tally)
        return NoQuorum(tally)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quorum):
            return NotImplemented
        return (self._need, self._lenses) == (other._need, other._lenses)

    def __hash__(self) -> int:
        return hash((self._need, self._lenses))

    def __repr__(self) -> str:
        return f"Quorum(need={self._need}, lenses={self._lenses!r})"

    # Copying and unpickling go back through __init__, so a stored quorum is re-checked
    # on the way in rather than restored field by field around the refusals.
    def __reduce__(self) -> tuple[type["Quorum"], tuple[int, tuple[str, ...]]]:
        return (Quorum, (self._need, self._lenses))
