"""No-op Celery tasks: what the broker and a worker cost by themselves.

Registered in the bench worker via ``-I benchmarks.support.noop``; the
benchmark process registers them by importing this module.
"""

from __future__ import annotations

import secrets
import time


def _register_tasks():
    from reviewapp.celery import app

    @app.task(name="benchmarks.noop", ignore_result=True)
    def noop() -> None:
        """Nothing at all: what the broker and the worker cost by themselves."""

    @app.task(name="benchmarks.noop_ack", ignore_result=True)
    def noop_ack(key: str, token: str) -> None:
        """Push `token` onto a Redis list, so the sender can see the task ran."""
        _redis().rpush(key, token)

    @app.task(name="benchmarks.noop_count", ignore_result=True)
    def noop_count(key: str) -> None:
        _redis().incr(key)

    return noop, noop_ack, noop_count


_redis_client = None


def _redis():
    global _redis_client
    if _redis_client is None:
        import redis
        from django.conf import settings

        _redis_client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    return _redis_client


noop, noop_ack, noop_count = _register_tasks()


def noop_round_trips(count: int) -> list[float]:
    """Sequential no-op round trips (send → the worker ran it → the sender knows), in ms."""
    key = f"bench-noop-ack-{secrets.token_hex(4)}"
    r = _redis()
    timings = []
    for i in range(count):
        started = time.perf_counter()
        noop_ack.delay(key, str(i))
        got = r.blpop([key], timeout=30)
        if got is None:
            raise TimeoutError("no-op task did not run within 30 s")
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def noop_throughput(count: int, timeout: float = 300.0) -> tuple[float, float]:
    """Enqueue `count` no-op tasks at once: (tasks per second until the worker ran them
    all, this process's CPU seconds per message sent)."""
    key = f"bench-noop-count-{secrets.token_hex(4)}"
    r = _redis()
    started = time.perf_counter()
    cpu_before = time.process_time()
    for _ in range(count):
        noop_count.delay(key)
    publish_cpu = (time.process_time() - cpu_before) / count
    deadline = time.monotonic() + timeout
    while int(r.get(key) or 0) < count:
        if time.monotonic() > deadline:
            raise TimeoutError("no-op tasks did not finish")
        time.sleep(0.01)
    return count / (time.perf_counter() - started), publish_cpu
