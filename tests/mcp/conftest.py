import asyncio
import threading
import time

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import marks
from tests.support.ports import free_port
from tests.webhooks.helpers import api_client


class LiveServer:
    """reviewapp's ASGI app (pages, API and /mcp) in a real uvicorn on loopback."""

    def __init__(self) -> None:
        from reviewapp.asgi import build_application

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            build_application(), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture
@marks("live_server")
def server(transactional_db):
    # Transactional: the server's threads must see the rows a test writes.
    with LiveServer() as live:
        yield live


async def call_async(server: LiveServer, token: str | None, tool: str, arguments=None):
    """One tool call through the SDK's own client over streamable HTTP."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=90) as http:
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
            return await client.call_tool(tool, arguments or {})


def call(server: LiveServer, token: str | None, tool: str, arguments=None):
    return asyncio.run(call_async(server, token, tool, arguments))


def error_text(result) -> str:
    """A failed call's message, less the SDK's "Error executing tool <name>: " prefix."""
    assert result.is_error, result.structured_content
    return result.content[0].text.partition(": ")[2]


@pytest.fixture
def agent():
    """An API client holding submit, read and judge; its row and token."""
    return api_client("submit", "read", "judge")
