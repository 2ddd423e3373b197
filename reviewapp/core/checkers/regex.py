"""A checker that requires (or forbids) a pattern match in the proposal."""

from __future__ import annotations

import regex

from .contract import Checker, CheckInput, Judgement, _positive_seconds, _truncate
from .errors import CheckerConfigError


class RegexChecker(Checker):
    """The proposal content must (or must not) contain a match for ``pattern``.

    Searches anywhere in the content; anchor the pattern to match it whole.
    Uses the ``regex`` package for its match timeout: a pathological pattern
    is INCONCLUSIVE instead of a hung worker.
    """

    def __init__(
        self,
        name: str,
        version: int,
        pattern: str,
        must_match: bool = True,
        *,
        timeout_seconds: float = 1.0,
    ) -> None:
        super().__init__(name, version, settings={"pattern": pattern, "must_match": must_match})
        try:
            self._compiled = regex.compile(pattern)
        except (regex.error, TypeError) as exc:
            raise CheckerConfigError(f"checker {name!r}: invalid pattern: {exc}") from exc
        if not isinstance(must_match, bool):
            raise CheckerConfigError(f"checker {name!r}: must_match is true or false")
        if not _positive_seconds(timeout_seconds):
            raise CheckerConfigError(f"checker {name!r}: timeout must be a positive number")
        self.pattern = pattern
        self.must_match = must_match
        self.timeout_seconds = timeout_seconds

    def judge(self, inputs: CheckInput) -> Judgement:
        try:
            found = self._compiled.search(inputs.content, timeout=self.timeout_seconds)
        except TimeoutError:
            return Judgement.inconclusive(
                f"matching /{self.pattern}/ did not finish within {self.timeout_seconds}s"
            )
        if self.must_match and found is None:
            return Judgement.failed(f"the proposal does not match /{self.pattern}/")
        if not self.must_match and found is not None:
            return Judgement.failed(
                f"the proposal must not match /{self.pattern}/ but does at character "
                f"{found.start()}: {_truncate(found.group(), 200)!r}"
            )
        return Judgement.passed()
