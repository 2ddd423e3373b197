"""Routing one proposal under a draft configuration, and counting two configurations apart."""

import pytest

from reviewapp.core.quorum import NotAMajority
from reviewapp.core.replay import compare, lens_changes, replay_outcome, share_text


def test_a_reached_pass_with_every_checker_passing_is_approved():
    outcome = replay_outcome(
        need=2,
        lenses=["a", "b", "c"],
        verdicts={"a": "pass", "b": "pass", "c": "fail"},
        checker_verdicts=["pass"],
    )
    assert outcome == "approved"


def test_a_split_panel_escalates():
    assert (
        replay_outcome(need=2, lenses=["a", "b"], verdicts={"a": "pass", "b": "fail"})
        == "escalated"
    )


def test_a_lens_that_never_answered_cannot_let_the_panel_approve():
    assert replay_outcome(need=1, lenses=["a"], verdicts={}) == "escalated"
    assert replay_outcome(need=2, lenses=["a", "b", "c"], verdicts={"a": "pass", "b": "pass"}) == (
        "escalated"
    )


def test_a_failing_checker_rejects_whatever_the_panel_says():
    outcome = replay_outcome(
        need=1, lenses=["a"], verdicts={"a": "pass"}, checker_verdicts=["fail"]
    )
    assert outcome == "rejected"


def test_sign_off_escalates_a_reached_pass():
    assert (
        replay_outcome(need=1, lenses=["a"], verdicts={"a": "pass"}, requires_sign_off=True)
        == "escalated"
    )


def test_a_draft_the_quorum_refuses_is_refused():
    with pytest.raises(NotAMajority):
        replay_outcome(need=1, lenses=["a", "b"], verdicts={})


def test_compare_counts_each_side_and_lists_the_contradictions():
    result = compare(
        [
            (1, "approved", "escalated", "approved"),
            (2, "rejected", "escalated", "approved"),
            (3, "rejected", "rejected", "escalated"),
            (4, "approved", "rejected", "rejected"),
        ]
    )
    assert result["current"] == {
        "approved": 0,
        "rejected": 2,
        "automatic": 2,
        "escalated": 2,
        "contradictions": [4],
    }
    assert result["draft"] == {
        "approved": 2,
        "rejected": 1,
        "automatic": 3,
        "escalated": 1,
        "contradictions": [2, 4],
    }


def test_a_share_reads_as_a_count_out_of_its_total_with_a_whole_percentage():
    assert share_text(16, 41) == "16 of 41 (39 %)"
    assert share_text(0, 0) == "0 of 0"


def test_each_lens_counts_its_verdicts_right_on_either_side_and_the_ones_the_draft_changed():
    rows = [
        ("approved", {"a": "pass", "b": "fail"}, {"a": "fail", "b": "pass", "c": "pass"}),
        ("rejected", {"a": "pass", "b": "fail"}, {"a": "pass", "b": "failed: timeout"}),
    ]
    a, b, c = lens_changes(rows)
    assert (a.lens, a.current_right, a.current_judged, a.draft_right, a.draft_judged) == (
        "a",
        1,
        2,
        0,
        2,
    )
    assert (a.pass_to_fail, a.fail_to_pass) == (1, 0)
    assert (b.fail_to_pass, b.no_answer, b.draft_judged, b.draft_right) == (1, 1, 1, 1)
    assert (c.current_judged, c.draft_judged, c.draft_right) == (0, 1, 1)
