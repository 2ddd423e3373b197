import random

import pytest

from reviewapp.core.audits import audit_drawn


def test_a_zero_rate_never_draws():
    def draw():
        raise AssertionError("no draw at 0 %")

    assert audit_drawn(0, draw) is False


def test_a_full_rate_audits_every_decision():
    rng = random.Random(1)
    assert all(audit_drawn(100, rng.random) for _ in range(1000))


@pytest.mark.parametrize("rate", [5, 25, 50, 80])
def test_the_share_drawn_is_the_rate(rate):
    rng = random.Random(rate)
    drawn = sum(audit_drawn(rate, rng.random) for _ in range(20_000))
    assert abs(drawn / 20_000 - rate / 100) < 0.015


def test_the_same_seed_draws_the_same_decisions():
    first, second = random.Random(7), random.Random(7)
    assert [audit_drawn(30, first.random) for _ in range(200)] == [
        audit_drawn(30, second.random) for _ in range(200)
    ]
