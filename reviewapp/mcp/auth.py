"""Who is calling: the API's bearer tokens, checked for every request to /mcp by `Gate`.

The same tokens, scopes and visibility as the REST API (`reviewapp.api.auth`):
a missing, unknown or revoked token is 401 (the SDK's `RequireAuthMiddleware`
answers it), each tool asks for the scope its REST endpoint asks for, and
every request — a tool call, `tools/list`, `initialize`, a `GET` stream —
spends the token's rate limit as a REST request does (429 past it). A token
holds at most REVIEWAPP_MCP_STREAMS_PER_TOKEN `GET` streams open in a web
process. The tokens of requests arriving together are looked up together, on
a thread of their own (`tokens`): a flood of one client's requests costs a few
queries, not one per request queued where other clients' tools wait.
"""

import itertools
import json
from collections import Counter

from django.conf import settings
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError
from starlette.authentication import AuthCredentials

from reviewapp.review.models import ApiClient
from reviewapp.review.rate_limit import RateLimitExceeded, rate_limit_count_many
from reviewapp.review.services.clients import api_clients_for_tokens, effective_scopes

from .db import Coalesced, Lane


def _counted(requests: list[tuple[str, int]]) -> dict[tuple[str, int], RateLimitExceeded | None]:
    """Count each request (its token's prefix, a number of its own) against its token's
    budget: the counter is Redis, or a SQLite file."""
    return dict(zip(requests, rate_limit_count_many([p for p, _ in requests]), strict=True))


_gate = Lane("mcp-auth")
tokens = Coalesced(_gate, api_clients_for_tokens)
requests_counted = Coalesced(_gate, _counted)
_request_numbers = itertools.count()


class Gate:
    """ASGI middleware before the SDK's: the token looked up, the request counted, a GET
    stream counted while it is open; the caller's client in `scope["user"]`."""

    def __init__(self, app) -> None:
        self.app = app
        self.streams: Counter[int] = Counter()  # open GET streams by client, in this process

    async def __call__(self, scope, receive, send) -> None:
        token = _bearer(scope) if scope["type"] == "http" else None
        client = await tokens.get(token) if token else None
        if client is None:
            await self.app(scope, receive, send)  # no user: the SDK answers 401
            return
        try:
            await requests_counted.get((client.token_prefix, next(_request_numbers)))
        except RateLimitExceeded as exc:
            limit = settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE
            message = (
                f"rate limit exceeded for this token (REST and MCP requests share {limit} a "
                f"minute); retry in {exc.wait} s"
            )
            await _refuse(send, 429, message, retry_after=exc.wait)
            return
        scopes = effective_scopes(client)
        access = AccessToken(token=token, client_id=str(client.pk), scopes=scopes)
        scope["user"], scope["auth"] = AuthenticatedUser(access), AuthCredentials(scopes)
        if scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        cap = settings.REVIEWAPP_MCP_STREAMS_PER_TOKEN
        if self.streams[client.pk] >= cap:
            message = (
                f"this token already holds {cap} open streams in this server process "
                "(REVIEWAPP_MCP_STREAMS_PER_TOKEN): close one first"
            )
            await _refuse(send, 429, message)
            return
        self.streams[client.pk] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.streams[client.pk] -= 1
            if not self.streams[client.pk]:
                del self.streams[client.pk]


def _bearer(scope) -> str | None:
    header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
    scheme, _, token = header.decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


async def _refuse(send, status: int, message: str, *, retry_after: int | None = None) -> None:
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def calling_client_id(scope: str | None) -> int:
    """The calling token's client id, refusing the call unless the token holds `scope`
    (its request was counted against the rate limit at the gate)."""
    token = get_access_token()
    if token is None:  # the HTTP layer admits no request without one; kept as a guard
        raise ToolError("no bearer token: send 'Authorization: Bearer <token>'")
    if scope is not None and scope not in token.scopes:
        raise ToolError(f"this token lacks the '{scope}' scope, which this tool needs")
    return int(token.client_id)


def client_by_id(client_id: int) -> ApiClient:
    """The caller's client, read in the tool's own database call (revocation included)."""
    client = ApiClient.objects.live().filter(pk=client_id).first()
    if client is None:
        raise ToolError("this token was revoked")
    return client
