"""MCP tool calls and REST requests spend one rate limit per token (reviewapp/mcp/auth.py)."""

import pytest
from django.test import Client

from tests.mcp.conftest import call, error_text
from tests.webhooks.helpers import api_client

LIMIT = 3


@pytest.fixture
def limited(settings, rate_window):
    # rate_window: a window boundary inside the test would reset the count.
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = LIMIT


def rest_get(server, token: str):
    # In this process (the count is shared through Redis or the SQLite file as between
    # any two web processes); the live server's own request threads would keep a
    # connection that outlives the test database.
    return Client().get("/api/proposals", headers={"Authorization": f"Bearer {token}"})


def test_a_token_that_spent_its_budget_over_rest_is_refused_by_mcp(server, agent, limited):
    token = agent[1]
    assert [rest_get(server, token).status_code for _ in range(LIMIT)] == [200] * LIMIT

    refused = call(server, token, "list_panels")

    message = error_text(refused)
    assert "rate limit exceeded for this token" in message
    assert "REST requests and MCP tool calls share 3 a minute" in message
    assert "retry in" in message


def test_a_token_that_spent_its_budget_over_mcp_is_refused_by_rest(server, agent, limited):
    token = agent[1]
    for _ in range(LIMIT):
        assert not call(server, token, "list_panels").is_error

    response = rest_get(server, token)

    assert response.status_code == 429
    assert response.json() == {"detail": "rate limit exceeded for this token"}
    assert int(response.headers["Retry-After"]) >= 1


def test_another_tokens_budget_is_its_own(server, agent, limited):
    for _ in range(LIMIT):
        rest_get(server, agent[1])

    assert not call(server, api_client("read")[1], "list_panels").is_error
