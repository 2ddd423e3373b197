"""The checked HTTP client: it connects only to addresses the policy allows, checked at
connect time, and ends every exchange inside a deadline that covers the answer too."""

import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import certifi
import httpcore
import httpx

from reviewapp.core.webhooks import AddressPolicy

from .addresses import AddressRefused, resolved_address


class _RefusedConnect(httpcore.ConnectError):
    """Raised inside the connection pool; httpx surfaces it as a ConnectError."""


class _CheckedBackend(httpcore.SyncBackend):
    """Resolves the host itself, checks every address, and connects to the checked one.

    The check and the connection use the same lookup, so a name that resolves
    to a public address when it was registered and to 127.0.0.1 now (DNS
    rebinding) is refused now. TLS still verifies the certificate against the host name:
    httpcore sends the URL's host as SNI, not the address.
    """

    def __init__(self, policy: AddressPolicy):
        super().__init__()
        self.policy = policy

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            address = resolved_address(host, port, self.policy)
        except AddressRefused as exc:
            raise _RefusedConnect(f"refused: {exc}") from exc
        timeout = _left(timeout, httpcore.ConnectTimeout)
        stream = super().connect_tcp(address, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream)


_deadline: ContextVar[float | None] = ContextVar("reviewapp_http_deadline", default=None)


@contextmanager
def exchange_deadline(seconds: float) -> Iterator[None]:
    """Checked clients' requests inside end within ``seconds``, answer included.

    The read timeout bounds each wait for a byte, so a peer sending one byte
    every few seconds would otherwise hold the caller for as long as it likes.
    """
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    """``timeout``, shortened to what is left before the deadline (none set: unchanged)."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the exchange's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every wait ends by the deadline of the exchange using it (pooled
    connections serve several exchanges, so the deadline is read at each wait)."""

    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes, timeout=None):
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer, timeout=None):
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self):
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info):
        return self._stream.get_extra_info(info)


class _CheckedTransport(httpx.HTTPTransport):
    def __init__(self, policy: AddressPolicy):
        super().__init__(retries=0)
        # httpx builds its pool without a way to pass a network backend; this
        # is the same pool with ours (httpx is pinned below 1.0).
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            max_connections=20,
            max_keepalive_connections=10,
            keepalive_expiry=30.0,
            retries=0,
            network_backend=_CheckedBackend(policy),
        )


def checked_client(
    policy: AddressPolicy, *, connect: float, read: float, user_agent: str
) -> httpx.Client:
    """A client that connects only to addresses ``policy`` allows (webhooks, chat, witnesses)."""
    return httpx.Client(
        transport=_CheckedTransport(policy),
        timeout=httpx.Timeout(read, connect=connect),
        follow_redirects=False,  # a redirect could point anywhere; it counts as a failure
        trust_env=False,  # no proxy from the environment: it would bypass the address check
        headers={"User-Agent": user_agent},
    )
