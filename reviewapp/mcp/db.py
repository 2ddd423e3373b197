"""Database calls from the MCP server's event loop, on threads, never held across a wait.

A tool's database work runs on one of `DB_THREADS` threads and closes its
connection when it returns, so a process's tools never hold more than
`DB_THREADS` connections, and none while a call waits on the loop
(`wait_for_review` waits holding no thread and no connection). The watch
that polls for final proposals on behalf of every waiting call has one
thread of its own, whose connection lives while anything is watched
(`Lane`), so polling does not reconnect every tick, and one thread that
LISTENs for proposals becoming final on its own connection (`Listener`).
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from django.db import close_old_connections, connections

DB_THREADS = 4

_tools = ThreadPoolExecutor(max_workers=DB_THREADS, thread_name_prefix="mcp-db")


def _closing(fn, args, kwargs):
    try:
        return fn(*args, **kwargs)
    finally:
        connections.close_all()


async def in_db(fn, /, *args, **kwargs):
    """`fn(*args, **kwargs)` on a database thread, its connection closed after it."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_tools, partial(_closing, fn, args, kwargs))


def _kept(fn, args, kwargs):
    # As Django treats a request: a connection past CONN_MAX_AGE, or broken, is replaced.
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


class Lane:
    """One thread whose connection is kept between calls until `close`."""

    def __init__(self, name: str) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, fn, /, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, partial(_kept, fn, args, kwargs))

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, connections.close_all)


class Listener:
    """One thread whose own connection LISTENs on a PostgreSQL channel until `close`.

    `wait` returns the payloads that arrived within `timeout_s` (those sent
    while nobody waited wait in the connection, so none is lost between two
    calls), at the first one. The connection is kept whatever CONN_MAX_AGE
    says: LISTEN lasts only as long as it does. On another database `wait`
    only sleeps.
    """

    def __init__(self, name: str, channel: str) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._channel = channel
        self._listening = None  # the driver connection LISTEN was sent on

    def _wait(self, timeout_s: float) -> list[str]:
        connection = connections["default"]
        try:
            connection.ensure_connection()
            raw = connection.connection
            if raw is not self._listening:
                with connection.cursor() as cursor:
                    cursor.execute(f'LISTEN "{self._channel}"')
                self._listening = raw
            return [n.payload for n in raw.notifies(timeout=timeout_s, stop_after=1)]
        except Exception:
            # A broken connection is replaced by the next call; meanwhile the caller polls.
            self._listening = None
            connection.close()
            raise

    async def wait(self, timeout_s: float) -> list[str]:
        if connections["default"].vendor != "postgresql":
            await asyncio.sleep(timeout_s)
            return []
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._wait, timeout_s)

    async def close(self) -> None:
        def close() -> None:
            self._listening = None
            connections.close_all()

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, close)
