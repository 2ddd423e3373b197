"""Per-endpoint LLM call limits, shared by every worker process on every host.

Each LLM lens names its endpoint's limits (``Lens.max_concurrent_calls`` and
``Lens.calls_per_minute``). A call takes a slot before it is sent and gives it
back when its response is in (with the process's next ask for slots, or on its
own within ``llm_calls.RELEASE_WAIT_SECONDS``); the slot is also a record of the call for the
per-minute window. A slot carries an expiry (the lens's timeout plus a grace),
so a worker killed mid-call cannot keep it.

Within the configured maximum, the endpoint's *effective* limit follows the
provider (``core.endpoint_control``: AIMD on its 429s, and a Retry-After
holds every worker's calls). The calls' outcomes ride on the asks with the
slots given back; the controller's state is kept beside the slots, with the
calls waiting in each process and the 429s of the last minutes, for the
admin and ``/healthz`` (``endpoint_status``).

The state lives in Redis when the app has one (the broker or ``CACHE_URL``):
one Lua script gives back slots, checks and takes new ones atomically, on Redis's clock, awaited
on the LLM loop (reviewapp/review/evaluation/llm_loop/) with no thread in between. In
the embedded default it lives in the database (``EndpointCall`` and
``EndpointControl`` rows), taken under a lock per endpoint; those calls
block, so the loop makes them on its database thread. Redis applies the
controller's arithmetic, done in Python, as a compare-and-set on the
control's version, asked again with the state it answers on a conflict.
"""

import hashlib
import os
import secrets
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import connection, transaction

from reviewapp.core import endpoint_control
from reviewapp.core.endpoint_control import Control, Outcome

from ..models import EndpointCall, EndpointControl, Lens

# A slot whose call never reported back is reclaimed this long after the
# lens's own timeout: long enough for any live call to have ended.
LEASE_GRACE_SECONDS = 30.0
# When the endpoint is full, the hint of when to ask again (a release in the
# same process wakes the waiter sooner).
FULL_RETRY_SECONDS = 0.05
WINDOW_SECONDS = 60.0
# 429s are shown for this many minutes back.
REFUSAL_MINUTES = 5
# A process's count of waiting calls older than this is not shown: the
# process is gone, or has had nothing waiting since (a hold ends by then).
WAITING_FRESH_SECONDS = 120.0
# Compare-and-set rounds before an update is dropped (the next ask brings it again).
CAS_ATTEMPTS = 5


def process_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _needs_update(control: Control, outcomes: Sequence[Outcome], maximum: int) -> bool:
    """Served calls at the maximum change nothing: the common case costs no write."""
    return any(o.refused for o in outcomes) or (bool(outcomes) and control.limit < maximum)


def _refusals_in(outcomes: Sequence[Outcome]) -> int:
    return sum(1 for o in outcomes if o.refused)


def endpoint_key(base_url: str) -> str:
    """Lenses naming the same endpoint share its slots."""
    return hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()


def new_token() -> str:
    return secrets.token_hex(16)


