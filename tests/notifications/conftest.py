"""A real SMTP server and a chat receiver, each on loopback in this process."""

import json
import threading
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from tests.support.ports import free_port


class _Inbox:
    def __init__(self):
        self.messages = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        with self.arrived:
            self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.original_content)))
            self.arrived.notify_all()
        return "250 OK"

    def wait_for(self, count: int, timeout: float = 10):
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.messages) >= count, timeout)
        return self.messages


@pytest.fixture
def smtp(settings):
    """aiosmtpd on loopback; Django's SMTP backend pointed at it."""
    inbox = _Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    smtp_to(settings, controller.port)
    yield inbox
    controller.stop()


def smtp_to(settings, port: int) -> None:
    """Django's default mailer: SMTP to 127.0.0.1:`port`, no TLS."""
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": port, "use_tls": False, "timeout": 5},
        }
    }


class ChatReceiver:
    """An incoming-webhook endpoint as Slack and Mattermost run one: JSON posts, 200 ok."""

    def __init__(self, status: int = 200):
        self.posts: list[dict] = []
        self.status = status
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.posts.append(json.loads(body))
                self.send_response(received.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/room-secret"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chat():
    receiver = ChatReceiver()
    yield receiver
    receiver.close()
