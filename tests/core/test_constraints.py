import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviewapp.core import regex_dialect
from reviewapp.core.constraints import (
    Absent,
    Constraint,
    ConstraintError,
    ConstraintSet,
    Contains,
    InvalidPattern,
    Matches,
    NoCheckableConstraints,
    ParsesAsJson,
    RequiredWith,
    Unenforced,
    WordCount,
    lower,
)


def checkable(id, predicate):
    return Constraint(id, predicate.describe(), predicate)


def make_set(*predicates):
    return ConstraintSet(checkable(f"c{i}", p) for i, p in enumerate(predicates, start=1))


# ---- e = 1 - CSR ----


def test_csr_is_the_fraction_satisfied_and_error_is_its_complement():
    c = make_set(Contains("alpha"), Contains("beta"), Contains("gamma"), Contains("delta"))
    v = c.evaluate("alpha and beta only")
    assert v.csr == 0.5, "2 of 4 constraints hold"
    assert v.error == 0.5, "e = 1 - CSR"
    assert len(v.violated) == 2
    assert not v.is_satisfied


def test_full_satisfaction_is_exactly_zero_error():
    v = make_set(Contains("alpha"), Absent("forbidden")).evaluate("alpha, and nothing else")
    assert v.error == 0.0
    assert v.is_satisfied
    assert v.within(1e-9), "zero error is inside every positive band"


def test_total_violation_is_error_one():
    assert make_set(Contains("alpha")).evaluate("nothing relevant").error == 1.0


def test_error_is_always_in_the_unit_interval():
    # Jointly unsatisfiable, yet e must stay a number in [0, 1].
    c = make_set(Contains("a"), Absent("a"))
    for response in ["a", "b", "", "aaaa"]:
        assert 0.0 <= c.evaluate(response).error <= 1.0, response


# ---- the refusal that keeps the guarantee non-vacuous ----


def test_an_empty_constraint_set_is_refused_not_scored_as_perfect():
    with pytest.raises(NoCheckableConstraints) as caught:
        ConstraintSet([])
    assert caught.value.clauses == ()
    assert "no response could ever violate" in str(caught.value), "the refusal must say why"


def test_a_set_of_only_unlowerable_clauses_is_refused():
    with pytest.raises(NoCheckableConstraints) as caught:
        ConstraintSet(
            [Unenforced("output must feel authoritative"), Unenforced("output must be insightful")]
        )
    assert len(caught.value.clauses) == 2, "the refusal names the clauses it could not lower"
    assert "output must be insightful" in str(caught.value)


def test_one_checkable_clause_among_unlowerable_ones_is_accepted_but_reports_the_gap():
    c = ConstraintSet(
        [Unenforced("output must feel authoritative"), checkable("c2", Absent("guarantee"))]
    )
    assert len(c) == 1, "|C| counts only checkable constraints"
    assert c.unenforced == ("output must feel authoritative",)
    # With a satisfied constraint, e is 0 only if the unenforced clause stays out of the
    # denominator (a violated one gives e = 1 either way and proves nothing).
    assert c.evaluate("no forbidden word here").error == 0.0
    assert c.evaluate("we guarantee results").error == 1.0


def test_an_invalid_regex_is_refused_at_construction():
    with pytest.raises(InvalidPattern) as caught:
        ConstraintSet([checkable("c1", Matches("([unclosed"))])
    assert caught.value.id == "c1"
    assert caught.value.pattern == "([unclosed"


def test_an_invalid_regex_reached_at_runtime_counts_as_violated_never_as_satisfied():
    # Used outside a ConstraintSet, so nothing checked the pattern first.
    detail = Matches("([unclosed").failure("anything at all", "anything at all")
    assert detail is not None
    assert "not a valid regular expression" in detail


# ---- the predicates ----


def test_text_predicates_ignore_case_but_regex_does_not():
    assert make_set(Contains("Safe Harbor")).evaluate("...SAFE HARBOR...").is_satisfied

    re_set = make_set(Matches("Safe Harbor"))
    assert not re_set.evaluate("...SAFE HARBOR...").is_satisfied
    assert re_set.evaluate("...Safe Harbor...").is_satisfied


def test_word_count_bounds_are_inclusive():
    c = make_set(WordCount(min=2, max=4))
    assert not c.evaluate("one").is_satisfied
    assert c.evaluate("one two").is_satisfied
    assert c.evaluate("one two three four").is_satisfied
    assert not c.evaluate("one two three four five").is_satisfied


