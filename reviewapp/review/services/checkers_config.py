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
            clauses.append(PreviewClause(text=clause.text, checkable=False))
    refusal = None
    try:
        core_constraints.ConstraintSet.from_text(text)
    except core_constraints.ConstraintError as exc:
        refusal = str(exc)
    return ConstraintsPreview(text=text, clauses=tuple(clauses), refusal=refusal)


def grants_refusal(checker_name: str, grants: list[str]) -> str | None:
    """The core's refusal of these grants (naming every refused grant), or None."""
    try:
        core_checkers.ensure_model_free(checker_name or "unnamed", grants)
    except core_checkers.GrantRefused as exc:
        return str(exc)
    return None