# KEYS: slots, calls (the minute's), control, refusals (by minute), waiting (by process).
# ARGV[1..8]: maximum, per minute, lease, count, full retry, the caller's
# clock, process, calls waiting there. ARGV[9..16]: the control's expected
# version ('' for no update), then its new limit, hold_until, cut_at,
# round_in_flight, ceiling, served_peak, and the 429s to count. ARGV[17]: the
# base URL. ARGV[18]: how many slots to give back, in the ARGV after it; then
# the tokens to grant. Sets the control only if its version is the one expected
# (else changes nothing and answers -1), gives the slots back, then grants up
# to ARGV[4] slots unless a Retry-After holds the endpoint.
# Answers {granted, wait, version, limit, hold_until, cut_at, round_in_flight,
# ceiling, served_peak, in flight}; the control's fields are strings ('' when unset).
_ACQUIRE = """
local FIELDS = {'version', 'limit', 'hold_until', 'cut_at', 'round_in_flight', 'ceiling',
                'served_peak'}
local function reply(granted, wait)
  local c = redis.call('HMGET', KEYS[3], unpack(FIELDS))
  for i = 1, #FIELDS do if not c[i] then c[i] = '' end end
  return {granted, tostring(wait), c[1], c[2], c[3], c[4], c[5], c[6], c[7],
          redis.call('ZCARD', KEYS[1])}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60)
local clock = tonumber(ARGV[6])
if ARGV[9] ~= '' then
  local version = redis.call('HGET', KEYS[3], 'version') or '0'
  if version ~= ARGV[9] then
    return reply(-1, 0)
  end
  redis.call('HSET', KEYS[3], 'version', tostring(tonumber(version) + 1), 'limit', ARGV[10],
             'hold_until', ARGV[11], 'cut_at', ARGV[12], 'round_in_flight', ARGV[13],
             'ceiling', ARGV[14], 'served_peak', ARGV[15])
  if tonumber(ARGV[16]) > 0 then
    redis.call('HINCRBY', KEYS[4], tostring(math.floor(clock / 60)), ARGV[16])
    redis.call('EXPIRE', KEYS[4], 900)
  end
end
redis.call('HSET', KEYS[3], 'url', ARGV[17])
redis.call('EXPIRE', KEYS[3], 86400)
redis.call('HSET', KEYS[5], ARGV[7], ARGV[8] .. ' ' .. ARGV[6])
redis.call('EXPIRE', KEYS[5], 3600)
local released = tonumber(ARGV[18])
-- In chunks: unpack() of too many values overflows Lua's stack.
for i = 19, 18 + released, 1000 do
  redis.call('ZREM', KEYS[1], unpack(ARGV, i, math.min(i + 999, 18 + released)))
end
local first = 18 + released
local hold = tonumber(redis.call('HGET', KEYS[3], 'hold_until') or '0')
if hold > clock then
  return reply(0, hold - clock)
end
-- endpoint_control.allowed(): the effective limit, within [1, maximum].
local max_calls = tonumber(ARGV[1])
local limit = tonumber(redis.call('HGET', KEYS[3], 'limit') or '')
if limit then
  max_calls = math.min(max_calls, math.max(1, math.floor(limit)))
end
local per_minute, lease = tonumber(ARGV[2]), tonumber(ARGV[3])
local in_flight, recent = redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])
if in_flight >= max_calls then
  return reply(0, ARGV[5])
end
if recent >= per_minute then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return reply(0, tonumber(oldest[2]) + 60 - now)
end
local granted = math.min(tonumber(ARGV[4]), max_calls - in_flight, per_minute - recent)
for i = 1, granted do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[first + i])
  redis.call('ZADD', KEYS[2], now, ARGV[first + i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 60)
redis.call('EXPIRE', KEYS[2], 120)
return reply(granted, 0)
"""


def _control_of(fields: Sequence, maximum: int) -> tuple[int, Control]:
    """The control's version and value from the script's answer (fresh: at the maximum)."""
    version, limit, hold_until, cut_at, round_in_flight, ceiling, served_peak = (
        f.decode() if isinstance(f, bytes) else str(f) for f in fields
    )
    if not limit:
        return int(version or 0), endpoint_control.start(maximum)
    return int(version or 0), Control(
        limit=float(limit),
        hold_until=float(hold_until or 0),
        cut_at=float(cut_at or 0),
        round_in_flight=int(round_in_flight or 0),
        ceiling=float(ceiling or 0),
        served_peak=int(served_peak or 0),
    )


class RedisLimits:
    """The limits in Redis, for an event loop: every call is awaited on the loop that made it."""

    def __init__(self, url: str) -> None:
        import redis.asyncio

        self.redis = redis.asyncio.Redis.from_url(url)
        self._acquire = self.redis.register_script(_ACQUIRE)
        self._process = process_id()
        # Each endpoint's control as last seen (version, value, calls in
        # flight): the base of the next update, so an ask is one round trip
        # unless another process updated it since.
        self._seen: dict[str, tuple[int, Control, int]] = {}

    @staticmethod
    def _keys(endpoint: str) -> list[str]:
        prefix = settings.REVIEWAPP_REDIS_KEY_PREFIX
        return [f"{prefix}:llm:{endpoint}:{name}" for name in _REDIS_KEYS]

    async def try_acquire(
        self,
        endpoint: str,
        *,
        count: int,
        max_concurrent: int,
        per_minute: int,
        lease_seconds: float,
        release: Sequence[str] = (),
        outcomes: Sequence[Outcome] = (),
        waiting: int = 0,
        base_url: str = "",
    ) -> tuple[list[str], float]:
        """Give back `release` with their calls' `outcomes`, then up to `count`
        slots, atomically: the tokens granted, or none and when to ask again."""
        tokens = [new_token() for _ in range(count)]
        rounds = 0
        while True:
            if rounds == CAS_ATTEMPTS:
                # Another process won every round: this ask's outcomes are
                # dropped (the next ones teach the same), its slots go back.
                outcomes = ()
            rounds += 1
            now = time.time()
            update: list = [""] * 8
            if endpoint in self._seen:
                version, control, in_flight = self._seen[endpoint]
            else:
                version, control, in_flight = 0, endpoint_control.start(max_concurrent), 0
            if _needs_update(control, outcomes, max_concurrent):
                new = endpoint_control.update(
                    control, outcomes, in_flight=in_flight, now=now, maximum=max_concurrent
                )
                update = [version, *_fields(new), _refusals_in(outcomes)]
            answer = await self._acquire(
                keys=self._keys(endpoint),
                args=[
                    max_concurrent,
                    per_minute,
                    lease_seconds,
                    count,
                    FULL_RETRY_SECONDS,
                    repr(now),
                    self._process,
                    waiting,
                    *update,
                    base_url,
                    len(release),
                    *release,
                    *tokens,
                ],
            )
            granted, wait = int(answer[0]), float(answer[1])
            self._seen[endpoint] = (*_control_of(answer[2:9], max_concurrent), int(answer[9]))
            if granted >= 0:
                return tokens[:granted], 0.0 if granted else max(0.0, wait)

    def in_flight_seen(self, endpoint: str) -> int:
        """Calls in flight at the endpoint after this process's last ask (0: none yet)."""
        return self._seen[endpoint][2] if endpoint in self._seen else 0

    async def release(self, endpoint: str, tokens: list[str]) -> None:
        await self.redis.zrem(self._keys(endpoint)[0], *tokens)


