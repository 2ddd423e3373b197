"""Database calls from the MCP server's event loop, on threads, never held across a wait.

A tool's database work runs on one of `DB_THREADS` threads and closes its
connection when it returns, so a process's tools never hold more than
`DB_THREADS` connections, and none while a call waits on the loop
(`wait_for_review` waits holding no thread and no connection). The watch
that polls for final proposals on behalf of every waiting call has one
thread of its own, whose connection lives while anything is watched
(`Lane`), so polling does not reconnect every tick.
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
