"""Per-endpoint limits in both shared stores: the database (embedded default) and Redis."""

import asyncio
import time

import pytest

from reviewapp.core.endpoint_control import Outcome
from reviewapp.review.evaluation.endpoint_limits import (
    DatabaseLimits,
    RedisLimits,
    endpoint_status,
    new_token,
    redis_url,
)

pytestmark = pytest.mark.django_db


class _OnALoop:
    """The Redis store's coroutines run to completion, as the LLM loop awaits them."""

    def __init__(self, limits: RedisLimits) -> None:
        self._limits, self._loop = limits, asyncio.new_event_loop()

    def try_acquire(self, *args, **kwargs):
        return self._loop.run_until_complete(self._limits.try_acquire(*args, **kwargs))

    def release(self, *args):
        return self._loop.run_until_complete(self._limits.release(*args))


def _stores():
    stores = [pytest.param(DatabaseLimits, id="database")]
    url = redis_url()
    stores.append(
        pytest.param(
            lambda: _OnALoop(RedisLimits(url)),
            id="redis",
            marks=pytest.mark.skipif(
                url is None, reason="Redis store: run with CELERY_BROKER_URL=redis://…"
            ),
        )
    )
    return stores


@pytest.fixture(params=_stores())
def limits(request):
    return request.param()


@pytest.fixture
def endpoint():
    return new_token()  # a fresh endpoint per test: nothing left over from another


def _take(limits, endpoint, **overrides):
    """One slot: its token (None if refused) and when to ask again."""
    tokens, wait = _take_many(limits, endpoint, count=1, **overrides)
    return (tokens[0] if tokens else None), wait


def _take_many(limits, endpoint, *, count, **overrides):
    options = {"max_concurrent": 2, "per_minute": 100, "lease_seconds": 30.0} | overrides
    return limits.try_acquire(endpoint, count=count, **options)


def test_no_more_calls_than_the_limit_are_in_flight_and_a_release_frees_a_slot(limits, endpoint):
    first, _ = _take(limits, endpoint)
    second, _ = _take(limits, endpoint)
    refused, wait = _take(limits, endpoint)
    assert first and second and refused is None and wait > 0
    limits.release(endpoint, [first])
    assert _take(limits, endpoint)[0] is not None


def test_calls_per_minute_are_counted_even_once_released(limits, endpoint):
    for _ in range(3):
        token, _ = _take(limits, endpoint, per_minute=3)
        limits.release(endpoint, [token])
    refused, wait = _take(limits, endpoint, per_minute=3)
    assert refused is None
    assert 50 < wait <= 60  # until the oldest call leaves the minute


def test_a_slot_never_released_is_reclaimed_when_its_lease_ends(limits, endpoint):
    _take(limits, endpoint, max_concurrent=1, lease_seconds=0.3)  # its worker was killed
    assert _take(limits, endpoint, max_concurrent=1)[0] is None
    time.sleep(0.4)
    assert _take(limits, endpoint, max_concurrent=1)[0] is not None


def test_endpoints_do_not_share_slots(limits, endpoint):
    _take(limits, endpoint, max_concurrent=1)
    assert _take(limits, new_token(), max_concurrent=1)[0] is not None


def test_one_ask_for_many_slots_gets_no_more_than_the_limit_leaves(limits, endpoint):
    _take(limits, endpoint, max_concurrent=5)
    tokens, _ = _take_many(limits, endpoint, count=10, max_concurrent=5)
    assert len(tokens) == 4 and len(set(tokens)) == 4
    assert _take(limits, endpoint, max_concurrent=5)[0] is None


def test_one_ask_for_many_slots_stops_at_the_calls_per_minute(limits, endpoint):
    tokens, _ = _take_many(limits, endpoint, count=10, max_concurrent=50, per_minute=3)
    limits.release(endpoint, tokens)
    assert len(tokens) == 3
    refused, wait = _take(limits, endpoint, max_concurrent=50, per_minute=3)
    assert refused is None and 50 < wait <= 60


def test_slots_given_back_with_an_ask_are_free_for_that_same_ask(limits, endpoint):
    held, _ = _take_many(limits, endpoint, count=2)
    assert _take(limits, endpoint)[0] is None  # full
    tokens, _ = _take_many(limits, endpoint, count=2, release=held)
    assert len(tokens) == 2 and not set(tokens) & set(held)


def test_thousands_of_slots_go_back_with_one_ask(limits, endpoint):
    held, _ = _take_many(limits, endpoint, count=9000, max_concurrent=9000, per_minute=20_000)
    tokens, _ = _take_many(
        limits, endpoint, count=9000, max_concurrent=9000, per_minute=20_000, release=held
    )
    assert len(held) == len(tokens) == 9000


