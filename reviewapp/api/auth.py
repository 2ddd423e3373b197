"""Who is calling: a machine client with a bearer token, or a browser session.

Tokens carry scopes (submit, judge, read, read:all, review) and a per-token
rate limit. Sessions are for people: staff and reviewers may read, reviewers
may also decide escalations (the same rule as the review pages,
`may_sign_decisions`), and every unsafe request from a session must pass CSRF.
"""

from dataclasses import dataclass

from ninja.errors import AuthenticationError, AuthorizationError, Throttled
from ninja.security.http import HttpAuthBase
from ninja.utils import check_csrf

from reviewapp.review.access import may_sign_decisions
from reviewapp.review.models import ApiClient
from reviewapp.review.rate_limit import RateLimitExceeded, rate_limit_count
from reviewapp.review.services.clients import (
    api_client_for_token,
    api_client_touch,
    effective_scopes,
)

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Caller:
    """The authenticated party: a token's `client`, a session's `user`, or both for a
    personal token (it acts as its user)."""

    client: ApiClient | None = None
    user: object | None = None

    @property
    def name(self) -> str:
        if self.user is not None:
            return self.user.get_username()
        return f"api:{self.client.name}"


class ApiAuth(HttpAuthBase):
    """Bearer token with `scope`, or a session allowed that scope.

    `scope=None` admits any token and any staff or reviewer session. With
    `sessions=False` only a token will do: what is managed per API client
    (webhooks) belongs to no browser session, and saying so here answers 403
    before the body is even parsed. OpenAPI documents the bearer scheme;
    sessions are for the browser.
    """

    openapi_scheme = "bearer"

    def __init__(self, scope: str | None = None, *, sessions: bool = True):
        self.scope = scope
        self.sessions = sessions
        super().__init__()

    def __call__(self, request):
        header = request.headers.get("Authorization")
        if header:
            return self._from_token(header)
        return self._from_session(request)

    def _from_token(self, header: str) -> Caller:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationError(message="Authorization must be 'Bearer <token>'")
        client = api_client_for_token(token.strip())
        if client is None:
            raise AuthenticationError(message="unknown or revoked token")
        _count_request(client)
        user = client.user
        # A personal token lives only as long as its person may review: a
        # deactivated account or a lost group membership ends it at once.
        if user is not None and not may_sign_decisions(user):
            raise AuthenticationError(message="this personal token's user may no longer review")
        if self.scope is not None and self.scope not in effective_scopes(client):
            raise AuthorizationError(message=f"this token lacks the {self.scope!r} scope")
        api_client_touch(client)
        return Caller(client=client, user=user)

    def _from_session(self, request) -> Caller | None:
        user = request.user
        if not user.is_authenticated:
            return None  # nothing presented: django-ninja answers 401
        if not self.sessions:
            raise AuthorizationError(
                message="this is managed per API client: use one of its bearer tokens, "
                "not a browser session"
            )
        if self.scope in (None, ApiClient.Scope.READ):
            allowed = user.is_staff or may_sign_decisions(user)
        elif self.scope == ApiClient.Scope.REVIEW:
            allowed = may_sign_decisions(user)
        else:
            raise AuthorizationError(
                message=f"the {self.scope!r} scope needs a bearer token, not a browser session"
            )
        if not allowed:
            raise AuthorizationError(message="this account may not use the API")
        if request.method not in _SAFE_METHODS and check_csrf(request) is not None:
            raise AuthorizationError(message="CSRF check failed")
        return Caller(user=user)


def _count_request(client: ApiClient) -> None:
    """The token's budget, shared with its MCP requests (`reviewapp.review.rate_limit`)."""
    try:
        rate_limit_count(token_prefix=client.token_prefix)
    except RateLimitExceeded as exc:
        raise Throttled(wait=exc.wait) from exc
