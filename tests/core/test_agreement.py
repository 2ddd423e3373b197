import pytest

from reviewapp.core.agreement import PairTable, cohen_kappa, fleiss_kappa, fleiss_sums


def test_cohen_kappa_matches_a_hand_computed_value():
    # 50 items: po = (20 + 15) / 50 = 0.70; pe = 0.5*0.6 + 0.5*0.4 = 0.50; κ = 0.40
    table = PairTable(pass_pass=20, pass_fail=5, fail_pass=10, fail_fail=15)
    assert cohen_kappa(table) == pytest.approx(0.4)


def test_cohen_kappa_is_one_for_perfect_agreement_across_both_verdicts():
    assert cohen_kappa(PairTable(pass_pass=7, fail_fail=3)) == pytest.approx(1.0)


def test_cohen_kappa_is_negative_when_lenses_systematically_disagree():
    assert cohen_kappa(PairTable(pass_fail=5, fail_pass=5)) == pytest.approx(-1.0)


def test_cohen_kappa_is_undefined_when_every_rating_is_the_same():
    assert cohen_kappa(PairTable(pass_pass=9)) is None


def test_cohen_kappa_is_undefined_without_items():
    assert cohen_kappa(PairTable()) is None


def test_fleiss_kappa_matches_the_wikipedia_worked_example():
    # The 10-item, 14-rater, 5-category example: κ ≈ 0.210.
    items = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(fleiss_sums(items)) == pytest.approx(0.2099, abs=1e-4)


def test_fleiss_kappa_matches_a_hand_computed_binary_panel():
    # 4 items, 3 lenses, (pass, fail): P_i = 1, 1/3, 1/3, 1 → P̄ = 2/3;
    # p = (7/12, 5/12) → Pe = 74/144; κ = (2/3 − 74/144) / (1 − 74/144) = 22/70.
    items = [[3, 0], [2, 1], [2, 1], [0, 3]]
    assert fleiss_kappa(fleiss_sums(items)) == pytest.approx(22 / 70)


def test_fleiss_kappa_refuses_items_with_different_rater_counts():
    with pytest.raises(ValueError):
        fleiss_sums([[2, 1], [1, 0]])


def test_fleiss_kappa_is_undefined_when_everyone_always_agrees_on_one_verdict():
    assert fleiss_kappa(fleiss_sums([[3, 0], [3, 0]])) is None
