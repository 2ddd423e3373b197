import numpy as np
import pytest

from reviewapp.core.guarantee.bound import lower_bound
from reviewapp.core.guarantee.patterns import VotePattern, possible_patterns
from reviewapp.core.guarantee.sequence import Labels, chain_alpha, overall, standings

from .test_bound import monte_carlo_margin, trust_thresholds

TARGET, CONFIDENCE = 0.95, 0.95
UNANIMOUS = VotePattern("approved", 3, 0, 0, False)
MAJORITY = VotePattern("approved", 2, 1, 0, False)
REJECT_ALL = VotePattern("rejected", 0, 3, 0, False)
REJECT_MAJORITY = VotePattern("rejected", 1, 2, 0, False)
REJECT_MISSING = VotePattern("rejected", 0, 2, 1, False)
PATTERNS = possible_patterns(lenses=3, need=2, checked=False)
GOOD, BAD = Labels(500, 500), Labels(500, 440)


def by_pattern(counts):
    return {
        s.pattern: s
        for s in standings(counts, patterns=PATTERNS, target=TARGET, confidence=CONFIDENCE)
    }


def test_a_pattern_is_trusted_only_when_every_stronger_one_of_its_outcome_is():
    found = by_pattern({UNANIMOUS: BAD, MAJORITY: GOOD, REJECT_ALL: GOOD})
    assert found[MAJORITY].clears and not found[MAJORITY].trusted
    assert found[MAJORITY].waits_on == UNANIMOUS
    assert not found[UNANIMOUS].trusted and found[UNANIMOUS].waits_on is None


def test_the_two_outcomes_are_separate_chains():
    found = by_pattern({UNANIMOUS: BAD, REJECT_ALL: GOOD, REJECT_MAJORITY: GOOD})
    assert found[REJECT_ALL].trusted and found[REJECT_MAJORITY].trusted
    assert not found[REJECT_MISSING].trusted and found[REJECT_MISSING].waits_on is None


def test_a_pattern_without_labels_holds_back_the_weaker_ones_and_says_how_many_it_needs():
    found = by_pattern({MAJORITY: GOOD})
    assert found[UNANIMOUS].labels == 0 and found[UNANIMOUS].labels_to_trust == 105
    assert found[MAJORITY].waits_on == UNANIMOUS
    assert found[MAJORITY].labels_to_trust == 0


def test_each_pattern_is_bounded_at_its_chain_level():
    found = by_pattern({UNANIMOUS: Labels(300, 297)})
    expected = lower_bound(agreed=297, labels=300, alpha=chain_alpha(CONFIDENCE))
    assert found[UNANIMOUS].lower_bound == expected
    assert chain_alpha(CONFIDENCE) == pytest.approx(0.025)


def test_with_the_guarantee_off_nothing_is_trusted_but_the_bounds_are_shown():
    found = {
        s.pattern: s
        for s in standings({UNANIMOUS: GOOD}, patterns=PATTERNS, target=None, confidence=0.95)
    }
    assert not any(s.trusted for s in found.values())
    assert found[UNANIMOUS].clears is None and found[UNANIMOUS].labels_to_trust is None
    assert found[UNANIMOUS].lower_bound > 0.98


def test_a_counted_pattern_outside_the_possible_ones_is_still_shown():
    odd = VotePattern("approved", 4, 0, 0, False)
    found = by_pattern({odd: GOOD})
    assert found[odd].labels == 500


def test_the_overall_agreement_weighs_each_pattern_by_the_decisions_it_made():
    result = overall([(Labels(100, 100), 900), (Labels(100, 80), 100)], confidence=CONFIDENCE)
    assert result.decisions == 1000
    assert result.estimate == pytest.approx(0.9 * 1.0 + 0.1 * 0.8)
    assert result.low < result.estimate < result.high
    # Bonferroni: each pattern's two sides at (1 − confidence) / 4.
    alpha = (1 - CONFIDENCE) / 4
    assert result.low == pytest.approx(
        0.9 * lower_bound(agreed=100, labels=100, alpha=alpha)
        + 0.1 * lower_bound(agreed=80, labels=100, alpha=alpha)
    )


def test_the_overall_agreement_has_no_estimate_while_a_deciding_pattern_has_no_label():
    result = overall([(Labels(100, 100), 900), (Labels(), 100)], confidence=CONFIDENCE)
    assert result.estimate is None
    assert result.low < 0.9 and result.high == pytest.approx(1.0)


def test_without_automatic_decisions_there_is_no_overall_figure():
    assert overall([(GOOD, 0)], confidence=CONFIDENCE).estimate is None


def test_with_bad_patterns_anywhere_in_both_chains_any_false_trust_stays_under_alpha():
    """Family-wise: five patterns, three truly below the target (two of them in the
    approval chain behind a good one), labels arriving for a random pattern each time,
    every chain re-walked after every label as `walk_chains` does. The share of runs in
    which any bad pattern is ever trusted stays under 1 − confidence."""
    agreement = np.array([0.995, 0.949, 0.949, 0.949, 0.995])  # approvals: 0-2, rejections: 3-4
    chain_of = [[0, 1, 2], [3, 4]]
    bad = agreement < TARGET
    runs, steps = 2000, 4000
    least = trust_thresholds(steps, target=TARGET, alpha=chain_alpha(CONFIDENCE))
    rng = np.random.default_rng(45)
    ever = 0
    for start in range(0, runs, 500):
        size = min(500, runs - start)
        which = rng.integers(0, len(agreement), (size, steps))
        agrees = rng.random((size, steps)) < agreement[which]
        false_trust = np.zeros(size, dtype=bool)
        for chain in chain_of:
            prefix = np.ones((size, steps), dtype=bool)
            for k in chain:
                mine = which == k
                labels = np.cumsum(mine, axis=1)
                agreed = np.cumsum(mine & agrees, axis=1)
                prefix &= agreed >= least[labels]
                if bad[k]:
                    false_trust |= prefix.any(axis=1)
        ever += int(false_trust.sum())
    share = ever / runs
    assert share <= (1 - CONFIDENCE) + monte_carlo_margin(1 - CONFIDENCE, runs)
