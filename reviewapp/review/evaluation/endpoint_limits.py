"""Per-endpoint LLM call limits, shared by every worker process on every host.

Each LLM lens names its endpoint's limits (``Lens.max_concurrent_calls`` and
``Lens.calls_per_minute``). A call takes a slot before it is sent and gives it
back when its response is in (with the process's next ask for slots, or on its
own within ``llm_calls.RELEASE_WAIT_SECONDS``); the slot is also a record of the call for the
per-minute window. A slot carries an expiry (the lens's timeout plus a grace),
so a worker killed mid-call cannot keep it.

The state lives in Redis when the app has one (the broker or ``CACHE_URL``):
one Lua script gives back slots, checks and takes new ones atomically, on Redis's clock, awaited
on the LLM loop (reviewapp/review/evaluation/llm_loop/) with no thread in between. In
the embedded default it lives in the database (``EndpointCall`` rows), taken
under a lock per endpoint; those calls block, so the loop makes them on its
database thread.
"""

import hashlib
import secrets
import time
from collections.abc import Sequence

from django.conf import settings
from django.db import connection, transaction

from ..models import EndpointCall

# A slot whose call never reported back is reclaimed this long after the
# lens's own timeout: long enough for any live call to have ended.
LEASE_GRACE_SECONDS = 30.0
# When the endpoint is full, the hint of when to ask again (a release in the
# same process wakes the waiter sooner).
FULL_RETRY_SECONDS = 0.05
WINDOW_SECONDS = 60.0


def endpoint_key(base_url: str) -> str:
    """Lenses naming the same endpoint share its slots."""
    return hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()


def new_token() -> str:
    return secrets.token_hex(16)


# Gives back the ARGV[6] slots in ARGV[7..], then grants up to ARGV[4] slots
# at once, tokens in the ARGV after those: {granted, wait}.
_ACQUIRE = """
local released = tonumber(ARGV[6])
-- In chunks: unpack() of too many values overflows Lua's stack.
for i = 7, 6 + released, 1000 do
  redis.call('ZREM', KEYS[1], unpack(ARGV, i, math.min(i + 999, 6 + released)))
end
local first = 6 + released
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local max_calls, per_minute, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60)
local in_flight, recent = redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])
if in_flight >= max_calls then
  return {0, ARGV[5]}
end
if recent >= per_minute then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {0, tostring(tonumber(oldest[2]) + 60 - now)}
end
local granted = math.min(tonumber(ARGV[4]), max_calls - in_flight, per_minute - recent)
for i = 1, granted do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[first + i])
  redis.call('ZADD', KEYS[2], now, ARGV[first + i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 60)
redis.call('EXPIRE', KEYS[2], 120)
return {granted, '0'}
"""


class RedisLimits:
    """The limits in Redis, for an event loop: every call is awaited on the loop that made it."""

    def __init__(self, url: str) -> None:
        import redis.asyncio

        self.redis = redis.asyncio.Redis.from_url(url)
        self._acquire = self.redis.register_script(_ACQUIRE)

    @staticmethod
    def _keys(endpoint: str) -> list[str]:
        return [f"reviewapp:llm:{endpoint}:slots", f"reviewapp:llm:{endpoint}:calls"]

    async def try_acquire(
        self,
        endpoint: str,
        *,
        count: int,
        max_concurrent: int,
        per_minute: int,
        lease_seconds: float,
        release: Sequence[str] = (),
    ) -> tuple[list[str], float]:
        """Give back `release`, then up to `count` slots, atomically: the tokens
        granted, or none and when to ask again."""
        tokens = [new_token() for _ in range(count)]
        granted, wait = await self._acquire(
            keys=self._keys(endpoint),
            args=[
                max_concurrent,
                per_minute,
                lease_seconds,
                count,
                FULL_RETRY_SECONDS,
                len(release),
                *release,
                *tokens,
            ],
        )
        granted = int(granted)
        return tokens[:granted], 0.0 if granted else max(0.0, float(wait))

    async def release(self, endpoint: str, tokens: list[str]) -> None:
        await self.redis.zrem(self._keys(endpoint)[0], *tokens)


class DatabaseLimits:
    """The same limits in the database, for the embedded default (no Redis)."""

    def try_acquire(
        self,
        endpoint: str,
        *,
        count: int,
        max_concurrent: int,
        per_minute: int,
        lease_seconds: float,
        release: Sequence[str] = (),
    ) -> tuple[list[str], float]:
        now = time.time()
        with transaction.atomic():
            if release:
                EndpointCall.objects.filter(token__in=release).update(ends=now)
            # Count-then-insert must not interleave between workers. SQLite's
            # IMMEDIATE transactions (settings) already hold the write lock;
            # on PostgreSQL an advisory lock per endpoint serialises them.
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [endpoint])
            calls = EndpointCall.objects.filter(endpoint=endpoint)
            calls.filter(started__lt=now - WINDOW_SECONDS, ends__lte=now).delete()
            in_flight = calls.filter(ends__gt=now).count()
            if in_flight >= max_concurrent:
                return [], FULL_RETRY_SECONDS
            recent = calls.filter(started__gte=now - WINDOW_SECONDS).order_by("started")
            in_window = recent.count()
            if in_window >= per_minute:
                return [], max(0.0, recent.first().started + WINDOW_SECONDS - now)
            granted = min(count, max_concurrent - in_flight, per_minute - in_window)
            tokens = [new_token() for _ in range(granted)]
            EndpointCall.objects.bulk_create(
                EndpointCall(endpoint=endpoint, token=token, started=now, ends=now + lease_seconds)
                for token in tokens
            )
        return tokens, 0.0

    def release(self, endpoint: str, tokens: list[str]) -> None:
        EndpointCall.objects.filter(token__in=tokens).update(ends=time.time())


def redis_url() -> str | None:
    """The Redis the app already has, if any: the cache's, else the broker's."""
    for url in (settings.CACHE_URL, settings.CELERY_BROKER_URL):
        if url.startswith(("redis://", "rediss://")):
            return url
    return None
