"""What a checker run raises when there is no evidence: never a checker's opinion."""

from __future__ import annotations

from collections.abc import Iterable


class CheckError(Exception):
    """No evidence was produced, so nothing commits. Never a checker's opinion."""

    def __init__(self, checker: str, message: str) -> None:
        super().__init__(message)
        self.checker = checker


class GrantRefused(CheckError):
    """The checker declared authority a checker may not hold."""

    def __init__(self, checker: str, grants: Iterable[str], message: str) -> None:
        super().__init__(checker, message)
        self.grants = tuple(grants)


class GrantOverreach(GrantRefused):
    """Some grant is outside the ceiling."""


class GrantUndecidable(GrantRefused):
    """Containment could not be proved, which is a refusal, never a pass."""


class InputNotAddressable(CheckError):
    """The inputs could not be digested, so evidence could not name them."""


class SigningFailed(CheckError):
    """The verdict could not be signed; there is no evidence."""


class CheckerConfigError(ValueError):
    """A checker's settings are unusable; raised when it is configured."""