def test_parses_as_json_tolerates_surrounding_whitespace_only():
    c = make_set(ParsesAsJson())
    assert c.evaluate('  {"a": 1}\n').is_satisfied
    assert not c.evaluate('Here is your JSON: {"a": 1}').is_satisfied


def test_required_with_is_an_implication_not_a_conjunction():
    c = make_set(RequiredWith(trigger="we expect", required="safe harbor"))
    # No trigger, no obligation: the case neither Absent nor Contains can express.
    assert c.evaluate("purely historical results").is_satisfied
    assert not c.evaluate("we expect growth").is_satisfied
    assert c.evaluate("we expect growth; see safe harbor statement").is_satisfied


# ---- lowering: matches or admits it did not ----


def test_the_readme_sec_constraint_lowers_partly_and_says_which_part():
    clauses = lower(
        "Output must be a valid SEC 10-K section with GAAP-compliant financial tables, "
        "footnote references, and no forward-looking statements without safe harbor language"
    )
    assert sum(isinstance(c, Constraint) for c in clauses) == 1, (
        "only the 'no X without Y' clause is decidable; the rest must not be pretended into C"
    )
    c = ConstraintSet(clauses)
    assert isinstance(c.constraints[0].predicate, RequiredWith)
    assert len(c.unenforced) == 1, "the prose half stays visible"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('output must contain "safe harbor"', Contains("safe harbor")),
        ("must not contain 'guarantee'", Absent("guarantee")),
        ("the response must include a citation", Contains("a citation")),
        ("output must be valid JSON", ParsesAsJson()),
        ("must be at most 200 words", WordCount(max=200)),
        ("must be at least 50 words", WordCount(min=50)),
        # Lowering lower-cases the whole clause, the pattern included, as the reference does.
        ("must match /^SECTION [0-9]+/", Matches("^section [0-9]+")),
        (
            "no projections unless a disclaimer is present",
            RequiredWith(trigger="projections", required="a disclaimer is present"),
        ),
    ],
)
def test_lowering_recognises_each_form_in_the_closed_subset(text, expected):
    lowered = lower(text)
    assert len(lowered) == 1
    assert isinstance(lowered[0], Constraint), f"{text!r} should lower, got {lowered[0]!r}"
    assert lowered[0].predicate == expected


def test_negation_is_never_eaten_by_the_positive_prefix():
    (clause,) = lower('must not contain "guarantee"')
    assert isinstance(clause, Constraint)
    assert clause.predicate == Absent("guarantee"), "a negated clause lowered to its opposite"


@pytest.mark.parametrize(
    "text",
    [
        "output must be insightful",
        "the response should feel professional",
        "must be accurate and well-reasoned",
        "",
    ],
)
def test_prose_that_cannot_be_decided_is_reported_not_guessed(text):
    for clause in lower(text):
        assert isinstance(clause, Unenforced), f"{text!r} was guessed into {clause!r}"


def test_a_bare_comma_does_not_split_a_single_obligation():
    assert len(lower('output must contain "GAAP tables, footnote references"')) == 1


def test_semicolons_and_and_separate_clauses():
    clauses = lower('must contain "alpha"; must not contain "beta", and must be valid JSON')
    assert len(clauses) == 3
    assert len(ConstraintSet(clauses)) == 3


# ---- feedback ----


def test_feedback_names_the_obligation_and_the_reason_for_every_violation():
    v = make_set(Contains("safe harbor"), Absent("guaranteed")).evaluate("returns are guaranteed")
    fb = v.feedback()
    assert len(fb) == 2
    assert fb[0].startswith("must contain 'safe harbor' (")
    assert fb[1].startswith("must not contain 'guaranteed' (")
    assert all(v.detail in line for v, line in zip(v.violated, fb, strict=True))


def test_a_satisfied_verdict_has_nothing_to_feed_back():
    assert make_set(Contains("alpha")).evaluate("alpha").feedback() == []


def test_within_is_a_strict_band_matching_the_published_convergence_test():
    v = make_set(Contains("a"), Contains("b")).evaluate("a only")
    assert v.error == 0.5
    assert not v.within(0.5), "|e| < epsilon is strict"
    assert v.within(0.51)


# ---- the Python surface ----


