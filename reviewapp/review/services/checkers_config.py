"""Checker configuration as the admin sees it: the constraints preview and grant checks."""

from dataclasses import dataclass

from reviewapp.core import checkers as core_checkers
from reviewapp.core import constraints as core_constraints

CHECKER_AUDIT_FIELDS = ("name", "kind", "settings", "grants", "active", "version")


@dataclass(frozen=True)
class PreviewClause:
    text: str
    checkable: bool
    id: str = ""
    predicate: str = ""  # the predicate in words, for a checkable clause
    why: str = ""  # for an unenforced clause: why nothing checks it, and how to have it checked


@dataclass(frozen=True)
class ConstraintsPreview:
    text: str
    clauses: tuple[PreviewClause, ...]
    refusal: str | None  # why the whole text is refused, in the core's words

    @property
    def is_empty(self) -> bool:
        return not self.text.strip()

    @property
    def checkable_count(self) -> int:
        return sum(1 for c in self.clauses if c.checkable)

    @property
    def unenforced_count(self) -> int:
        return sum(1 for c in self.clauses if not c.checkable)


def constraints_preview(text: str) -> ConstraintsPreview:
    """How `text` lowers: each clause checkable (with its predicate) or unenforced."""
    clauses = []
    for clause in core_constraints.lower(text):
        if isinstance(clause, core_constraints.Constraint):
            clauses.append(
                PreviewClause(
                    text=clause.clause, checkable=True, id=clause.id, predicate=clause.describe()
                )
            )
        else:
            clauses.append(
                PreviewClause(text=clause.text, checkable=False, why=unenforced_reason(clause.text))
            )
    refusal = None
    try:
        core_constraints.ConstraintSet.from_text(text)
    except core_constraints.ConstraintError as exc:
        refusal = str(exc)
    return ConstraintsPreview(text=text, clauses=tuple(clauses), refusal=refusal)


CHECKABLE_FORMS = (
    'must contain "…"',
    'must not contain "…"',
    "must be at most N words",
    "must be no more than N words",
    "must be at least N words",
    "must be valid JSON",
    "must match /…/",
    "no X without Y",
)


def unenforced_reason(text: str) -> str:
    """Why a clause is not checked, in words an admin can act on.

    The grammar is closed on purpose (the same forms as the reference
    catalogue): "under 50 words" or "short" is not guessed into a number.
    """
    if "word" in text.lower():
        return (
            "Only “must be at most N words”, “must be no more than N words” and “must be at "
            "least N words” are counted; this clause is worded otherwise, so nothing counts "
            "its words. Write it as “must be at most N words” to have it checked."
        )
    return (
        "It is not one of the checkable forms (" + "; ".join(CHECKABLE_FORMS) + "), so nothing "
        "decides it: it counts neither as met nor as broken."
    )


def grants_refusal(checker_name: str, grants: list[str]) -> str | None:
    """The core's refusal of these grants (naming every refused grant), or None."""
    try:
        core_checkers.ensure_model_free(checker_name or "unnamed", grants)
    except core_checkers.GrantRefused as exc:
        return str(exc)
    return None
