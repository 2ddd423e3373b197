"""A checker that requires (or forbids) a pattern match in the proposal."""

from __future__ import annotations

from .. import regex_dialect
from .contract import Checker, CheckInput, Judgement, _truncate
from .errors import CheckerConfigError


class RegexChecker(Checker):
    """The proposal content must (or must not) contain a match for ``pattern``.

    Searches anywhere in the content; anchor the pattern to match it whole.
    The pattern is the reference's dialect, Rust's regex crate 1.13.1, run by that
    crate in linear time, so no pattern can hang a worker and none needs a
    time-out; a content too large to search is INCONCLUSIVE.
    """

    def __init__(
        self,
        name: str,
        version: int,
        pattern: str,
        must_match: bool = True,
    ) -> None:
        super().__init__(name, version, settings={"pattern": pattern, "must_match": must_match})
        try:
            self._compiled = regex_dialect.compile(pattern)
        except regex_dialect.PatternError as exc:
            raise CheckerConfigError(f"checker {name!r}: invalid pattern: {exc}") from exc
        if not isinstance(must_match, bool):
            raise CheckerConfigError(f"checker {name!r}: must_match is true or false")
        self.pattern = pattern
        self.must_match = must_match

    def judge(self, inputs: CheckInput) -> Judgement:
        try:
            found = regex_dialect.search(self._compiled, inputs.content)
        except regex_dialect.InputTooLarge as exc:
            return Judgement.inconclusive(f"{exc}, so /{self.pattern}/ was not searched")
        if self.must_match and found is None:
            return Judgement.failed(f"the proposal does not match /{self.pattern}/")
        if not self.must_match and found is not None:
            return Judgement.failed(
                f"the proposal must not match /{self.pattern}/ but does at character "
                f"{found.start()}: {_truncate(found.group(), 200)!r}"
            )
        return Judgement.passed()
