import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviewapp.core.quorum import (
    JudgedTwice,
    NeedsNobody,
    NoQuorum,
    NotALens,
    NotAMajority,
    Quorum,
    QuorumError,
    Reached,
    RepeatedLens,
    Tally,
    UnnamedLens,
    Unreachable,
    Verdict,
    allowed_needs,
    allowed_needs_text,
)

PASS, FAIL = Verdict.PASS, Verdict.FAIL


# ---- counterparts of the reference tests ----


def test_a_declared_panel_reports_its_shape():
    quorum = Quorum(2, ["correctness", "policy", "arithmetic"])
    assert quorum.need == 2
    assert quorum.of == 3
    assert quorum.lenses == ("correctness", "policy", "arithmetic")


def test_repeating_a_lens_is_refused():
    # The rule the whole mechanism rests on: identical judges are not a panel.
    with pytest.raises(RepeatedLens):
        Quorum(2, ["correctness", "correctness", "policy"])


def test_a_quorum_larger_than_the_panel_is_refused():
    with pytest.raises(Unreachable) as caught:
        Quorum(4, ["a", "b", "c"])
    assert (caught.value.need, caught.value.of) == (4, 3)


def test_a_quorum_of_zero_is_refused():
    with pytest.raises(NeedsNobody):
        Quorum(0, ["a"])


def test_a_threshold_that_both_sides_could_meet_is_refused():
    with pytest.raises(NotAMajority) as caught:
        Quorum(2, ["a", "b", "c", "d"])
    assert (caught.value.need, caught.value.of) == (2, 4)

    # One of two is any single judge deciding alone.
    with pytest.raises(NotAMajority) as caught:
        Quorum(1, ["a", "b"])
    assert (caught.value.need, caught.value.of) == (1, 2)


def test_unanimity_is_allowed():
    Quorum(2, ["a", "b"])
    Quorum(3, ["a", "b", "c"])
    Quorum(1, ["a"])  # a panel of one is still a panel


def test_an_agreeing_panel_decides():
    out = Quorum(2, ["a", "b", "c"]).tally([("a", PASS), ("b", PASS), ("c", FAIL)])
    assert out.decided is PASS
    assert out.tally.passed == 2
    assert out.tally.failed == 1


def test_a_panel_agreeing_to_refuse_also_decides():
    out = Quorum(2, ["a", "b", "c"]).tally([("a", FAIL), ("b", FAIL), ("c", PASS)])
    assert out.decided is FAIL


def test_a_split_panel_decides_nothing():
    # The property the design turns on: 2 of 3 where 3 were required is a disagreement,
    # and reporting the majority would turn "we do not know" into "approved".
    out = Quorum(3, ["a", "b", "c"]).tally([("a", PASS), ("b", PASS), ("c", FAIL)])
    assert out.decided is None
    assert isinstance(out, NoQuorum)
    assert out.tally.passed == 2, "the tally is still reported"


def test_a_short_panel_does_not_reach_quorum():
    out = Quorum(2, ["a", "b", "c"]).tally([("a", PASS)])
    assert out.decided is None
    assert out.tally.asked == 3, "the shortfall is visible"


def test_an_empty_panel_decides_nothing():
    assert Quorum(2, ["a", "b", "c"]).tally([]).decided is None


def test_a_lens_judged_twice_is_refused():
    quorum = Quorum(2, ["a", "b", "c"])
    with pytest.raises(JudgedTwice) as caught:
        quorum.tally([("a", PASS), ("a", PASS)])
    assert caught.value.lens == "a"

    with pytest.raises(NotALens) as caught:
        quorum.tally([("a", PASS), ("z", PASS)])
    assert caught.value.lens == "z"


def test_an_unnamed_lens_is_refused():
    with pytest.raises(UnnamedLens):
        Quorum(1, ["  "])


@pytest.mark.parametrize("blank", ["\u3000", "\t\n", "\x85", "\u2028", "\u205f"])
def test_a_lens_named_only_with_unicode_white_space_is_refused(blank):
    with pytest.raises(UnnamedLens):
        Quorum(1, [blank])


@pytest.mark.parametrize("separator", ["\x1c", "\x1d", "\x1e", "\x1f", "\x1c\x1f"])
def test_a_lens_named_with_information_separators_is_named_as_in_the_reference(separator):
    # Rust's `trim` strips Unicode White_Space only; U+001C..U+001F are not in it.
    assert Quorum(1, [separator]).lenses == (separator,)


# ---- the Python surface ----


@pytest.mark.parametrize(
    ("need", "lenses", "error"),
    [
        (0, ["a"], NeedsNobody),
        (-1, ["a"], NeedsNobody),
        (4, ["a", "b", "c"], Unreachable),
        (1, [], Unreachable),
        (2, ["a", "b", "c", "d"], NotAMajority),
        (2, ["a", "a", "b"], RepeatedLens),
        (1, [""], UnnamedLens),
    ],
)
def test_every_refusal_is_its_own_quorum_error_with_an_explanation(need, lenses, error):
    with pytest.raises(error) as caught:
        Quorum(need, lenses)
    assert isinstance(caught.value, QuorumError)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value)


