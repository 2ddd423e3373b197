"""`manage.py run_witness`: a C2SP tlog-witness for other logs (and for this one's peers).

The witness keeps one thing per log: the size and root of the latest
checkpoint it cosigned. That state lives in one JSON file, read and
replaced under an exclusive lock (a thread lock, and ``flock`` on a lock file
beside it so two processes on one state file also take turns); a new state is
written to a temporary file, fsynced, and ``os.replace``d over the old one, so
a crash leaves either the old state or the new one, never a torn file. The
state is persisted before the cosignature is returned, as the specification
requires. Nothing here touches the database.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import http.server
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reviewapp.core.cosignature import (
    COSIGNATURE_KEY_TYPE,
    SIZE_CONTENT_TYPE,
    VerifierKey,
    cosignature_line,
)
from reviewapp.core.merkle import HASH_BYTES
from reviewapp.core.signing import Signer
from reviewapp.core.witness_protocol import Accepted, Latest, WitnessedLog, judge

STATE_FORMAT = "reviewapp.witness-state/1"
MAX_BODY_BYTES = 64 * 1024  # 63 proof lines and a checkpoint with 16 signatures fit many times
READ_TIMEOUT_SECONDS = 30  # one wait for the client's next bytes
# A whole request, from its first line to its body's last byte: a client trickling a byte
# within each read timeout would otherwise hold a thread for days.
REQUEST_DEADLINE_SECONDS = 30


class StateError(Exception):
    """The state file is unreadable: refusing to start beats forgetting what was cosigned."""


class WitnessState:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.read()  # fail at start-up, not at the first request

    def read(self) -> dict[str, Latest]:
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StateError(f"cannot read the witness state {self.path}: {exc}") from exc
        try:
            data = json.loads(text)
            if data.get("format") != STATE_FORMAT:
                raise ValueError(f"format is not {STATE_FORMAT}")
            latest = {}
            for origin, entry in data["logs"].items():
                root = base64.b64decode(entry["root"], validate=True)
                if type(entry["size"]) is not int or entry["size"] < 0 or len(root) != HASH_BYTES:
                    raise ValueError(f"bad entry for {origin}")
                latest[origin] = Latest(entry["size"], root)
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
            raise StateError(f"the witness state {self.path} is not valid: {exc}") from exc
        return latest

    def write(self, latest: dict[str, Latest]) -> None:
        data = {
            "format": STATE_FORMAT,
            "logs": {
                origin: {"size": entry.size, "root": base64.b64encode(entry.root).decode()}
                for origin, entry in sorted(latest.items())
            },
        }
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a crash
        finally:
            os.close(directory)

    @contextmanager
    def locked(self) -> Iterator[dict[str, Latest]]:
        """The current state, exclusively: check and persist inside one ``with``."""
        with self._lock:
            fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield self.read()
            finally:
                os.close(fd)  # releases the flock


def witness_vkey(name: str, signer: Signer) -> VerifierKey:
    """The verifier key logs configure for this witness. Raises CosignatureError for a bad name."""
    return VerifierKey(name, COSIGNATURE_KEY_TYPE, signer.public_key)


class Witness:
    def __init__(
        self, *, name: str, signer: Signer, logs: dict[str, WitnessedLog], state: WitnessState
    ) -> None:
        self.name = name
        self.signer = signer
        self.logs = logs
        self.state = state
        self.vkey = witness_vkey(name, signer)

    def add_checkpoint(self, body: bytes) -> tuple[int, str, bytes]:
        """(status, content type, body) of the answer to one add-checkpoint request."""
        with self.state.locked() as latest:
            result = judge(body, self.logs, latest.get)
            if isinstance(result, Accepted):
                latest[result.origin] = Latest(result.size, result.root)
                self.state.write(latest)
        if not isinstance(result, Accepted):
            if result.status == 409:
                return 409, SIZE_CONTENT_TYPE, f"{result.latest_size}\n".encode()
            return result.status, "text/plain; charset=utf-8", f"{result.reason}\n".encode()
        line = cosignature_line(
            result.text, self.name, self.signer.public_key, self.signer.sign_bytes, int(time.time())
        )
        return 200, "text/plain; charset=utf-8", line.encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the specification recommends
    timeout = READ_TIMEOUT_SECONDS
    server_version = "reviewapp-witness/1"
    witness: Witness  # set on the subclass serve() makes

    def handle_one_request(self) -> None:
        self._watchdog = threading.Timer(REQUEST_DEADLINE_SECONDS, self._cut_off)
        self._watchdog.daemon = True
        self._watchdog.start()
        try:
            super().handle_one_request()
        finally:
            self._watchdog.cancel()

    def _cut_off(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)  # the blocked read returns at once
        except OSError:
            pass  # already closed

    def _answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = self.headers.get("Content-Length", "")
        # A body left unread would be taken for the next request on this connection.
        if not length.isascii() or not length.isdigit():
            self.close_connection = True
            self._answer(411, "text/plain; charset=utf-8", b"Content-Length is required\n")
            return
        # The length first: int() refuses a string of thousands of digits.
        if len(length) > len(str(MAX_BODY_BYTES)) or int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            self._answer(413, "text/plain; charset=utf-8", b"request body too large\n")
            return
        body = self.rfile.read(int(length))
        self._watchdog.cancel()  # read in time: judging and answering are ours to finish
        if len(body) < int(length):
            self.close_connection = True  # cut off, or the client hung up
            return
        if self.path != "/add-checkpoint":
            self._answer(404, "text/plain; charset=utf-8", b"not found\n")
            return
        self._answer(*self.witness.add_checkpoint(body))

    def do_GET(self) -> None:  # noqa: N802
        self._watchdog.cancel()
        self._answer(405, "text/plain; charset=utf-8", b"POST /add-checkpoint\n")


def serve(witness: Witness, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """A server bound to host:port (port 0: any free one); call ``serve_forever`` on it."""
    handler = type("WitnessHandler", (_Handler,), {"witness": witness})
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
