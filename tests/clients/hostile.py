"""A hostile HTTP server on a real loopback socket, and a way to call either client.

`Hostile(*replies)` answers the n-th request with the n-th reply (the last one
repeats): an HTTP answer, raw bytes, a hang-up without a word, or a delay. It
records when each request arrived, so a test can see how long a client waited.
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import json
import ssl
import threading
import time
from dataclasses import dataclass, field

import httpx
from reviewapp_client import AsyncClient, Client

from tests.support.ports import refused_port

# Loading the CA bundle takes a fifth of a second; hundreds of clients share one.
_TLS = ssl.create_default_context()


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes | str = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering


@dataclass(frozen=True)
class Raw:
    """Bytes written as they are, the status line included (b"" hangs up at once)."""

    data: bytes


@dataclass
class Arrival:
    method: str
    path: str
    at: float  # time.monotonic()
    wall: float  # time.time(), to compare with an HTTP-date


class Hostile:
    def __init__(self, *replies: Reply | Raw):
        self.replies = list(replies) or [Reply()]
        self.arrivals: list[Arrival] = []
        self._lock = threading.Lock()
        hostile = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                reply = hostile._next(self.command, self.path)
                if isinstance(reply, Raw):
                    self.wfile.write(reply.data)
                    self.close_connection = True
                    return
                time.sleep(reply.delay)
                body = reply.body.encode() if isinstance(reply.body, str) else reply.body
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _next(self, method: str, path: str) -> Reply | Raw:
        with self._lock:
            self.arrivals.append(Arrival(method, path, time.monotonic(), time.time()))
            return self.replies[min(len(self.arrivals), len(self.replies)) - 1]

    def gaps(self) -> list[float]:
        """Seconds between consecutive requests."""
        times = [a.at for a in self.arrivals]
        return [later - earlier for earlier, later in itertools.pairwise(times)]

    def __enter__(self) -> Hostile:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def proposal_body(status: str = "queued") -> str:
    return json.dumps(
        {
            "id": 7,
            "status": status,
            "panel": "support",
            "title": "",
            "content": "Refunds are issued within 14 days.",
            "thought_process": "",
            "content_sha256": "0" * 64,
            "progress": {"answered": 0, "asked": 1},
            "tally": None,
            "judgements": [],
            "evidence": [],
            "escalation": None,
            "decision": None,
        }
    )


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hung up on a slow reply is the point of some tests


def refused_url() -> str:
    """A loopback address nothing listens on: connecting is refused."""
    return f"http://127.0.0.1:{refused_port()}"


def call(kind: str, url: str, method: str, *args, client_options=None, took=None, **kwargs):
    """`method` of a fresh Client ("sync") or AsyncClient ("async"); listings are read
    to the end, so every page is fetched. `took`, a list, gets the call's seconds."""
    options = {"max_retries": 0, **(client_options or {})}
    took = [] if took is None else took
    if kind == "sync":
        transport = httpx.HTTPTransport(verify=_TLS)
        with Client(url, "rva_test", transport=transport, **options) as client:
            started = time.monotonic()
            try:
                result = getattr(client, method)(*args, **kwargs)
                return list(result) if method.startswith("list_") else result
            finally:
                took.append(time.monotonic() - started)

    async def run():
        transport = httpx.AsyncHTTPTransport(verify=_TLS)
        async with AsyncClient(url, "rva_test", transport=transport, **options) as client:
            started = time.monotonic()
            try:
                result = getattr(client, method)(*args, **kwargs)
                if method.startswith("list_") and method != "list_webhooks":
                    return [item async for item in result]
                return await result
            finally:
                took.append(time.monotonic() - started)

    return asyncio.run(run())