def test_from_text_builds_a_set_with_its_gaps_visible():
    c = ConstraintSet.from_text('must contain "alpha"; must sound confident')
    assert [x.clause for x in c.constraints] == ['must contain "alpha"']
    assert c.unenforced == ("must sound confident",)
    v = c.evaluate("ALPHA")
    assert v.satisfied == c.constraints
    assert v.unenforced == ("must sound confident",)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", NoCheckableConstraints),
        ("must be insightful; must be kind", NoCheckableConstraints),
        ("must match /([unclosed/", InvalidPattern),
    ],
)
def test_from_text_refusals_are_constraint_errors(text, error):
    with pytest.raises(error) as caught:
        ConstraintSet.from_text(text)
    assert isinstance(caught.value, ConstraintError)
    assert isinstance(caught.value, ValueError)


def test_ids_follow_clause_positions():
    clauses = lower('must contain "a";; must contain "b"')
    assert [c.id for c in clauses] == ["c1", "c3"]


@pytest.mark.parametrize(
    ("predicate", "description"),
    [
        (Contains("foo"), "must contain 'foo'"),
        (Absent("foo"), "must not contain 'foo'"),
        (Matches("^a+$"), "must match /^a+$/"),
        (WordCount(min=2, max=4), "must be between 2 and 4 words"),
        (WordCount(min=2), "must be at least 2 words"),
        (WordCount(max=4), "must be at most 4 words"),
        (WordCount(), "has no word-count bound"),
        (ParsesAsJson(), "must be valid JSON"),
        (RequiredWith("x", "y"), "must not contain 'x' without also containing 'y'"),
    ],
)
def test_describe_states_the_predicate_in_plain_words(predicate, description):
    assert checkable("c1", predicate).describe() == description


def test_the_predicate_catalogue_is_closed():
    with pytest.raises(TypeError):
        Constraint("c1", "must be nice", "nice")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("must be no more than 10 words", WordCount(max=10)),
        ("must be at most +10 words", WordCount(max=10)),
        ('must contain "quoted"...', Contains("quoted")),
        ("must contain \u201ccurly\u201d", Contains("curly")),
        ("output output must include x", Contains("x")),
        ("no x without y unless z", RequiredWith("x", "y unless z")),
        ("must be valid json object", ParsesAsJson()),
    ],
)
def test_lowering_edge_forms(text, expected):
    (clause,) = lower(text)
    assert clause.predicate == expected


@pytest.mark.parametrize(
    "text",
    [
        "must be at most ten words",
        "must be at most 99999999999999999999999 words",  # beyond a 64-bit count
        "must match //",
        'must contain ""',
        "no without y",
    ],
)
def test_near_misses_stay_unenforced(text):
    assert all(isinstance(c, Unenforced) for c in lower(text))


def test_json_means_json():
    c = make_set(ParsesAsJson())
    assert not c.evaluate("NaN").is_satisfied
    assert not c.evaluate('{"a": Infinity}').is_satisfied
    deep = c.evaluate("[" * 100_000)  # must fail, not crash the worker
    assert not deep.is_satisfied


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ("1e400", "number out of range"),
        ("[-1e309]", "number out of range"),
        ("1" + "0" * 400, "number out of range"),
        ("[" * 128 + "]" * 128, "recursion limit"),
        ('{"a": ' * 128 + "1" + "}" * 128, "recursion limit"),
        ('"\\ud800"', "lone surrogate"),
        ('{"\\udc00": 1}', "lone surrogate"),
        # serde_json parses the value a repeated key replaces, and so refuses it too
        ('{"a": "\\ud800", "a": 1}', "lone surrogate"),
        ('[{"a": {"b": "\\udc00", "b": 0}, "a": 3}]', "lone surrogate"),
        ('{"a": ' + "[" * 127 + "]" * 127 + ', "a": 1}', "recursion limit"),
    ],
)
def test_json_the_reference_parser_refuses_is_not_valid_json(document, why):
    (violation,) = make_set(ParsesAsJson()).evaluate(document).violated
    assert why in violation.detail


@pytest.mark.parametrize(
    "document",
    [
        "[" * 127 + "]" * 127,
        "1.7976931348623157e308",
        "1e-400",  # underflows to zero, as in serde_json
        "18446744073709551615",
        "-9223372036854775808",
        '"\\ud83d\\ude00"',  # an escaped pair is one character
        '{"a": 1, "a": 2}',  # a repeated key keeps its last value
        '{"a": ' + "[" * 126 + "]" * 126 + ', "a": 1}',
    ],
)
def test_json_the_reference_parser_accepts_is_valid_json(document):
    assert make_set(ParsesAsJson()).evaluate(document).is_satisfied