_REDIS_KEYS = ("slots", "calls", "control", "refusals", "waiting")
CONTROL_FIELDS = (
    "version",
    "limit",
    "hold_until",
    "cut_at",
    "round_in_flight",
    "ceiling",
    "served_peak",
)


def _fields(control: Control) -> list:
    return [
        repr(control.limit),
        repr(control.hold_until),
        repr(control.cut_at),
        control.round_in_flight,
        repr(control.ceiling),
        control.served_peak,
    ]


class DatabaseLimits:
    """The same limits in the database, for the embedded default (no Redis)."""

    def __init__(self) -> None:
        # Calls in flight at each endpoint after this process's last grant there.
        self._in_flight: dict[str, int] = {}

    def in_flight_seen(self, endpoint: str) -> int:
        """Calls in flight at the endpoint after this process's last ask (0: none yet)."""
        return self._in_flight.get(endpoint, 0)

    def try_acquire(
        self,
        endpoint: str,
        *,
        count: int,
        max_concurrent: int,
        per_minute: int,
        lease_seconds: float,
        release: Sequence[str] = (),
        outcomes: Sequence[Outcome] = (),
        waiting: int = 0,
        base_url: str = "",
    ) -> tuple[list[str], float]:
        now = time.time()
        with transaction.atomic():
            # Count-then-insert must not interleave between workers. SQLite's
            # IMMEDIATE transactions (settings) already hold the write lock;
            # on PostgreSQL an advisory lock per endpoint serialises them.
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [endpoint])
            calls = EndpointCall.objects.filter(endpoint=endpoint)
            row = _control_row(
                endpoint, base_url, max_concurrent, outcomes, waiting, now, calls=calls
            )
            if release:
                EndpointCall.objects.filter(token__in=release).update(ends=now)
            calls.filter(started__lt=now - WINDOW_SECONDS, ends__lte=now).delete()
            held = endpoint_control.held_for(_control_from_row(row), now)
            if held:
                return [], held
            max_concurrent = endpoint_control.allowed(_control_from_row(row), max_concurrent)
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
        self._in_flight[endpoint] = in_flight + granted
        return tokens, 0.0

    def release(self, endpoint: str, tokens: list[str]) -> None:
        EndpointCall.objects.filter(token__in=tokens).update(ends=time.time())


