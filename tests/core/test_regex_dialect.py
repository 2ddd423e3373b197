"""Patterns in the reference's dialect (Rust's regex crate), compiled for RE2."""

import pytest

from reviewapp.core import regex_dialect


def matches(pattern: str, text: str) -> bool:
    return regex_dialect.search(regex_dialect.compile(pattern), text) is not None


@pytest.mark.parametrize("pattern", [r"\u{41}", r"\u0041", r"\U00000041", r"\x{41}", r"\x41"])
def test_every_rust_spelling_of_a_code_point_is_that_code_point(pattern):
    assert matches(f"^{pattern}$", "A")


@pytest.mark.parametrize(
    ("pattern", "engine_says"),
    [
        ("(?P<a>x)(?P<a>y)", "duplicate capture group name"),
        (r"\u004", r"invalid \u escape"),
        ("a{,3}", "invalid counted repetition"),
        (r"\Qa\E", "not part of the dialect"),
        ("[a-z&&[^aeiou]]", "class set operation"),
        ("a(?=b)", "invalid perl operator"),
    ],
)
def test_what_rust_refuses_is_refused_saying_why(pattern, engine_says):
    with pytest.raises(regex_dialect.PatternError, match=engine_says.replace("\\", "\\\\")):
        regex_dialect.compile(pattern)


@pytest.mark.parametrize(
    ("name", "text"),
    [("l", "é"), ("L", "é"), ("Letter", "é"), ("lu", "É"), ("greek", "λ"), ("old italic", "𐌀")],
)
def test_unicode_property_names_are_matched_loosely_as_in_rust(name, text):
    assert matches(rf"^\p{{{name}}}$", text)


def test_a_negated_property_still_negates():
    assert matches(r"^\PL$", "1") and not matches(r"^\PL$", "é")


def test_the_u_flag_turns_unicode_classes_off_only_where_it_applies():
    assert matches(r"(?-u:\w)é", "aé")
    assert not matches(r"(?-u:\w)", "é")
    assert matches(r"(?-u:a)\w", "aé")


def test_verbose_mode_ignores_whitespace_and_comments():
    assert matches("(?x) ^ a b  # the letters\n c $", "abc")


def test_text_over_the_size_limit_is_refused_not_searched(monkeypatch):
    monkeypatch.setattr(regex_dialect, "MAX_INPUT_CHARS", 10)
    with pytest.raises(regex_dialect.InputTooLarge):
        regex_dialect.search(regex_dialect.compile("a"), "a" * 11)
