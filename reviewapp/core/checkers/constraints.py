"""A checker that evaluates a mandate written in the constraint grammar."""

from __future__ import annotations

from ..constraints import ConstraintError, ConstraintSet
from .contract import Checker, CheckInput, Judgement
from .errors import CheckerConfigError


class ConstraintsChecker(Checker):
    """A mandate lowered by the constraint grammar.

    Pass iff every checkable constraint holds; a failure's reason is the
    feedback lines. Clauses the grammar could not lower are never counted as
    satisfied; they travel in the evidence's details as ``unenforced`` so a
    reader sees what the verdict did not cover.
    """

    def __init__(self, name: str, version: int, mandate: str) -> None:
        if not isinstance(mandate, str):
            raise CheckerConfigError(f"checker {name!r}: a mandate is text")
        super().__init__(name, version, settings={"mandate": mandate})
        try:
            self._constraints = ConstraintSet.from_text(mandate)
        except ConstraintError as exc:
            raise CheckerConfigError(f"checker {name!r}: mandate refused: {exc}") from exc
        self.mandate = mandate

    def judge(self, inputs: CheckInput) -> Judgement:
        result = self._constraints.evaluate(inputs.content)
        details = {
            "csr": result.csr,
            "error": result.error,
            "unenforced": list(result.unenforced),
        }
        if result.is_satisfied:
            return Judgement.passed(details=details)
        feedback = "\n".join(result.feedback()) or "the mandate is not satisfied"
        if result.undecided:
            # A clause that could not be evaluated decides nothing: escalate.
            return Judgement.inconclusive(feedback, details=details)
        return Judgement.failed(feedback, details=details)
