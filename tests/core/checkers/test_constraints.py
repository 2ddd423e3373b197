"""The constraints checker kind."""

import json

import pytest

from reviewapp.core.checkers import (
    CheckerConfigError,
    CheckInput,
    CheckVerdict,
    ConstraintsChecker,
)

# ── constraints ──────────────────────────────────────────────────────────────

MANDATE = 'must contain "alpha"; must not contain "forbidden"; output must feel authoritative'


def test_constraints_pass_keeps_unenforced_clauses_visible(key):
    checker = ConstraintsChecker("mandate", 1, MANDATE)
    evidence = checker.check(CheckInput("alpha, nothing else"), key)
    assert evidence.verdict is CheckVerdict.PASS
    assert evidence.details["unenforced"] == ["output must feel authoritative"]
    assert json.loads(evidence.payload_bytes)["details"]["unenforced"] == [
        "output must feel authoritative"
    ]
    assert evidence.details["csr"] == 1.0 and evidence.details["error"] == 0.0


def test_constraints_fail_carries_the_feedback_lines(key):
    checker = ConstraintsChecker("mandate", 1, MANDATE)
    evidence = checker.check(CheckInput("forbidden words only"), key)
    assert evidence.verdict is CheckVerdict.FAIL
    lines = evidence.reason.splitlines()
    assert len(lines) == 2
    assert "'alpha'" in lines[0] and "'forbidden'" in lines[1]
    assert evidence.details["csr"] == 0.0
    assert evidence.details["unenforced"] == ["output must feel authoritative"]


def test_a_mandate_with_nothing_checkable_is_refused_at_configuration():
    with pytest.raises(CheckerConfigError, match="mandate refused"):
        ConstraintsChecker("mandate", 1, "output must feel authoritative")
    with pytest.raises(CheckerConfigError):
        ConstraintsChecker("mandate", 1, "must match /([unclosed/")


def test_the_mandate_is_bound_into_the_evidence(key):
    one = ConstraintsChecker("mandate", 1, 'must contain "alpha"').check(CheckInput("alpha"), key)
    two = ConstraintsChecker("mandate", 1, 'must include "alpha"').check(CheckInput("alpha"), key)
    assert one.digests["settings"] != two.digests["settings"]
