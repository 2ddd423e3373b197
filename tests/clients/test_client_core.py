"""The client's I/O-free core: reading Retry-After and drawing the backoff."""

import math
import random
from datetime import UTC, datetime

import pytest
from reviewapp_client._base import Core, retry_after_seconds

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


def core(**options) -> Core:
    defaults = {"timeout": 30.0, "max_retries": 3, "max_retry_wait": 30.0}
    return Core("http://x", "t", **{**defaults, **options})


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("Sun, 01 Mar 2026 12:00:30 GMT", 30.0),  # IMF-fixdate
        ("Sunday, 01-Mar-26 12:00:30 GMT", 30.0),  # obsolete RFC 850 form
        ("Sun Mar  1 12:00:30 2026", 30.0),  # obsolete asctime form
        ("Sun, 01 Mar 2026 11:00:00 GMT", 0.0),  # a date past is "now"
        ("9" * 40, math.inf),  # valid, absurd: nobody retries after it
    ],
)
def test_retry_after_reads_seconds_and_http_dates(header, seconds):
    assert retry_after_seconds(header, now=NOW) == seconds


@pytest.mark.parametrize(
    "header", [None, "", "nan", "inf", "-inf", "-5", "1.5", "1e400", "0x10", "٣", "soon", "\x00"]
)
def test_retry_after_that_is_neither_is_ignored(header):
    assert retry_after_seconds(header, now=NOW) is None


def test_backoff_is_full_jitter_spread_over_the_whole_window():
    draws = [core(rng=random.Random(seed)).delay(3, None) for seed in range(400)]
    window = 0.5 * 2**3
    assert all(0 <= d <= window for d in draws)
    assert min(draws) < window * 0.05 and max(draws) > window * 0.95
    assert len({round(d, 3) for d in draws}) > 350  # not a handful of fixed steps


def test_backoff_never_exceeds_the_cap():
    draws = [core(rng=random.Random(seed), max_retry_wait=2).delay(20, None) for seed in range(50)]
    assert max(draws) <= 2


def test_a_retry_after_is_waited_at_least_and_spread_a_little():
    draws = [core(rng=random.Random(seed)).delay(0, 5.0) for seed in range(100)]
    assert all(5.0 <= d <= 5.5 for d in draws) and max(draws) - min(draws) > 0.3


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf])
def test_a_client_timeout_must_be_positive_and_finite(timeout):
    with pytest.raises(ValueError, match="timeout"):
        core(timeout=timeout)
