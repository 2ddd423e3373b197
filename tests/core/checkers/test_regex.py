"""The regex checker kind."""

import time

import pytest

from reviewapp.core import regex_dialect
from reviewapp.core.checkers import (
    CheckerConfigError,
    CheckInput,
    CheckVerdict,
    RegexChecker,
)

# ── regex ────────────────────────────────────────────────────────────────────


def test_regex_must_match(key):
    checker = RegexChecker("ticket-ref", 1, r"\bJIRA-\d+\b")
    assert checker.check(CheckInput("fixes JIRA-12"), key).permits_commit
    evidence = checker.check(CheckInput("fixes nothing"), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert "does not match" in evidence.reason


def test_regex_must_not_match(key):
    checker = RegexChecker("no-secrets", 1, r"sk-[A-Za-z0-9]{8,}", must_match=False)
    assert checker.check(CheckInput("no key here"), key).permits_commit
    evidence = checker.check(CheckInput("token sk-abcdefgh123"), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert "at character 6" in evidence.reason and "sk-abcdefgh123" in evidence.reason


def test_a_catastrophic_pattern_is_decided_in_linear_time(key):
    checker = RegexChecker("catastrophic", 1, r"(\w+\s?)*$")
    started = time.monotonic()
    evidence = checker.check(CheckInput("x " * 30_000 + "!"), key)
    assert evidence.verdict is CheckVerdict.PASS  # "" at the end matches, as in Rust
    assert time.monotonic() - started < 5
    catastrophic = RegexChecker("catastrophic", 1, r"^(a+)+$")
    assert catastrophic.check(CheckInput("a" * 100_000 + "!"), key).verdict is CheckVerdict.FAIL


def test_content_over_the_size_limit_is_inconclusive(key, monkeypatch):
    monkeypatch.setattr(regex_dialect, "MAX_INPUT_CHARS", 100)
    evidence = RegexChecker("r", 1, "a").check(CheckInput("a" * 101), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "over the 100" in evidence.reason


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pattern": "([unclosed"},
        {"pattern": "ok", "must_match": "no"},
        {"pattern": 42},
    ],
)
def test_a_bad_regex_configuration_is_refused(kwargs):
    with pytest.raises(CheckerConfigError):
        RegexChecker("r", 1, **kwargs)


@pytest.mark.parametrize(
    ("pattern", "engine_says"),
    [
        ("a(?=b)", "look-around"),
        (r"(a)\1", "backreferences are not supported"),
        (r"a\Z", "unrecognized escape sequence"),
        ("a{,3}", "expects a valid decimal"),
        ("(?#c)", "at position 0"),
        ("(?-u).", "can match invalid UTF-8"),
    ],
)
def test_a_pattern_the_reference_refuses_is_refused_at_configuration(pattern, engine_says):
    with pytest.raises(CheckerConfigError, match=engine_says):
        RegexChecker("r", 1, pattern)


@pytest.mark.parametrize(
    "pattern", [r"\p{Alphabetic}", "[a-z&&[^aeiou]]", "a{1001}", r"\b{start}", "(?R)^a$", "a(?i)b"]
)
def test_a_pattern_the_reference_accepts_configures_a_checker(pattern):
    assert RegexChecker("r", 1, pattern).pattern == pattern


@pytest.mark.parametrize(
    ("pattern", "content", "matches"),
    [
        (r"\x{41}", "A", True),
        ("^a{2}*$", "aaaa", True),
        (r"^\pL+$", "éclair", True),
        (r"\w", "é", True),
        ("(?i)ß", "SS", False),
        ("[[:alpha:]]", "é", False),
        (r"\bé", "é", True),
        (r"\w", "Ⓐ", True),
        ("a(?i)b", "aB", True),
        (r"(?-u)\w", "é", False),
        ("a$", "a\n", False),
    ],
)
def test_patterns_match_as_in_the_reference(key, pattern, content, matches):
    evidence = RegexChecker("r", 1, pattern).check(CheckInput(content), key)
    assert evidence.permits_commit is matches