def test_refusals_are_checked_in_the_reference_order():
    # Repetition is reported before blankness, as in the reference.
    with pytest.raises(RepeatedLens):
        Quorum(2, [" ", " "])


@pytest.mark.parametrize(("need", "lenses"), [(True, ["a"]), (1.0, ["a"]), (1, "abc"), (1, [1])])
def test_malformed_configuration_is_a_type_error(need, lenses):
    with pytest.raises(TypeError):
        Quorum(need, lenses)


def test_lenses_may_be_any_iterable_and_keep_declared_order():
    assert Quorum(2, (lens for lens in ["z", "a", "m"])).lenses == ("z", "a", "m")


def test_verdicts_may_be_any_iterable_and_plain_strings_are_read_as_verdicts():
    out = Quorum(2, ["a", "b", "c"]).tally(iter([("a", "pass"), ("b", "pass")]))
    assert out == Reached(PASS, Tally(passed=2, failed=0, asked=3))


def test_a_judgement_that_is_neither_pass_nor_fail_is_refused():
    with pytest.raises(ValueError):
        Quorum(1, ["a"]).tally([("a", "maybe")])


def test_no_quorum_offers_no_way_to_read_a_winner():
    out = Quorum(3, ["a", "b", "c"]).tally([("a", PASS), ("b", PASS), ("c", FAIL)])
    public = {name for name in dir(out) if not name.startswith("_")}
    assert public == {"tally", "decided"}


def test_copies_and_pickles_go_back_through_construction():
    quorum = Quorum(2, ["a", "b", "c"])
    assert copy.deepcopy(quorum) == quorum
    assert pickle.loads(pickle.dumps(quorum)) == quorum
    assert hash(copy.copy(quorum)) == hash(quorum)

    forged = pickle.dumps(quorum, protocol=4).replace(b"\x8c\x01a", b"\x8c\x01b")  # lens "a" -> "b"
    with pytest.raises(RepeatedLens):
        pickle.loads(forged)


# ---- properties ----

lens_names = st.text(min_size=1, max_size=8).filter(lambda s: s.strip())


@st.composite
def panels(draw):
    of = draw(st.integers(min_value=1, max_value=9))
    need = draw(st.integers(min_value=of // 2 + 1, max_value=of))
    lenses = draw(st.lists(lens_names, min_size=of, max_size=of, unique=True))
    return Quorum(need, lenses)


@st.composite
def panels_with_judgements(draw):
    quorum = draw(panels())
    judged = draw(st.lists(st.sampled_from(quorum.lenses), unique=True))
    verdicts = [(lens, draw(st.sampled_from(Verdict))) for lens in judged]
    return quorum, verdicts


@given(
    need=st.integers(min_value=-2, max_value=12),
    of=st.integers(min_value=0, max_value=10),
)
def test_only_strict_majorities_are_accepted(need, of):
    lenses = [f"lens-{i}" for i in range(of)]
    valid = 1 <= need <= of and (of == 1 or 2 * need > of)
    try:
        quorum = Quorum(need, lenses)
    except QuorumError:
        assert not valid
    else:
        assert valid
        # Every accepted quorum is a strict majority, so both sides can never reach it.
        assert 2 * quorum.need > quorum.of


@given(panels_with_judgements())
def test_pass_and_fail_can_never_both_reach_quorum(case):
    quorum, verdicts = case
    out = quorum.tally(verdicts)
    t = out.tally
    assert not (t.passed >= quorum.need and t.failed >= quorum.need)
    if isinstance(out, Reached):
        side = t.passed if out.verdict is PASS else t.failed
        assert side >= quorum.need
    else:
        assert t.passed < quorum.need and t.failed < quorum.need
    # The outcome depends on the judgements, never on the order they are counted in.
    assert quorum.tally(list(reversed(verdicts))) == out


@given(panels_with_judgements())
def test_tally_counts_add_up(case):
    quorum, verdicts = case
    t = quorum.tally(verdicts).tally
    assert t.passed + t.failed == len(verdicts)
    assert t.passed == sum(1 for _, v in verdicts if v is PASS)
    assert t.asked == quorum.of
    assert t.passed + t.failed <= t.asked


@pytest.mark.parametrize(
    "of, allowed, text",
    [
        (0, [], "Add a lens first: with no lens, no need can be reached."),
        (1, [1], "With 1 lens the need must be 1."),
        (2, [2], "With 2 lenses the need must be 2."),
        (3, [2, 3], "With 3 lenses the need must be 2 or 3."),
        (4, [3, 4], "With 4 lenses the need must be 3 or 4."),
        (7, [4, 5, 6, 7], "With 7 lenses the need must be from 4 to 7."),
    ],
)
def test_allowed_needs_are_exactly_the_needs_a_quorum_accepts(of, allowed, text):
    names = [f"lens{i}" for i in range(of)]
    accepted = []
    for need in range(0, of + 2):
        try:
            Quorum(need, names)
        except QuorumError:
            continue
        accepted.append(need)
    assert list(allowed_needs(of)) == accepted == allowed
    assert allowed_needs_text(of) == text
