import pytest

from reviewapp.core.guarantee.focus import audit_factors, audit_rate
from reviewapp.core.guarantee.patterns import VotePattern

NEAR = VotePattern("approved", 2, 1, 0, False)
FAR = VotePattern("approved", 3, 0, 0, False)


def test_the_pattern_closest_to_the_target_gets_the_larger_share():
    factors = audit_factors({NEAR: 0.001, FAR: 0.04}, {NEAR: 100, FAR: 900})
    assert factors[NEAR] > 1 > factors[FAR]


def test_the_budget_of_the_flat_rate_is_kept():
    decisions = {NEAR: 100, FAR: 900}
    factors = audit_factors({NEAR: 0.001, FAR: 0.04}, decisions)
    assert sum(decisions[p] * factors[p] for p in decisions) == pytest.approx(1000)


def test_without_decisions_to_weigh_every_pattern_keeps_the_flat_rate():
    assert audit_factors({NEAR: 0.001, FAR: 0.04}, {}) == {NEAR: 1.0, FAR: 1.0}


def test_a_rate_never_exceeds_every_decision():
    assert audit_rate(10, 3.0) == pytest.approx(30)
    assert audit_rate(40, 3.0) == 100
    assert audit_rate(10, None) == 10
