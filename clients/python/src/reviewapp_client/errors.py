"""Every error the client raises, under one base: `except ReviewappError` catches them all.

ReviewappError
├── APIStatusError (alias ApiError)        the server answered 4xx/5xx
│   ├── BadRequestError                    400
│   ├── AuthenticationError                401
│   ├── PermissionDeniedError              403
│   ├── NotFoundError                      404
│   ├── ConflictError                      409
│   ├── RequestTooLargeError               413
│   ├── UnprocessableEntityError           422
│   ├── RateLimitError                     429
│   └── InternalServerError                5xx
├── APIConnectionError                     no answer: refused, reset, DNS, TLS
│   └── APITimeoutError                    no answer within the timeout
├── APIResponseValidationError             an answer that is not what the API documents
└── WaitTimeout                            `wait()` ran out of time (also a TimeoutError)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Proposal


class ReviewappError(Exception):
    """The base of every error this client raises."""


class APIStatusError(ReviewappError):
    """The API answered with an error status.

    `status` is the HTTP status, `detail` the API's own `{"detail"}` (a string,
    or a list of field errors for a 422), `headers` the response's headers, and
    `retry_after` the seconds the server asked to wait (None if it did not say).
    """

    def __init__(
        self,
        status: int,
        detail: Any,
        *,
        headers: Mapping[str, str] | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(f"HTTP {status}: {_summary(detail)}")
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})
        self.retry_after = retry_after

    @property
    def status_code(self) -> int:
        return self.status


def _summary(detail: Any) -> str:
    """A 422's list of errors as one line, reading only the scalars in it."""
    if not isinstance(detail, list):
        return str(detail)
    parts = []
    for error in detail[:10]:
        error = error if isinstance(error, dict) else {}
        loc = error.get("loc") if isinstance(error.get("loc"), list) else []
        where = ".".join(str(part) for part in loc if isinstance(part, str | int))
        msg = error.get("msg") if isinstance(error.get("msg"), str) else "invalid"
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)


ApiError = APIStatusError  # the name of the status-error base before 0.2


class BadRequestError(APIStatusError):
    """400: the request could not be read (e.g. a bad Content-Length)."""


class AuthenticationError(APIStatusError):
    """401: no token, or an unknown or revoked one."""


class PermissionDeniedError(APIStatusError):
    """403: the token lacks the scope, or this client may not do this."""


class NotFoundError(APIStatusError):
    """404: no such object, or one this token may not see (the API does not tell them apart)."""


class ConflictError(APIStatusError):
    """409: e.g. an external_ref reused with another body, a lens that already judged."""


class RequestTooLargeError(APIStatusError):
    """413: the body is over the server's limit."""


class UnprocessableEntityError(APIStatusError):
    """422: a field is invalid; `detail` lists each error with its `loc`."""


class RateLimitError(APIStatusError):
    """429: over the token's rate limit; `retry_after` says when to come back."""


class InternalServerError(APIStatusError):
    """5xx: the server failed or is unavailable (a 503 is transient and retried)."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: RequestTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error_class(status: int) -> type[APIStatusError]:
    if status >= 500:
        return InternalServerError
    return _BY_STATUS.get(status, APIStatusError)


class APIConnectionError(ReviewappError):
    """No answer from the server: connection refused or reset, DNS, TLS, a broken response."""


class APITimeoutError(APIConnectionError):
    """No answer within the call's timeout (its attempts and the waits between them)."""


class APIResponseValidationError(ReviewappError):
    """A success answer that is not what the API documents (not JSON, wrong shape,
    a missing field). `status` is its HTTP status; `body` the first bytes of it."""

    def __init__(self, message: str, *, status: int, body: bytes = b""):
        super().__init__(message)
        self.status = status
        self.body = body[:500]


class WaitTimeout(ReviewappError, TimeoutError):
    """`wait()` ran out of time; `proposal` is the last state seen (None if none was read)."""

    def __init__(self, proposal_id: int, proposal: Proposal | None):
        state = proposal.status if proposal is not None else "not read"
        super().__init__(f"proposal {proposal_id} still {state}")
        self.proposal_id = proposal_id
        self.proposal = proposal