def _control_row(
    endpoint: str,
    base_url: str,
    maximum: int,
    outcomes: Sequence[Outcome],
    waiting: int,
    now: float,
    *,
    calls,
) -> EndpointControl:
    """The endpoint's control row, updated by `outcomes` (under the endpoint's lock)."""
    row, _ = EndpointControl.objects.get_or_create(
        endpoint=endpoint, defaults={"base_url": base_url, "limit": float(maximum)}
    )
    changed = set()
    control = _control_from_row(row)
    if _needs_update(control, outcomes, maximum):
        # The reported calls still hold their slots: they count as in flight.
        in_flight = calls.filter(ends__gt=now).count()
        new = endpoint_control.update(
            control, outcomes, in_flight=in_flight, now=now, maximum=maximum
        )
        for name, value in asdict(new).items():
            setattr(row, name, value)
        changed |= set(asdict(new))
        if refused := _refusals_in(outcomes):
            minute = int(now // 60)
            recent = {k: v for k, v in row.refusals.items() if int(k) > minute - REFUSAL_MINUTES}
            recent[str(minute)] = recent.get(str(minute), 0) + refused
            row.refusals = recent
            changed.add("refusals")
    me = process_id()
    if row.waiting.get(me, [0])[0] != waiting:
        row.waiting = {
            proc: entry
            for proc, entry in row.waiting.items()
            if entry[1] > now - WAITING_FRESH_SECONDS
        } | {me: [waiting, now]}
        changed.add("waiting")
    if base_url and row.base_url != base_url:
        row.base_url = base_url
        changed.add("base_url")
    if changed:
        row.save(update_fields=sorted(changed))
    return row


def _control_from_row(row: EndpointControl) -> Control:
    return Control(
        limit=row.limit,
        hold_until=row.hold_until,
        cut_at=row.cut_at,
        round_in_flight=row.round_in_flight,
        ceiling=row.ceiling,
        served_peak=row.served_peak,
    )


@dataclass(frozen=True)
class EndpointStatus:
    """An endpoint as the admin and /healthz show it."""

    base_url: str
    maximum: int
    effective_limit: int
    in_flight: int
    waiting: int
    refusals_recent: int  # answers 429 in the last REFUSAL_MINUTES minutes
    held_for: float  # seconds a Retry-After still holds every call

    @property
    def throttling(self) -> bool:
        """The provider has answered 429 lately, or a Retry-After holds the endpoint now."""
        return self.held_for > 0 or self.refusals_recent > 0

    def as_json(self) -> dict:
        return asdict(self) | {
            "held_for": round(self.held_for, 1),
            "refusal_minutes": REFUSAL_MINUTES,
            "throttling": self.throttling,
        }


def describe(status: EndpointStatus) -> str:
    """One line for people: the effective limit, the calls waiting, the 429s, any hold."""
    text = (
        f"effective limit {status.effective_limit:,} of {status.maximum:,} calls at once "
        f"({status.in_flight:,} in flight now), {status.waiting:,} waiting, "
        f"{status.refusals_recent:,} answered 429 in the last {REFUSAL_MINUTES} minutes"
    )
    if status.held_for:
        text += f"; its Retry-After holds every call for {status.held_for:.1f} s more"
    if status.throttling:
        return f"The provider is throttling: {text}."
    return text[0].upper() + text[1:] + "."


def llm_endpoints() -> list[dict]:
    """Every active LLM lens's endpoint, as /healthz shows it."""
    maxima: dict[str, int] = {}
    lenses = Lens.objects.filter(backend=Lens.Backend.LLM, active=True).exclude(base_url="")
    for base_url, maximum in lenses.values_list("base_url", "max_concurrent_calls"):
        maxima[base_url] = max(maximum, maxima.get(base_url, 0))
    return [endpoint_status(url, maximum).as_json() for url, maximum in sorted(maxima.items())]


def endpoint_status(base_url: str, maximum: int) -> EndpointStatus:
    """What the shared store knows of an endpoint now (blocking; for the web process)."""
    endpoint, now = endpoint_key(base_url), time.time()
    url = redis_url()
    if url:
        control, in_flight, waiting, refusals = _redis_status(url, endpoint, maximum, now)
    else:
        control, in_flight, waiting, refusals = _database_status(endpoint, maximum, now)
    return EndpointStatus(
        base_url=base_url,
        maximum=maximum,
        effective_limit=endpoint_control.allowed(control, maximum),
        in_flight=in_flight,
        waiting=waiting,
        refusals_recent=refusals,
        held_for=endpoint_control.held_for(control, now),
    )


def _recent_refusals(by_minute: dict, now: float) -> int:
    minute = int(now // 60)
    return sum(int(n) for k, n in by_minute.items() if int(k) > minute - REFUSAL_MINUTES)


def _fresh_waiting(entries, now: float) -> int:
    return sum(int(count) for count, when in entries if float(when) > now - WAITING_FRESH_SECONDS)


def _redis_status(url: str, endpoint: str, maximum: int, now: float):
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        keys = dict(zip(_REDIS_KEYS, RedisLimits._keys(endpoint), strict=True))
        fields = client.hmget(keys["control"], *CONTROL_FIELDS)
        in_flight = client.zcount(keys["slots"], now, "+inf")
        waiting = [entry.split() for entry in client.hvals(keys["waiting"])]
        refusals = client.hgetall(keys["refusals"])
    finally:
        client.close()
    _, control = _control_of([f or "" for f in fields], maximum)
    return control, in_flight, _fresh_waiting(waiting, now), _recent_refusals(refusals, now)


def _database_status(endpoint: str, maximum: int, now: float):
    row = EndpointControl.objects.filter(endpoint=endpoint).first()
    in_flight = EndpointCall.objects.filter(endpoint=endpoint, ends__gt=now).count()
    if row is None:
        return endpoint_control.start(maximum), in_flight, 0, 0
    return (
        _control_from_row(row),
        in_flight,
        _fresh_waiting(row.waiting.values(), now),
        _recent_refusals(row.refusals, now),
    )


def redis_url() -> str | None:
    """The Redis the app already has, if any: the cache's, else the broker's."""
    for url in (settings.CACHE_URL, settings.CELERY_BROKER_URL):
        if url.startswith(("redis://", "rediss://")):
            return url
    return None