def test_slots_released_together_are_all_free_again(limits, endpoint):
    tokens, _ = _take_many(limits, endpoint, count=2)
    limits.release(endpoint, tokens)
    assert len(_take_many(limits, endpoint, count=2)[0]) == 2


def _refused(retry_after=None):
    return Outcome(refused=True, sent_at=time.time() - 0.1, retry_after=retry_after)


def _served():
    return Outcome(refused=False, sent_at=time.time() - 0.1)


def test_the_effective_limit_starts_at_the_configured_maximum(limits, endpoint):
    tokens, _ = _take_many(limits, endpoint, count=10, max_concurrent=8)
    assert len(tokens) == 8


def test_a_429_with_the_limit_in_use_lowers_the_limit_for_every_later_ask(limits, endpoint):
    held, _ = _take_many(limits, endpoint, count=10, max_concurrent=10)
    # One refused call comes back with its slot; the nine others stay in flight.
    tokens, _ = _take_many(
        limits, endpoint, count=10, max_concurrent=10, release=held[:1], outcomes=[_refused()]
    )
    assert tokens == []  # 9 in flight, the limit now 7
    limits.release(endpoint, held[1:3])
    assert _take_many(limits, endpoint, count=10, max_concurrent=10)[0] == []  # 7 of 7
    limits.release(endpoint, held[3:5])
    assert len(_take_many(limits, endpoint, count=10, max_concurrent=10)[0]) == 2


def test_a_retry_after_holds_the_endpoint_for_every_caller(limits, endpoint):
    token, _ = _take(limits, endpoint, max_concurrent=50)
    _take_many(
        limits, endpoint, count=0, max_concurrent=50, release=[token], outcomes=[_refused(2)]
    )
    # Another process, with nothing of its own refused, waits too.
    refused, wait = _take(limits, endpoint, max_concurrent=50)
    assert refused is None and 1.5 < wait <= 2


def test_served_calls_at_the_maximum_leave_the_limit_where_it_is(limits, endpoint):
    held, _ = _take_many(limits, endpoint, count=4, max_concurrent=4)
    tokens, _ = _take_many(
        limits, endpoint, count=4, max_concurrent=4, release=held, outcomes=[_served()] * 4
    )
    assert len(tokens) == 4


@pytest.fixture
def configured():
    """The store the app uses as configured: what the status reads."""
    url = redis_url()
    return _OnALoop(RedisLimits(url)) if url else DatabaseLimits()


def test_the_status_shows_the_effective_limit_the_waiting_calls_and_recent_429s(
    configured, endpoint, monkeypatch
):
    limits = configured
    monkeypatch.setattr(
        "reviewapp.review.evaluation.endpoint_limits.endpoint_key", lambda url: endpoint
    )
    held, _ = _take_many(limits, endpoint, count=10, max_concurrent=10)
    _take_many(
        limits,
        endpoint,
        count=1,
        max_concurrent=10,
        release=held[:2],
        outcomes=[_refused(), _refused()],
        waiting=3,
        base_url="http://provider.test/v1",
    )
    status = endpoint_status("http://provider.test/v1", 10)
    assert (status.effective_limit, status.in_flight, status.waiting) == (7, 8, 3)
    assert status.refusals_recent == 2 and status.throttling


def test_an_endpoint_never_called_shows_its_configured_maximum(configured, endpoint, monkeypatch):
    monkeypatch.setattr(
        "reviewapp.review.evaluation.endpoint_limits.endpoint_key", lambda url: endpoint
    )
    status = endpoint_status("http://provider.test/v1", 64)
    assert status.effective_limit == 64 and status.waiting == status.refusals_recent == 0
    assert not status.throttling


@pytest.mark.skipif(redis_url() is None, reason="Redis store: run with CELERY_BROKER_URL=redis://…")
def test_two_processes_updating_the_limit_at_once_both_count_in_redis(endpoint):
    first, second = _OnALoop(RedisLimits(redis_url())), _OnALoop(RedisLimits(redis_url()))
    options = {"max_concurrent": 10, "per_minute": 100, "lease_seconds": 30.0}
    held, _ = first.try_acquire(endpoint, count=10, **options)
    second.try_acquire(endpoint, count=0, **options)  # the second sees the control as it is
    first.try_acquire(endpoint, count=0, release=held[:1], outcomes=[_refused()], **options)
    # The second process last saw the control before the first cut it: its
    # update conflicts, is computed again on the cut limit, and is applied.
    later = Outcome(refused=True, sent_at=time.time() + 1)
    second.try_acquire(endpoint, count=0, release=held[1:2], outcomes=[later], **options)
    assert first.try_acquire(endpoint, count=10, **options)[0] == []  # 8 in flight
    first.release(endpoint, held[2:])
    # 10 × 0.7 × 0.7 = 4.9
    assert len(first.try_acquire(endpoint, count=10, **options)[0]) == 4
