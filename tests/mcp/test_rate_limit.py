"""Every MCP request and every REST request spend one rate limit per token, and a token's
open streams are capped (reviewapp/mcp/gate.py)."""

import threading
import time

import httpx
import pytest
from django.test import Client

from tests.mcp.conftest import call
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


HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def mcp_post(server, token: str, method: str = "tools/list", params=None):
    """One raw JSON-RPC request (stateless: no session to set up first)."""
    return httpx.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
        headers={"Authorization": f"Bearer {token}", **HEADERS},
        timeout=30,
    )


def assert_rate_limited(response) -> None:
    assert response.status_code == 429, response.text
    message = response.json()["detail"]
    assert "rate limit exceeded for this token" in message
    assert f"REST and MCP requests share {LIMIT} a minute" in message
    assert int(response.headers["Retry-After"]) >= 1


def test_a_token_that_spent_its_budget_over_rest_is_refused_by_mcp(server, agent, limited):
    token = agent[1]
    assert [rest_get(server, token).status_code for _ in range(LIMIT)] == [200] * LIMIT

    assert_rate_limited(mcp_post(server, token))


def test_every_mcp_request_counts_not_only_tool_calls(server, agent, limited):
    token = agent[1]
    assert [mcp_post(server, token).status_code for _ in range(LIMIT)] == [200] * LIMIT

    assert_rate_limited(mcp_post(server, token, "tools/call", {"name": "list_panels"}))
    assert rest_get(server, token).status_code == 429


def test_a_token_that_spent_its_budget_over_mcp_is_refused_by_rest(server, agent, limited):
    token = agent[1]
    for _ in range(LIMIT):
        assert mcp_post(server, token, "tools/call", {"name": "list_panels"}).status_code == 200

    response = rest_get(server, token)

    assert response.status_code == 429
    assert response.json() == {"detail": "rate limit exceeded for this token"}
    assert int(response.headers["Retry-After"]) >= 1


def test_another_tokens_budget_is_its_own(server, agent, limited):
    for _ in range(LIMIT):
        rest_get(server, agent[1])

    assert not call(server, api_client("read")[1], "list_panels").is_error


class Stream:
    """A GET /mcp stream held open in a thread until `close`; `status` once answered."""

    def __init__(self, server, token: str):
        self.status: int | None = None
        self.answered = threading.Event()
        self.closing = threading.Event()
        self.body = ""
        self.thread = threading.Thread(target=self._run, args=(server, token), daemon=True)
        self.thread.start()
        assert self.answered.wait(10), "the stream was not answered"

    def _run(self, server, token):
        headers = {"Authorization": f"Bearer {token}", **HEADERS, "Accept": "text/event-stream"}
        with httpx.stream("GET", f"{server.url}/mcp", headers=headers, timeout=30) as response:
            self.status = response.status_code
            if response.status_code != 200:
                self.body = response.read().decode()
            self.answered.set()
            self.closing.wait(20)

    def close(self):
        self.closing.set()
        self.thread.join(10)


def test_a_tokens_open_streams_are_capped(server, agent, settings):
    settings.REVIEWAPP_MCP_STREAMS_PER_TOKEN = 2
    token = agent[1]
    held = [Stream(server, token), Stream(server, token)]
    try:
        assert [s.status for s in held] == [200, 200]
        third = Stream(server, token)
        assert third.status == 429
        assert "REVIEWAPP_MCP_STREAMS_PER_TOKEN" in third.body
        assert "2 open streams" in third.body
        other = Stream(server, api_client("read")[1])  # another token's are its own
        assert other.status == 200
        other.close()
        held.pop().close()
        wait_until = time.monotonic() + 10
        again = Stream(server, token)
        while again.status != 200 and time.monotonic() < wait_until:
            again = Stream(server, token)  # the closed stream's end reaches the server
        assert again.status == 200
        held.append(again)
    finally:
        for stream in held:
            stream.close()