def test_words_are_split_on_unicode_whitespace_only():
    c = make_set(WordCount(max=1))
    assert not c.evaluate("one\u3000two").is_satisfied
    assert c.evaluate("one\x1ftwo").is_satisfied  # a separator control, not whitespace


# ---- regexes never hang the process ----

CATASTROPHIC = "a" * 100_000 + "!"


def test_a_catastrophic_pattern_is_decided_in_linear_time_not_cut_off():
    c = ConstraintSet.from_text("must match /(a+)+$/")
    started = time.monotonic()
    v = c.evaluate(CATASTROPHIC)
    assert time.monotonic() - started < 5
    (violation,) = v.violated
    assert v.undecided == ()
    assert violation.detail == "no part of the response matches /(a+)+$/"
    assert c.evaluate("aaaa").is_satisfied


def test_a_response_over_the_size_limit_is_undecided_not_matched(monkeypatch):
    monkeypatch.setattr(regex_dialect, "MAX_INPUT_CHARS", 1_000)
    v = make_set(Matches("a"), Contains("zebra")).evaluate("a" * 1_001)
    assert len(v.violated) == 2
    assert [u.constraint.predicate for u in v.undecided] == [Matches("a")]
    assert "over the 1000" in v.undecided[0].detail


# ---- the reference's regex dialect: Rust's regex crate itself ----


@pytest.mark.parametrize(
    "pattern",
    ["a(?=b)", r"(a)\1", r"a\Z", "a{,3}", "(?#c)", "a{", r"\Qa\E", r"\p{^Greek}", "a(?i)*"],
)
def test_a_pattern_outside_the_reference_dialect_is_refused_with_the_engines_message(pattern):
    with pytest.raises(InvalidPattern) as refused:
        make_set(Matches(pattern))
    assert refused.value.detail
    assert refused.value.detail in str(refused.value)


def test_a_look_ahead_is_refused_in_the_engines_own_words():
    with pytest.raises(InvalidPattern, match="look-around, including look-ahead"):
        make_set(Matches("a(?=b)"))


@pytest.mark.parametrize(
    ("pattern", "text"), [(r"\x{41}", "A"), ("^a{2}*$", "aaaa"), ("^a{2}*$", "")]
)
def test_a_pattern_the_reference_accepts_is_accepted(pattern, text):
    assert make_set(Matches(pattern)).evaluate(text).is_satisfied


def test_a_repeated_repetition_repeats_the_whole_repetition():
    assert not make_set(Matches("^a{2}*$")).evaluate("aaa").is_satisfied


def test_a_unicode_class_survives_the_lowering_and_matches_letters():
    c = ConstraintSet.from_text(r"must match /^\pL+$/")
    assert c.evaluate("éclair").is_satisfied
    assert not c.evaluate("42").is_satisfied


def test_the_lowering_still_lowercases_the_pattern_like_the_reference():
    (clause,) = lower(r"must match /^SECTION \pL/")
    assert clause.predicate == Matches(r"^section \pl")
    assert not ConstraintSet([clause]).evaluate("SECTION A").is_satisfied
    assert ConstraintSet([clause]).evaluate("section A").is_satisfied


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("(?i)ß", "SS"),  # simple case folding only, as in Rust
        ("[[:alpha:]]", "é"),  # POSIX classes are ASCII
        (r"(?-u)\w", "é"),  # with Unicode off, \w is ASCII
        ("a$", "a\n"),  # $ is the end of the text, not before a final newline
    ],
)
def test_a_pattern_does_not_match_what_the_reference_does_not(pattern, text):
    assert not make_set(Matches(pattern)).evaluate(text).is_satisfied


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"\w", "é"), (r"^\d$", "٣"), (r"a\sb", "a\u3000b"), (r"\p{greek}", "λ"), ("(?x) a b", "ab")],
)
def test_perl_classes_are_unicode_as_in_the_reference(pattern, text):
    assert make_set(Matches(pattern)).evaluate(text).is_satisfied


# ---- properties ----

MIXED = ConstraintSet.from_text(
    'must contain "alpha"; must not contain "beta", and must be at most 20 words; '
    "must match /^[a-z]+/; no forecast without disclaimer; must be valid JSON; "
    "must read well"
)


@given(st.text())
def test_error_always_lies_in_the_unit_interval(response):
    v = MIXED.evaluate(response)
    assert 0.0 <= v.error <= 1.0
    assert v.error == 1.0 - v.csr
    assert len(v.satisfied) + len(v.violated) == len(MIXED) == 6
    assert v.is_satisfied == (v.error == 0.0)
    assert v.unenforced == ("must read well",)
