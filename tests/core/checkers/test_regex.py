"""The regex checker kind."""

import time

import pytest

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


def test_a_regex_timeout_is_inconclusive(key):
    checker = RegexChecker("catastrophic", 1, r"(\w+\s?)*$", timeout_seconds=0.1)
    started = time.monotonic()
    evidence = checker.check(CheckInput("x " * 30_000 + "!"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "did not finish" in evidence.reason
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pattern": "([unclosed"},
        {"pattern": "ok", "must_match": "no"},
        {"pattern": "ok", "timeout_seconds": 0},
        {"pattern": "ok", "timeout_seconds": True},
    ],
)
def test_a_bad_regex_configuration_is_refused(kwargs):
    with pytest.raises(CheckerConfigError):
        RegexChecker("r", 1, **kwargs)
