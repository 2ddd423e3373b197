"""The per-token rate limit counts exactly under concurrency, with or without Redis
(reviewapp/review/rate_limit.py; the REST API's 429 is in tests/api/test_auth.py,
its budget shared with MCP in tests/mcp/test_rate_limit.py)."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from reviewapp.review.rate_limit import RateLimitExceeded, rate_limit_count, rate_limit_count_many
from tests.api.conftest import client_of, make_token

pytestmark = pytest.mark.django_db


def _passes(client) -> bool:
    try:
        rate_limit_count(token_prefix=client.token_prefix)
    except RateLimitExceeded:
        return False
    return True


def test_seven_hundred_requests_from_eight_threads_at_a_limit_of_600_let_exactly_600_through(
    settings, rate_window
):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 600
    client = client_of(make_token("read"))

    with ThreadPoolExecutor(max_workers=8) as pool:
        passed = sum(pool.map(lambda _: _passes(client), range(700)))

    assert passed == 600


def test_the_count_is_per_token(settings, rate_window):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 3
    first, second = client_of(make_token("read")), client_of(make_token("read"))

    assert [_passes(first) for _ in range(5)] == [True, True, True, False, False]
    assert _passes(second)


def test_requests_counted_together_take_the_counts_in_turn(settings, rate_window):
    """The MCP gate counts the requests arriving at once in one increment per token."""
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 3
    first, second = client_of(make_token("read")), client_of(make_token("read"))

    refused = rate_limit_count_many([first.token_prefix] * 2 + [second.token_prefix] * 4)
    later = rate_limit_count_many([first.token_prefix, first.token_prefix])

    assert [r is not None for r in refused] == [False, False, False, False, False, True]
    assert [r is not None for r in later] == [False, True]
    assert all(r.wait >= 1 for r in [*refused, *later] if r is not None)


def test_the_counters_sqlite_file_syncs_at_checkpoints_not_at_each_request():
    from reviewapp.review.rate_limit import _connection

    conn = _connection()
    # WAL with synchronous=NORMAL (1): no fsync per counted request (1 ms each, 12 under load).
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1
