"""A witness on loopback that answers add-checkpoint with whatever bytes a test scripts.

The hostile side of the cosigning tests: a real `run_witness` only ever answers
what the specification allows, this one answers anything, as slowly as told.
"""

import http.server
import threading
from collections.abc import Callable
from typing import BinaryIO

from reviewapp.core.signing import Signer
from reviewapp.ledger.witness_server import witness_vkey

# (the witness, the request body, the connection's output) -> None; writes a raw answer.
Answer = Callable[["HostileWitness", bytes, BinaryIO], None]


def answer(status: int, body: bytes, content_type: str = "text/plain", **headers: str) -> bytes:
    """A raw HTTP/1.1 answer with a Content-Length."""
    lines = [f"HTTP/1.1 {status} Whatever", f"Content-Type: {content_type}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class HostileWitness:
    def __init__(self, name: str, respond: Answer) -> None:
        self.name = name
        self.signer = Signer.generate()
        self.vkey = witness_vkey(name, self.signer).text()
        self.requests: list[bytes] = []
        witness = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                witness.requests.append(body)
                self.close_connection = True
                try:
                    respond(witness, body, self.wfile)
                    self.wfile.flush()
                except OSError:
                    pass  # the client gave up on us: what some tests want

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def configured(self) -> tuple[str, str]:
        """This witness as a REVIEWAPP_LEDGER_WITNESSES entry."""
        return (self.vkey, self.url)
