import pytest

from reviewapp.core.checkers import CheckVerdict
from reviewapp.core.guarantee.patterns import VotePattern, chains, possible_patterns, vote_pattern
from reviewapp.core.quorum import Quorum, Verdict
from reviewapp.core.routing import route

P, F = Verdict.PASS, Verdict.FAIL
LENSES = ("a", "b", "c")


def pattern_of(verdicts, *, checkers=(), failed_lenses=(), need=2, sign_off=False):
    panel = Quorum(need, LENSES).tally(zip(LENSES, verdicts, strict=False))
    routed = route(
        checker_verdicts=checkers,
        panel=panel,
        failed_lenses=failed_lenses,
        requires_sign_off=sign_off,
    )
    return vote_pattern(
        routed=routed, panel=panel, failed_lenses=failed_lenses, checker_verdicts=checkers
    )


def test_a_unanimous_pass_with_passing_checkers_is_its_own_pattern():
    pattern = pattern_of([P, P, P], checkers=[CheckVerdict.PASS])
    assert pattern == VotePattern("approved", 3, 0, 0, True)
    assert pattern.votes == "3 of 3 pass, checkers passed"


def test_a_majority_rejection_with_a_failed_lens_keeps_the_missing_count():
    pattern = pattern_of([F, F], failed_lenses=["c"])
    assert pattern == VotePattern("rejected", 0, 2, 1, False)
    assert pattern.votes == "2 of 3 fail, 1 gave no judgement, no checkers"


def test_a_split_vote_names_the_side_against():
    assert pattern_of([P, F, P]).votes == "2 of 3 pass, 1 fail, no checkers"
    assert pattern_of([F, P, F]).votes == "2 of 3 fail, 1 pass, no checkers"


@pytest.mark.parametrize(
    "case",
    [
        {"verdicts": [P, P, P], "checkers": [CheckVerdict.FAIL]},  # the checker rejects
        {"verdicts": [P, P, P], "checkers": [CheckVerdict.INCONCLUSIVE]},
        {"verdicts": [P, F], "failed_lenses": ["c"]},  # no quorum
        {"verdicts": [P, P], "failed_lenses": ["c"]},  # a pass with a lens missing
        {"verdicts": [P, P, P], "sign_off": True},
    ],
)
def test_only_an_outcome_the_panel_vote_decided_alone_has_a_pattern(case):
    assert pattern_of(**case) is None


def test_keys_round_trip_and_refuse_anything_else():
    for pattern in possible_patterns(lenses=5, need=3, checked=True):
        assert VotePattern.from_key(pattern.key) == pattern
    for bad in ["", "approved:3p0f0m", "maybe:3p0f0m:checked", "approved:3p0f0m:checked\n"]:
        with pytest.raises(ValueError):
            VotePattern.from_key(bad)


def test_a_pattern_refuses_an_outcome_no_panel_gives():
    with pytest.raises(ValueError):
        VotePattern("escalated", 1, 1, 1, False)


def test_three_lenses_needing_two_can_decide_five_patterns():
    patterns = possible_patterns(lenses=3, need=2, checked=False)
    assert sorted(p.key for p in patterns) == sorted(
        [
            "approved:3p0f0m:unchecked",
            "approved:2p1f0m:unchecked",
            "rejected:0p3f0m:unchecked",
            "rejected:1p2f0m:unchecked",
            "rejected:0p2f1m:unchecked",
        ]
    )


def test_every_pattern_the_router_gives_is_among_the_possible_ones():
    possible = set(possible_patterns(lenses=3, need=2, checked=False))
    seen = set()
    for a in (P, F, None):
        for b in (P, F, None):
            for c in (P, F, None):
                answered = [(n, v) for n, v in zip(LENSES, (a, b, c), strict=True) if v]
                panel = Quorum(2, LENSES).tally(answered)
                failed = [n for n, v in zip(LENSES, (a, b, c), strict=True) if v is None]
                routed = route(checker_verdicts=[], panel=panel, failed_lenses=failed)
                found = vote_pattern(
                    routed=routed, panel=panel, failed_lenses=failed, checker_verdicts=[]
                )
                if found:
                    seen.add(found)
    assert seen == possible


def test_a_need_the_quorum_refuses_has_no_patterns():
    with pytest.raises(ValueError):
        possible_patterns(lenses=4, need=2, checked=False)


def test_each_chain_runs_from_unanimous_to_bare_majority_with_missing_lenses_last():
    ordered = chains(possible_patterns(lenses=5, need=3, checked=True))
    assert [p.key for p in ordered["approved"]] == [
        "approved:5p0f0m:checked",
        "approved:4p1f0m:checked",
        "approved:3p2f0m:checked",
    ]
    assert [p.key for p in ordered["rejected"]] == [
        "rejected:0p5f0m:checked",
        "rejected:1p4f0m:checked",
        "rejected:2p3f0m:checked",
        "rejected:0p4f1m:checked",
        "rejected:1p3f1m:checked",
        "rejected:0p3f2m:checked",
    ]
