"""Who is calling: the API's bearer tokens, admitted through the SDK's TokenVerifier.

The same tokens, scopes and visibility as the REST API (`reviewapp.api.auth`):
the HTTP layer answers 401 to a missing, unknown or revoked token, each
tool asks for the scope its REST endpoint asks for, and each tool call spends
the token's rate limit as a REST request does.
"""

import asyncio

from django.conf import settings
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError

from reviewapp.review.access import may_sign_decisions
from reviewapp.review.models import ApiClient
from reviewapp.review.rate_limit import RateLimitExceeded, rate_limit_count
from reviewapp.review.services.clients import (
    api_client_for_token,
    api_client_touch,
    token_prefix,
)

from .db import in_db


class ApiTokenVerifier:
    """`mcp.server.auth.provider.TokenVerifier` over the API's hashed tokens."""

    async def verify_token(self, token: str) -> AccessToken | None:
        client = await in_db(_live_client, token)
        if client is None:
            return None
        return AccessToken(token=token, client_id=str(client.pk), scopes=list(client.scopes))


def _live_client(token: str) -> ApiClient | None:
    client = api_client_for_token(token)
    if client is None:
        return None
    # As the REST API: a personal token dies with its user's right to review.
    if client.user_id is not None and not may_sign_decisions(client.user):
        return None
    api_client_touch(client)
    return client


def grants(scopes: list[str], scope: str | None) -> bool:
    # As the REST API: read:all is read without the visibility rule, so it also grants read.
    if scope is None:
        return True
    return scope in scopes or (scope == ApiClient.Scope.READ and ApiClient.Scope.READ_ALL in scopes)


async def calling_client_id(scope: str | None) -> int:
    """The calling token's client id, refusing the call unless the token holds `scope`.

    Each tool call counts once against the token's rate limit, the budget its
    REST requests spend too: a token cannot double its rate by switching protocol.
    """
    token = get_access_token()
    if token is None:  # the HTTP layer admits no request without one; kept as a guard
        raise ToolError("no bearer token: send 'Authorization: Bearer <token>'")
    try:
        # Off the event loop: the counter is Redis, or a SQLite file.
        await asyncio.to_thread(rate_limit_count, token_prefix=token_prefix(token.token))
    except RateLimitExceeded as exc:
        raise ToolError(
            f"rate limit exceeded for this token (REST requests and MCP tool calls share "
            f"{settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE} a minute); retry in {exc.wait} s"
        ) from exc
    if not grants(token.scopes, scope):
        raise ToolError(f"this token lacks the '{scope}' scope, which this tool needs")
    return int(token.client_id)


def client_by_id(client_id: int) -> ApiClient:
    """The caller's client, read in the tool's own database call (revocation included)."""
    client = ApiClient.objects.filter(pk=client_id, revoked_at__isnull=True).first()
    if client is None:
        raise ToolError("this token was revoked")
    return client
