"""A real loopback HTTP server speaking OpenAI chat-completions, driven by a script.

Tests exercise the actual httpx transport (sockets, status codes, timeouts,
dropped connections) without a model. Each request to
``POST /v1/chat/completions`` consumes the next scripted step; every request is
recorded so tests can assert what the client sent.

    with OpenAIStub() as server:
        server.script([HttpError(500), Answer('{"verdict": "pass", ...}')])
        ...  # point the client at server.base_url
        server.requests[1].body["messages"]
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# --- script steps -----------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A normal completion whose message content is ``content``."""

    content: str


@dataclass(frozen=True)
class RawCompletion:
    """A completion whose choice carries ``message`` and ``finish_reason`` as given,
    for the shapes reasoning models and refusals take (``reasoning_content``,
    ``refusal`` with null content, ``finish_reason: "length"``)."""

    message: dict
    finish_reason: str = "stop"


@dataclass(frozen=True)
class HttpError:
    status: int
    body: str = '{"error": {"message": "scripted error"}}'
    headers: dict | None = None


@dataclass(frozen=True)
class RateLimited:
    """HTTP 429; ``retry_after`` is sent verbatim as the Retry-After header."""

    retry_after: str


@dataclass(frozen=True)
class Slow:
    """Wait ``seconds`` before answering, to provoke client read timeouts."""

    seconds: float
    content: str


@dataclass(frozen=True)
class Trickle:
    """Send a valid completion a few bytes at a time, ``interval`` seconds apart.

    Each read finishes quickly, so only a total deadline on the client stops it.
    """

    content: str
    interval: float
    chunk_size: int = 8


@dataclass(frozen=True)
class MalformedBody:
    """HTTP 200 whose body is not a chat completion."""

    body: str = "this is not json"


@dataclass(frozen=True)
class RawBody:
    """HTTP 200 whose body is ``payload`` as given, e.g. compressed, with its
    ``Content-Encoding`` (None: no such header), whatever the client asked for."""

    payload: bytes
    encoding: str | None = None


@dataclass(frozen=True)
class CloseConnection:
    """Read the request, then hang up without any response."""


Step = (
    Answer
    | RawCompletion
    | HttpError
    | RateLimited
    | Slow
    | Trickle
    | MalformedBody
    | RawBody
    | CloseConnection
)


@dataclass(frozen=True)
class StubRequest:
    path: str
    body: dict
    authorization: str | None
    accept_encoding: str | None = None


def completion(content: str, model: str = "stub-model") -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


# --- server -----------------------------------------------------------------


class OpenAIStub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[Step] = []
        self._stopping = threading.Event()
        self.requests: list[StubRequest] = []
        # What answers once the script is exhausted (None: a 400), for tests
        # and benchmarks that send more requests than they would script.
        self.respond: Callable[[StubRequest], Step] | None = None
        # Requests being answered right now, the most at once, and each
        # request's (start, end) on the monotonic clock.
        self.in_flight = 0
        self.max_in_flight = 0
        self.spans: list[tuple[float, float]] = []
        # The client's port of each request: one port for many requests is one
        # reused connection.
        self.client_ports: list[int] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        # Handlers stuck in a Slow/Trickle step must not block shutdown.
        self._server.daemon_threads = True
        # A short poll keeps shutdown (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, steps: list[Step | str]) -> None:
        """Queue steps; a bare string is shorthand for ``Answer(string)``."""
        with self._lock:
            self._steps.extend(Answer(s) if isinstance(s, str) else s for s in steps)

    @property
    def remaining_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    def start(self) -> OpenAIStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _take(self, request: StubRequest) -> Step | None:
        with self._lock:
            self.requests.append(request)
            if self._steps:
                return self._steps.pop(0)
        return self.respond(request) if self.respond is not None else None

    def _enter(self, client_port: int) -> float:
        with self._lock:
            self.client_ports.append(client_port)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return time.monotonic()

    def _leave(self, started: float) -> None:
        with self._lock:
            self.in_flight -= 1
            self.spans.append((started, time.monotonic()))


def _make_handler(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
        # Headers and body go out in separate writes; with Nagle on, delayed
        # ACKs add ~40 ms to every response.
        disable_nagle_algorithm = True
        _open = False  # a counted call is being answered (see _leave)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            # A proxy's request names the whole URL; it is recorded as sent.
            if urlsplit(self.path).path != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, b'{"error": {"message": "request body is not JSON"}}')
                return
            self._started = stub._enter(self.client_address[1])
            self._open = True
            try:
                step = stub._take(
                    StubRequest(
                        self.path,
                        body,
                        self.headers.get("Authorization"),
                        self.headers.get("Accept-Encoding"),
                    )
                )
                self._play(step, body.get("model", "stub-model"))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer
            finally:
                self._leave()

        def _leave(self) -> None:
            """The call is over for the server: counted once, before its last byte goes out.

            Counting it after the write would let the client read the answer
            and send its next call before this thread gets the GIL back, and
            the server would see one call more in flight than there are.
            """
            if self._open:
                self._open = False
                stub._leave(self._started)

        def _play(self, step: Step | None, model: str) -> None:
            match step:
                case None:
                    # 4xx is permanent for the client, so an under-scripted
                    # test fails fast instead of retrying.
                    self._send(400, b'{"error": {"message": "openai_stub: script exhausted"}}')
                case Answer(content):
                    self._send_json(200, completion(content, model))
                case RawCompletion(message, finish_reason):
                    body = completion("", model)
                    body["choices"][0].update(message=message, finish_reason=finish_reason)
                    self._send_json(200, body)
                case HttpError(status, text, headers):
                    self._send(status, text.encode(), headers)
                case RateLimited(retry_after):
                    self._send(
                        429, b'{"error": {"message": "rate limited"}}', {"Retry-After": retry_after}
                    )
                case Slow(seconds, content):
                    if stub._stopping.wait(seconds):
                        return
                    self._send_json(200, completion(content, model))
                case Trickle(content, interval, chunk_size):
                    payload = json.dumps(completion(content, model)).encode()
                    self._start(200, len(payload))
                    for i in range(0, len(payload), chunk_size):
                        if stub._stopping.wait(interval):
                            return
                        if i + chunk_size >= len(payload):
                            self._leave()
                        self.wfile.write(payload[i : i + chunk_size])
                        self.wfile.flush()
                case MalformedBody(text):
                    self._send(200, text.encode())
                case RawBody(payload, encoding):
                    self._send(200, payload, {"Content-Encoding": encoding} if encoding else None)
                case CloseConnection():
                    self.close_connection = True

        def _start(self, status: int, length: int, headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(length))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()

        def _send(self, status: int, payload: bytes, headers: dict | None = None) -> None:
            self._start(status, len(payload), headers)
            self._leave()
            self.wfile.write(payload)

        def _send_json(self, status: int, data: dict) -> None:
            self._send(status, json.dumps(data).encode())

    return Handler
