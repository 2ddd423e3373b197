"""A real webhook receiver on loopback that verifies every delivery with `standardwebhooks`.

    with Receiver() as receiver:
        receiver.secrets["/hook"] = secret          # from POST /api/webhooks
        receiver.script("/hook", [Reply(500), Slow(3), Trickle(0.2), Reply(204)])
        ...                                           # point an endpoint at receiver.url("/hook")
        receiver.wait_for(1)[0].payload["type"]

A request whose signature does not verify is recorded with `error` set and
answered 400, as a real receiver would; tests assert there are none.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Reply:
    status: int = 204
    body: str | bytes = ""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Slow:
    """Answer 204 after `seconds`: longer than the sender's read timeout, it times out."""

    seconds: float


@dataclass(frozen=True)
class Trickle:
    """Headers one byte every `every` seconds (within the sender's read timeout), for 10 s."""

    every: float


@dataclass(frozen=True)
class Hang:
    """Hold the request until `release` is set (or 60 s): a sender killed meanwhile."""

    release: threading.Event


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    payload: dict | None = None
    error: str | None = None
    at: float = field(default_factory=time.monotonic)

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    def __init__(self):
        self.secrets: dict[str, str] = {}
        self.received: list[Received] = []
        self._scripts: dict[str, list] = {}
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                record = Received(self.path, headers, body)
                secret = receiver.secrets.get(self.path)
                try:
                    if secret is None:
                        raise WebhookVerificationError(f"no secret for {self.path}")
                    record.payload = Webhook(secret).verify(body, headers)
                except WebhookVerificationError as exc:
                    record.error = str(exc)
                with receiver._lock:
                    receiver.received.append(record)
                    steps = receiver._scripts.get(self.path) or []
                    step = steps.pop(0) if steps else Reply()
                if record.error:
                    step = Reply(400, record.error)
                if isinstance(step, Slow):
                    time.sleep(step.seconds)
                    step = Reply()
                if isinstance(step, Hang):
                    step.release.wait(60)
                    step = Reply()
                try:
                    if isinstance(step, Trickle):
                        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                        deadline = time.monotonic() + 10
                        while time.monotonic() < deadline:
                            time.sleep(step.every)
                            self.wfile.write(b"a")
                        return
                    data = step.body if isinstance(step.body, bytes) else step.body.encode()
                    self.send_response(step.status)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in step.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the sender gave up (timeout) or died
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def script(self, path: str, steps: list) -> None:
        with self._lock:
            self._scripts[path] = list(steps)

    def at(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path == path]

    def wait_for(self, count: int, path: str = "/hook", timeout: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.at(path)
            if len(got) >= count:
                return got
            time.sleep(0.05)
        raise AssertionError(f"{len(self.at(path))} of {count} deliveries to {path} arrived")


def body_of(record: Received) -> dict:
    return json.loads(record.body)
