"""Kappa with its interval, the lens-vs-human rates, co-errors and drift transitions."""

import itertools
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviewapp.core.agreement import PairTable, cohen_kappa
from reviewapp.core.calibration import (
    CO_ERROR_LIFT,
    CO_ERROR_MIN_BOTH,
    CO_ERROR_MIN_ITEMS,
    DO_NOT_TRUST,
    DRIFTED,
    MIN_KAPPA_ITEMS,
    ONE_CLASS,
    RECOVERED,
    TOO_FEW,
    TRUST,
    WATCH,
    CoErrors,
    HumanTable,
    Kappa,
    co_errors_reading,
    drift_transition,
    kappa_with_interval,
    lens_agreement,
    lens_standing,
)


def _independent_kappa_and_se(pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """From raw rating pairs over any categories, written apart from the module under test.

    Fleiss, Cohen & Everitt (1969): kappa's non-null asymptotic variance,
    with the weights of weighted kappa set to the identity.
    """
    n = len(pairs)
    categories = sorted({c for pair in pairs for c in pair})
    p = {(a, b): 0.0 for a in categories for b in categories}
    for a, b in pairs:
        p[a, b] += 1 / n
    row = {c: sum(p[c, b] for b in categories) for c in categories}
    col = {c: sum(p[a, c] for a in categories) for c in categories}
    weight = {(a, b): 1.0 if a == b else 0.0 for a in categories for b in categories}
    po = sum(weight[k] * p[k] for k in p)
    pe = sum(weight[a, b] * row[a] * col[b] for a, b in p)
    kappa = (po - pe) / (1 - pe)
    wbar_row = {a: sum(col[b] * weight[a, b] for b in categories) for a in categories}
    wbar_col = {b: sum(row[a] * weight[a, b] for a in categories) for b in categories}
    total = sum(
        p[a, b] * (weight[a, b] - (wbar_row[a] + wbar_col[b]) * (1 - kappa)) ** 2 for a, b in p
    )
    variance = (total - (kappa - pe * (1 - kappa)) ** 2) / (n * (1 - pe) ** 2)
    return kappa, math.sqrt(variance)


def _pairs(table: HumanTable) -> list[tuple[str, str]]:
    """(lens verdict, human label) per item, an approval read as pass."""
    return (
        [("pass", "pass")] * table.pass_approved
        + [("pass", "fail")] * table.pass_rejected
        + [("fail", "pass")] * table.fail_approved
        + [("fail", "fail")] * table.fail_rejected
    )


def test_kappa_and_interval_match_fleiss_and_paiks_worked_example():
    # Fleiss, Levin & Paik (2003) as run by statpsych's ci.kappa(.05, 31, 12, 4, 58):
    # Cohen kappa 0.6756757, SE 0.07344761, 95 % CI 0.5317210 to 0.8196303.
    result = kappa_with_interval(HumanTable(58, 4, 12, 31))
    assert result.value == pytest.approx(0.6756757, abs=1e-7)
    assert result.low == pytest.approx(0.5317210, abs=1e-6)
    assert result.high == pytest.approx(0.8196303, abs=1e-6)


def test_kappa_and_interval_match_the_delta_packages_worked_example():
    # R package Delta, GetKappa(matrix(c(50,10,10,20),2,2)): kappa 0.5 ± SE 0.09682458.
    result = kappa_with_interval(HumanTable(50, 10, 10, 20))
    assert result.value == pytest.approx(0.5)
    half_width = (result.high - result.low) / 2
    assert half_width == pytest.approx(1.959964 * 0.09682458, abs=1e-6)


def test_kappa_and_interval_agree_with_an_independent_implementation_on_random_tables():
    rng = random.Random(29)
    for _ in range(200):
        table = HumanTable(*(rng.randint(0, 60) for _ in range(4)))
        result = kappa_with_interval(table)
        if result.value is None:
            continue
        kappa, se = _independent_kappa_and_se(_pairs(table))
        assert result.value == pytest.approx(kappa, abs=1e-9)
        if -1 < kappa - 1.959964 * se and kappa + 1.959964 * se < 1:
            assert result.low == pytest.approx(kappa - 1.959964 * se, abs=1e-6)
            assert result.high == pytest.approx(kappa + 1.959964 * se, abs=1e-6)


def test_kappa_matches_the_lens_pair_kappa_on_the_same_counts():
    table = HumanTable(20, 5, 10, 15)
    assert kappa_with_interval(table).value == pytest.approx(cohen_kappa(PairTable(20, 5, 10, 15)))


def test_kappa_is_undefined_with_too_few_adjudications():
    result = kappa_with_interval(HumanTable(MIN_KAPPA_ITEMS - 2, 0, 0, 1))
    assert (result.value, result.low, result.reason) == (None, None, TOO_FEW)
    assert "fewer than" in result.reason_text


def test_kappa_is_undefined_when_every_verdict_and_decision_is_one_class():
    assert kappa_with_interval(HumanTable(pass_approved=30)).reason == ONE_CLASS


def test_perfect_agreement_has_kappa_one_and_a_degenerate_interval():
    result = kappa_with_interval(HumanTable(15, 0, 0, 15))
    assert (result.value, result.low, result.high) == (1.0, 1.0, 1.0)


def test_the_interval_never_leaves_minus_one_to_one():
    for cells in itertools.product((0, 1, 5), repeat=4):
        result = kappa_with_interval(HumanTable(*(c * 3 for c in cells)))
        if result.value is not None:
            assert -1 <= result.low <= result.value <= result.high <= 1


def test_true_pass_and_true_fail_rates_are_shares_of_what_humans_decided():
    result = lens_agreement(
        HumanTable(pass_approved=6, pass_rejected=1, fail_approved=2, fail_rejected=3)
    )
    assert result.agreement == pytest.approx(9 / 12)
    assert result.true_pass_rate == pytest.approx(6 / 8)
    assert result.true_fail_rate == pytest.approx(3 / 4)


def test_rates_are_none_without_that_kind_of_human_decision():
    result = lens_agreement(HumanTable(pass_approved=3))
    assert (result.true_fail_rate, lens_agreement(HumanTable()).agreement) == (None, None)


def test_a_pair_erring_together_beyond_independence_is_flagged():
    # Each errs on 10 of 100; independence predicts 1 joint error, they share 8.
    pair = CoErrors(items=100, first_wrong=10, second_wrong=10, both_wrong=8)
    assert pair.expected_both == pytest.approx(1.0)
    assert pair.lift == pytest.approx(8.0) and pair.lift >= CO_ERROR_LIFT
    assert pair.fail_together


def test_a_pair_erring_as_independence_predicts_is_not_flagged():
    assert not CoErrors(items=400, first_wrong=100, second_wrong=100, both_wrong=25).fail_together


@pytest.mark.parametrize(
    ("items", "first", "second", "both", "flagged"),
    [
        (25, 10, 10, 8, True),  # lift exactly 2 (its float lift is 1.9999999999999996)
        (25, 10, 10, 7, False),  # lift 1.75
        (20, 10, 10, 5, False),  # lift 1.0: independence explains it
        (40, 10, 10, 5, True),  # lift exactly 2
        (100, 50, 20, 20, True),  # lift exactly 2
        (100, 50, 20, 19, False),  # lift 1.9
        (19, 5, 5, 5, False),  # too few items
        (20, 2, 2, 2, False),  # too few shared errors
    ],
)
def test_a_pair_is_flagged_at_exactly_twice_the_independent_rate_and_not_below(
    items, first, second, both, flagged
):
    assert CoErrors(items, first, second, both).fail_together is flagged


def _flagged_in_fractions(e: CoErrors) -> bool:
    """The README's rule with exact rationals: observed ≥ 2 × (first / n) × (second / n)."""
    if e.items < CO_ERROR_MIN_ITEMS or e.both_wrong < CO_ERROR_MIN_BOTH:
        return False
    n = Fraction(e.items)
    expected = (e.first_wrong / n) * (e.second_wrong / n)
    return expected > 0 and e.both_wrong / n >= CO_ERROR_LIFT * expected


@st.composite
def _co_errors(draw) -> CoErrors:
    items = draw(st.integers(0, 400))
    first = draw(st.integers(0, items))
    second = draw(st.integers(0, items))
    both = draw(st.integers(0, min(first, second)))
    return CoErrors(items, first, second, both)


@given(_co_errors())
def test_fail_together_is_the_exact_rule_on_any_counts(errors):
    assert errors.fail_together is _flagged_in_fractions(errors)


def test_every_pair_at_exactly_twice_the_independent_rate_is_flagged():
    at_two = [
        CoErrors(items, first, second, both)
        for items in range(CO_ERROR_MIN_ITEMS, 61)
        for first in range(1, items + 1)
        for second in range(first, items + 1)
        for both in range(CO_ERROR_MIN_BOTH, min(first, second) + 1)
        if both * items == 2 * first * second
    ]
    assert len(at_two) > 400
    assert [e for e in at_two if not e.fail_together] == []


def test_a_pair_with_too_few_joint_errors_is_not_flagged():
    assert not CoErrors(items=100, first_wrong=3, second_wrong=3, both_wrong=3).fail_together


def test_drift_fires_once_below_the_floor_and_recovers_at_it():
    assert drift_transition(drifting=False, kappa=0.3, floor=0.4) == DRIFTED
    assert drift_transition(drifting=True, kappa=0.2, floor=0.4) is None
    assert drift_transition(drifting=True, kappa=0.4, floor=0.4) == RECOVERED
    assert drift_transition(drifting=False, kappa=0.9, floor=0.4) is None


def test_an_undefined_kappa_changes_no_drift_state():
    assert drift_transition(drifting=False, kappa=None, floor=0.4) is None
    assert drift_transition(drifting=True, kappa=None, floor=0.4) is None


def test_a_shared_count_independence_explains_is_said_to_be_chance():
    reading = co_errors_reading(CoErrors(41, 30, 30, 22))  # lift 1.0
    assert "about what each lens's own error rate predicts (22.0)" in reading
    assert "not a shared blind spot" in reading


def test_a_pair_that_fails_together_is_told_so_with_the_expected_count():
    assert co_errors_reading(CoErrors(25, 10, 10, 8)).startswith(
        "They fail together: both wrong on 8, where independent errors would give 4.0."
    )


def test_too_few_items_and_too_few_shared_errors_are_told_apart():
    assert co_errors_reading(CoErrors(10, 5, 5, 5)).startswith("Too few decided proposals")
    assert co_errors_reading(CoErrors(40, 5, 5, 2)).startswith("Rarely wrong together")


@pytest.mark.parametrize(
    ("kappa", "drifting", "level", "why"),
    [
        (
            Kappa(0.9, 0.8, 1.0),
            False,
            TRUST,
            "(0.80 to 1.00) lies wholly at or above its floor 0.4",
        ),
        (Kappa(0.5, 0.2, 0.8), False, WATCH, "straddles its floor 0.4"),
        (Kappa(0.2, 0.05, 0.35), False, DO_NOT_TRUST, "lies wholly below its floor 0.4"),
        (Kappa(-0.3, -0.6, 0.5), False, DO_NOT_TRUST, "less often than chance would"),
        (Kappa(None, reason="too_few"), False, WATCH, "no kappa yet: fewer than 10"),
        (Kappa(0.9, 0.8, 1.0), True, DO_NOT_TRUST, "over its last 50 decisions is -0.20"),
    ],
)
def test_each_lens_gets_one_standing_with_its_reason(kappa, drifting, level, why):
    standing = lens_standing(kappa, floor=0.4, drifting=drifting, rolling=-0.2, window=50)
    assert standing.level == level and why in standing.why
