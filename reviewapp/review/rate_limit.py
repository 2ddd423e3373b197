"""The per-token request limit, shared by the REST API and the MCP server.

One budget per token: every REST request and every MCP request (a tool call,
a listing, a stream opened) count once against
`REVIEWAPP_API_RATE_LIMIT_PER_MINUTE`, in a fixed one-minute window, so a
token cannot double its rate by switching protocol. Requests arriving together
are counted with one increment per token (`rate_limit_count_many`).

Counting requests per token and window, exactly, with or without Redis:

Redis increments atomically, so with a Redis cache the count lives there. Django's
file cache does not: its `incr` is a read followed by a write, and concurrent
requests lose increments (700 of 700 got through a limit of 600 under 8 threads).
Without Redis the count lives in a small SQLite file under VAR_DIR instead, where
one UPSERT statement increments under SQLite's write lock, so every web process and
thread on the machine counts the same window exactly.
"""

import logging
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

WINDOW_SECONDS = 60

log = logging.getLogger(__name__)
_local = threading.local()
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS hits ("
    " bucket TEXT NOT NULL, window INTEGER NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY (bucket, window)) WITHOUT ROWID"
)


class RateLimitExceeded(Exception):
    """The token used up this window's budget; `wait`: seconds until the next window."""

    def __init__(self, wait: int):
        super().__init__(f"rate limit exceeded for this token; retry in {wait} s")
        self.wait = wait


def rate_limit_count(*, token_prefix: str) -> None:
    """Count one request by the token; raise RateLimitExceeded past the window's budget."""
    (refused,) = rate_limit_count_many([token_prefix])
    if refused is not None:
        raise refused


def rate_limit_count_many(token_prefixes: list[str]) -> list[RateLimitExceeded | None]:
    """Count one request per entry (a token's prefix may come many times), one increment
    per token; for each, None or the refusal if it fell past the window's budget."""
    limit = settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    wait = int(WINDOW_SECONDS - now % WINDOW_SECONDS) + 1
    asked = Counter(token_prefixes)
    try:
        # Keyed by the token's random prefix, never the row id: ids can be reused.
        totals = {
            prefix: count_hit(prefix, window, ttl_seconds=WINDOW_SECONDS * 2, hits=hits)
            for prefix, hits in asked.items()
        }
    except Exception:
        # The counter (Redis) is down: fail open. Refusing every request would
        # turn a cache outage into an API outage; the limit is a courtesy.
        log.warning("rate limit not counted: the counter is unavailable", exc_info=True)
        return [None] * len(token_prefixes)
    # The requests of one token take the counts it reached in turn: the last ones are over.
    seen: Counter[str] = Counter()
    answers = []
    for prefix in token_prefixes:
        seen[prefix] += 1
        count = totals[prefix] - asked[prefix] + seen[prefix]
        answers.append(RateLimitExceeded(wait) if count > limit else None)
    return answers


def _redis_backed() -> bool:
    return "redis" in settings.CACHES["default"]["BACKEND"].lower()


def count_hit(bucket: str, window: int, *, ttl_seconds: int, hits: int = 1) -> int:
    """Record `hits` requests for `bucket` in `window`; return the window's count so far."""
    if _redis_backed():
        key = f"api-rate:{bucket}:{window}"
        try:
            return cache.incr(key, hits)  # the common case: the window's key exists
        except ValueError:  # the window's first request
            if cache.add(key, hits, timeout=ttl_seconds):
                return hits
            return cache.incr(key, hits)  # another request created it first
    return _sqlite_hit(bucket, window, hits)


def _connection() -> sqlite3.Connection:
    path = Path(settings.VAR_DIR) / "ratelimit.sqlite3"
    conn = getattr(_local, "conn", None)
    if conn is None or getattr(_local, "path", None) != path:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: each statement is its own transaction. A busy writer is
        # waited for briefly (one UPSERT takes microseconds), never failed.
        conn = sqlite3.connect(path, timeout=5, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        # No fsync at each commit (WAL's checkpoints still sync): a count lost to a power
        # cut is harmless, and one fsync per request cost 1 ms here, 12 ms under load.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(_SCHEMA)
        _local.conn, _local.path = conn, path
    return conn


def _sqlite_hit(bucket: str, window: int, hits: int) -> int:
    conn = _connection()
    (count,) = conn.execute(
        "INSERT INTO hits (bucket, window, n) VALUES (?, ?, ?) "
        "ON CONFLICT (bucket, window) DO UPDATE SET n = n + excluded.n RETURNING n",
        (bucket, window, hits),
    ).fetchone()
    if count == hits:  # a new window: forget the ones before the previous
        conn.execute("DELETE FROM hits WHERE window < ?", (window - 1,))
    return count
