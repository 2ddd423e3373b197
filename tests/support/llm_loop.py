"""A worker process's LLM loop in the test process: built, and stopped with its threads.

The loop is the production path of every LLM call: its thread, its HTTP
sessions, its database thread and recorder thread (each with a connection of
its own, so a test using it runs with the transactional database).
"""

import asyncio
from contextlib import contextmanager

from django.db import connection

from reviewapp.celery import app as celery_app
from reviewapp.review.evaluation.llm_loop import process


def _close_connection() -> None:
    connection.close()


@contextmanager
def running_loop():
    """A fresh ``process.Runtime``; on exit its sessions, tasks, loop and threads end."""
    # What happens to kept answers depends on the real broker's queue: empty to begin with.
    celery_app.control.purge()
    made = process.Runtime()
    try:
        yield made
    finally:
        _stop(made)
        celery_app.control.purge()


def _stop(runtime: process.Runtime) -> None:
    async def close():
        for session in runtime.sessions.values():
            await session.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    asyncio.run_coroutine_threadsafe(close(), runtime.loop).result(5)
    runtime.loop.call_soon_threadsafe(runtime.loop.stop)
    # The loop's threads keep their database connections until closed there: a
    # connection left open would hold the test database (PostgreSQL cannot drop it).
    runtime.hand_back.wait(5)
    for executor in (runtime.db, runtime.hand_back._recorder):
        executor.submit(_close_connection).result(5)
        executor.shutdown(wait=True)
