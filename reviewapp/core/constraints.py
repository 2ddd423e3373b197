"""Mandate constraints: how far a response is from the constraints it was told to satisfy.

A mandate is a set of constraints C. For a response r this module measures the
Constraint Satisfaction Rate, CSR = |{c in C : r satisfies c}| / |C|, and the error
signal e = 1 - CSR, which lies in [0, 1] and is 0 exactly when every constraint holds.

Every predicate is a deterministic function of the response text; no model is asked
whether it complied. A measurement taken by the thing being measured would let it report
whatever it liked, so the number here is computed, never asserted.

CSR has no value when C is empty, and reading that as "nothing violated, e = 0" gets it
backwards: a mandate with nothing checkable can never fail. An empty or wholly
unlowerable constraint set is therefore refused when the set is built.

What to do about a non-zero e (retry, rewrite the prompt, escalate) belongs to the
caller; this module only answers how far off the response is, and why.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from reviewapp.core import regex_dialect, serde_json
from reviewapp.core.regex_dialect import PatternError

# Unicode White_Space, which the reference trims and splits words on (not str.split()'s).
from reviewapp.core.whitespace import WHITESPACE as _WHITESPACE
from reviewapp.core.whitespace import trim as _trim

_WORD = re.compile(f"[^{re.escape(_WHITESPACE)}]+")

# The reference parses counts as a 64-bit unsigned integer; anything larger does not lower.
_MAX_COUNT = 2**64 - 1

# Patterns are the reference's dialect, run by its engine (Rust's regex crate): linear
# time, so a match needs no time-out; regex_dialect bounds the size of the text instead.
_compile = regex_dialect.compile
_PATTERN_ERRORS = (PatternError,)


# ---- the closed predicate catalogue ----
#
# Only what can actually be decided about a response text. A free-form kind would invite
# constraints that read plausibly and check nothing; a clause that fits none of these is
# kept as Unenforced instead of being approximated. Text predicates ignore case, because
# casing is rarely the obligation in prose; Matches is applied as written, so (?i) is
# there for whoever wants case-insensitivity in a pattern.
#
# Each predicate's failure() returns why the response fails it, or None when it holds.
# `lowered` is the response already lower-cased, so a set lower-cases it once.


class Undecided(str):
    """A failure detail for a clause that could not be evaluated at all (a response too
    large to match a pattern against). It is still a failure for the score, never a
    pass; a checker turns it into Inconclusive, because nothing about the response was shown."""


@dataclass(frozen=True, slots=True)
class Contains:
    needle: str

    def describe(self) -> str:
        return f"must contain {self.needle!r}"

    def failure(self, response: str, lowered: str) -> str | None:
        if self.needle.lower() in lowered:
            return None
        return f"{self.needle!r} does not appear in the response"


@dataclass(frozen=True, slots=True)
class Absent:
    needle: str

    def describe(self) -> str:
        return f"must not contain {self.needle!r}"

    def failure(self, response: str, lowered: str) -> str | None:
        if self.needle.lower() in lowered:
            return f"the response contains the forbidden {self.needle!r}"
        return None


@dataclass(frozen=True, slots=True)
class Matches:
    pattern: str

    def describe(self) -> str:
        return f"must match /{self.pattern}/"

    def failure(self, response: str, lowered: str) -> str | None:
        # A pattern that cannot be compiled or run to completion is a violation, never a
        # pass: scoring an unevaluated constraint as held is how a broken guarantee
        # reports success. ConstraintSet refuses invalid patterns up front, so the first
        # branch is reached only by a predicate used on its own.
        try:
            compiled = _compile(self.pattern)
        except _PATTERN_ERRORS as exc:
            return f"the pattern /{self.pattern}/ is not a valid regular expression ({exc})"
        try:
            found = regex_dialect.search(compiled, response)
        except regex_dialect.InputTooLarge as exc:
            return Undecided(f"{exc}, so it could not be shown to match /{self.pattern}/")
        if found is None:
            return f"no part of the response matches /{self.pattern}/"
        return None


@dataclass(frozen=True, slots=True)
class WordCount:
    """Word count within [min, max], both inclusive and each optional."""

    min: int | None = None
    max: int | None = None

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"must be between {self.min} and {self.max} words"
        if self.min is not None:
            return f"must be at least {self.min} words"
        if self.max is not None:
            return f"must be at most {self.max} words"
        return "has no word-count bound"

    def failure(self, response: str, lowered: str) -> str | None:
        words = sum(1 for _ in _WORD.finditer(response))
        if self.min is not None and words < self.min:
            return f"the response has {words} words, below the minimum of {self.min}"
        if self.max is not None and words > self.max:
            return f"the response has {words} words, above the maximum of {self.max}"
        return None


@dataclass(frozen=True, slots=True)
class ParsesAsJson:
    def describe(self) -> str:
        return "must be valid JSON"

    def failure(self, response: str, lowered: str) -> str | None:
        # Surrounding whitespace is tolerated, nothing else; read as the reference's
        # serde_json reads it, which refuses more than Python's parser.
        try:
            serde_json.loads(_trim(response))
        except serde_json.NotJson as exc:
            return f"the response does not parse as JSON: {exc}"
        return None


@dataclass(frozen=True, slots=True)
class RequiredWith:
    """If `trigger` appears, `required` must appear too.

    "No X without Y" is the most common shape a real mandate takes, and neither Absent
    (which forbids X outright) nor Contains (which demands Y even when X never came up)
    can say it; only the implication does.
    """

    trigger: str
    required: str

    def describe(self) -> str:
        return f"must not contain {self.trigger!r} without also containing {self.required!r}"

    def failure(self, response: str, lowered: str) -> str | None:
        if self.trigger.lower() in lowered and self.required.lower() not in lowered:
            return f"{self.trigger!r} appears without the {self.required!r} it calls for"
        return None


Predicate = Contains | Absent | Matches | WordCount | ParsesAsJson | RequiredWith


@dataclass(frozen=True, slots=True)
class Constraint:
    """One checkable constraint and the clause it was lowered from.

    The clause is what a model is shown when the constraint fails: being told the
    obligation in its own words corrects far better than "constraint 3 failed".
    """

    id: str  # position-derived, e.g. "c1"; stable for verdicts and audit
    clause: str
    predicate: Predicate

    def __post_init__(self) -> None:
        if not isinstance(self.predicate, Predicate):
            raise TypeError(f"{self.predicate!r} is not a predicate of the closed catalogue")

    def describe(self) -> str:
        return self.predicate.describe()


@dataclass(frozen=True, slots=True)
class Unenforced:
    """A clause understood as an obligation but not decidable here.

    It still goes into the prompt, so it still steers, but it never moves e: it is shown
    as unenforced rather than counted as satisfied.
    """

    text: str


Clause = Constraint | Unenforced


# ---- refusals ----


class ConstraintError(ValueError):
    """A constraint set that would be unfalsifiable or could not be evaluated."""


class NoCheckableConstraints(ConstraintError):
    def __init__(self, clauses: tuple[str, ...]) -> None:
        self.clauses = clauses
        message = (
            "none of these constraints can be checked mechanically, so the satisfaction "
            "rate is undefined and no response could ever violate the mandate; state at "
            "least one clause in a checkable form such as 'must contain \"...\"', "
            "'must not contain \"...\"', 'must be at most N words', 'must be valid JSON', "
            "'must match /pattern/' or 'no X without Y'"
        )
        if clauses:
            message += "; clauses that could not be checked: " + "; ".join(clauses)
        super().__init__(message)


class InvalidPattern(ConstraintError):
    def __init__(self, id: str, pattern: str, detail: str) -> None:
        self.id = id
        self.pattern = pattern
        self.detail = detail
        super().__init__(
            f"constraint {id} uses the pattern /{pattern}/, which is not a valid regular "
            f"expression ({detail}); correct the pattern or remove the clause"
        )


# ---- evaluation ----


@dataclass(frozen=True, slots=True)
class Violation:
    constraint: Constraint
    detail: str


@dataclass(frozen=True, slots=True)
class MandateVerdict:
    """The mandate's score. An undecided clause counts against the CSR like a violation,
    and is also listed in `undecided`, so a caller can escalate rather than reject."""

    csr: float
    error: float  # e = 1 - csr, in [0, 1]
    satisfied: tuple[Constraint, ...]
    violated: tuple[Violation, ...]
    unenforced: tuple[str, ...]

    @property
    def is_satisfied(self) -> bool:
        return not self.violated

    @property
    def undecided(self) -> tuple[Violation, ...]:
        """Violations that are really "could not evaluate" (a response too large to match)."""
        return tuple(v for v in self.violated if isinstance(v.detail, Undecided))

    def within(self, epsilon: float) -> bool:
        """Whether |e| < epsilon: strict, as in the convergence test it serves."""
        return abs(self.error) < epsilon

    def feedback(self) -> list[str]:
        """One line per violation naming the obligation and why it failed, for the model."""
        return [f"{v.constraint.describe()} ({v.detail})" for v in self.violated]


class ConstraintSet:
    """The constraint set C of a mandate; never empty."""

    __slots__ = ("_constraints", "_unenforced")

    def __init__(self, clauses: Iterable[Clause]) -> None:
        constraints: list[Constraint] = []
        unenforced: list[str] = []
        for clause in clauses:
            if isinstance(clause, Unenforced):
                unenforced.append(clause.text)
            elif isinstance(clause, Constraint):
                # Caught here rather than as a permanent violation on every evaluation.
                if isinstance(clause.predicate, Matches):
                    try:
                        _compile(clause.predicate.pattern)
                    except _PATTERN_ERRORS as exc:
                        raise InvalidPattern(clause.id, clause.predicate.pattern, str(exc)) from exc
                constraints.append(clause)
            else:
                raise TypeError(f"{clause!r} is neither a Constraint nor an Unenforced clause")
        if not constraints:
            raise NoCheckableConstraints(tuple(unenforced))
        self._constraints = tuple(constraints)
        self._unenforced = tuple(unenforced)

    @classmethod
    def from_text(cls, text: str) -> "ConstraintSet":
        return cls(lower(text))

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        return self._constraints

    @property
    def unenforced(self) -> tuple[str, ...]:
        """Clauses that steer the model without being enforced; callers should say so."""
        return self._unenforced

    def __len__(self) -> int:
        return len(self._constraints)

    def __repr__(self) -> str:
        return f"ConstraintSet({self._constraints!r}, unenforced={self._unenforced!r})"

    def evaluate(self, response: str) -> MandateVerdict:
        lowered = response.lower()
        satisfied: list[Constraint] = []
        violated: list[Violation] = []
        for constraint in self._constraints:
            detail = constraint.predicate.failure(response, lowered)
            if detail is None:
                satisfied.append(constraint)
            else:
                violated.append(Violation(constraint, detail))
        # Unenforced clauses stay out of the denominator: counted there, they would keep e
        # above zero forever and the mandate could never converge.
        csr = len(satisfied) / len(self._constraints)
        return MandateVerdict(
            csr=csr,
            error=1.0 - csr,
            satisfied=tuple(satisfied),
            violated=tuple(violated),
            unenforced=self._unenforced,
        )


# ---- lowering constraint text ----
#
# A small, closed grammar that either matches a clause or says it did not. This is not
# language understanding, and claiming to turn arbitrary prose into decidable predicates
# would be exactly the invented capability e = 1 - CSR exists to avoid.

_SUBJECTS = ("output ", "the output ", "the response ", "response ")
_CONDITIONALS = (" without ", " unless ")
_JSON_FORMS = (
    "must be valid json",
    "must be a valid json",
    "must parse as json",
    "must be valid json object",
)
_WORD_BOUNDS = (
    ("must be at most ", "max"),
    ("must be at least ", "min"),
    ("must be no more than ", "max"),
)
# Negated forms come first so "must not contain" is never read as "must contain".
_LITERALS = (
    ("must not contain ", Absent),
    ("must not include ", Absent),
    ("must never contain ", Absent),
    ("must contain ", Contains),
    ("must include ", Contains),
)
_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"))


def lower(text: str) -> list[Clause]:
    """Lower constraint text into clauses, each checkable or explicitly unenforced.

    Clauses are separated by ";" and by ", and ". A bare comma does not separate: "tables,
    footnote references" is one obligation holding a list, and splitting it would make two
    half-clauses that lower to nothing. Constraint ids count every separated piece, blank
    ones included, so an id keeps pointing at the same place in the text.
    """
    clauses: list[Clause] = []
    for index, raw in enumerate(_split_clauses(text), start=1):
        clause = _trim(raw)
        if not clause:
            continue
        predicate = _lower_clause(clause)
        if predicate is None:
            clauses.append(Unenforced(clause))
        else:
            clauses.append(Constraint(f"c{index}", clause, predicate))
    return clauses


def _split_clauses(text: str) -> list[str]:
    return [part for piece in text.split(";") for part in piece.split(", and ")]


def _lower_clause(clause: str) -> Predicate | None:
    """The predicate a clause states, or None when it is outside the grammar; never a guess."""
    c = _trim(clause).lower()
    for subject in _SUBJECTS:
        while c.startswith(subject):
            c = c[len(subject) :]
    c = _trim(c)

    if c.startswith("no "):
        rest = c[len("no ") :]
        for conditional in _CONDITIONALS:
            trigger, found, required = rest.partition(conditional)
            trigger, required = _trim(trigger), _trim(required)
            if found and trigger and required:
                return RequiredWith(trigger=trigger, required=required)

    if c.startswith(_JSON_FORMS):
        return ParsesAsJson()

    for prefix, bound in _WORD_BOUNDS:
        count = _trailing_count(c, prefix, " words")
        if count is not None:
            return WordCount(**{bound: count})

    if c.startswith("must match /"):
        rest = c[len("must match /") :]
        if rest.endswith("/") and len(rest) > 1:
            return Matches(rest[:-1])

    for prefix, kind in _LITERALS:
        if c.startswith(prefix):
            needle = _unquote(c[len(prefix) :])
            if needle:
                return kind(needle)

    return None


def _trailing_count(c: str, prefix: str, suffix: str) -> int | None:
    """Read N from "<prefix>N<suffix>" as the reference reads an unsigned integer."""
    if not c.startswith(prefix):
        return None
    rest = c[len(prefix) :]
    if rest.endswith(suffix):
        rest = rest[: -len(suffix)]
    digits = _trim(rest)
    body = digits[1:] if digits.startswith("+") else digits
    if not (body.isascii() and body.isdigit()):
        return None
    count = int(body)
    return count if count <= _MAX_COUNT else None


def _unquote(text: str) -> str:
    """Drop trailing full stops and one matching pair of surrounding quotes."""
    text = _trim(text).rstrip(".")
    for opening, closing in _QUOTES:
        if text.startswith(opening) and text[len(opening) :].endswith(closing):
            return text[len(opening) : -len(closing)]
    return text
