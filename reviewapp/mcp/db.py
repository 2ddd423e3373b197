"""Database calls from the MCP server's event loop, on threads, never held across a wait.

A tool's database work runs on one of `DB_THREADS` threads, each keeping its
connection as Django keeps a request thread's (CONN_MAX_AGE), so a process's
tools hold at most `DB_THREADS` connections and do not reconnect per call;
`wait_for_review` waits holding no thread and no connection. What every
request or every waiting call needs is not queued there once per call (1,000
waits held by one client made another client's call wait seconds for a
thread): it is asked in batches (`Coalesced`), each kind on a thread of its
own (`Lane`): the tokens of the requests arriving (`auth.tokens`), and the
review a wait starts and ends with (`waits`). The watch that polls for final
proposals on behalf of every waiting call has a lane too, and one thread that
LISTENs for proposals becoming final on its own connection (`Listener`).
"""

import asyncio
import copy
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from django.db import close_old_connections, connections

DB_THREADS = 4

_tools = ThreadPoolExecutor(max_workers=DB_THREADS, thread_name_prefix="mcp-db")
_lanes: list["Lane"] = []


async def in_db(fn, /, *args, **kwargs):
    """`fn(*args, **kwargs)` on one of the tools' database threads."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_tools, partial(_kept, fn, args, kwargs))


async def close_all() -> None:
    """Close every connection the server's threads keep (at its shutdown)."""
    loop = asyncio.get_running_loop()
    # One task per tools' thread, each held until all run: each closes its own thread's.
    barrier = threading.Barrier(DB_THREADS)

    def close_this_threads() -> None:
        try:
            barrier.wait(timeout=10)
        except threading.BrokenBarrierError:  # a thread still busy: close what this one has
            pass
        connections.close_all()

    await asyncio.gather(
        *(loop.run_in_executor(_tools, close_this_threads) for _ in range(DB_THREADS)),
        *(lane.close() for lane in _lanes),
    )


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
        _lanes.append(self)

    async def run(self, fn, /, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, partial(_kept, fn, args, kwargs))

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, connections.close_all)


class Coalesced:
    """`many(keys)` on a lane for every key asked while the previous batch ran.

    `get(key)` waits for its key's value: `many` answers a mapping from each
    key to its value or to the exception to raise. However many calls ask at
    once, they cost a few trips to the lane (each takes every key queued
    meanwhile), one per distinct key; calls asking the same key share it.
    """

    def __init__(self, lane: Lane, many: Callable[[list], Mapping[Hashable, object]]) -> None:
        self._lane = lane
        self._many = many
        self._queued: dict[Hashable, list[asyncio.Future]] = {}
        self._drainer: asyncio.Task | None = None

    async def get(self, key: Hashable):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queued.setdefault(key, []).append(future)
        # A drainer belongs to its loop: a server started afresh (a new loop) starts its own.
        if self._drainer is None or self._drainer.done() or self._drainer.get_loop() is not loop:
            self._drainer = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._queued:
            batch, self._queued = self._queued, {}
            try:
                values = await self._lane.run(self._many, list(batch))
            except Exception as exc:  # the whole batch failed: each call says so
                values = {key: exc for key in batch}
            for key, futures in batch.items():
                _settle(futures, values.get(key, LookupError(f"no answer for {key!r}")))


def _settle(futures: Iterable[asyncio.Future], value) -> None:
    for future in futures:
        if future.done():  # its call was cancelled (the client went away)
            continue
        if isinstance(value, BaseException):
            future.set_exception(copy.copy(value))  # each call raises its own
        else:
            future.set_result(value)


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
