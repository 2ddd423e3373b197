"""decision_append: a decision is signed, chained and sequenced with the chain head held briefly."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.review.services.decisions import GENESIS_HASH, decision_append
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db

# What must run under the lock, in order: the decision, its leaf index, its entry and the
# head's advance (PostgreSQL: one statement; SQLite, whose lock is held from BEGIN and
# whose round trips are function calls: four).
UNDER_THE_LOCK = {
    "postgresql": (
        'WITH d AS (INSERT INTO "review_decision"',
        # ... in which the head's advance joins the decision's INSERT.
    ),
    "postgresql_contains": (
        "base AS (SELECT COALESCE(MAX(leaf_index), -1) + 1 AS n FROM ledger_entry), "
        "e AS (INSERT INTO ledger_entry",
        'UPDATE "review_chainhead" SET last_hash = ',
        ' FROM d WHERE "review_chainhead".id = ',
    ),
    "sqlite": (
        'INSERT INTO "review_decision"',
        "SELECT MAX(leaf_index) FROM ledger_entry",
        "INSERT INTO ledger_entry",
        'UPDATE "review_chainhead"',
    ),
}


def _append(content: str):
    proposal = submit(PanelFactory(lenses=[LensFactory()], need=1), content)
    return decision_append(
        proposal=proposal, outcome="approved", basis="system", rationale="all passed"
    )


def test_only_the_decision_its_entry_and_the_head_are_written_while_the_head_is_locked():
    _append("first")  # the chain head and the ledger's lock rows exist from here on
    proposal = submit(PanelFactory(lenses=[LensFactory()], need=1), "second")
    with CaptureQueriesContext(connection) as queries:
        decision_append(proposal=proposal, outcome="approved", basis="system", rationale="r")
    statements = [q["sql"] for q in queries.captured_queries]
    locked = next(
        i for i, sql in enumerate(statements) if "review_chainhead" in sql and "ledger_lock" in sql
    )
    after = statements[locked + 1 :]
    expected_statements = UNDER_THE_LOCK[connection.vendor]
    assert len(after) == len(expected_statements), after
    for sql, expected in zip(after, expected_statements, strict=True):
        assert sql.startswith(expected), (sql, expected)
    if connection.vendor == "postgresql":
        for part in UNDER_THE_LOCK["postgresql_contains"]:
            assert part in after[-1], (part, after[-1])


def test_each_decision_chains_on_the_one_before_and_is_the_next_leaf():
    first, second = _append("first"), _append("second")
    assert first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.hash
    assert second.ledger_entry.leaf_index == first.ledger_entry.leaf_index + 1
    assert second.payload.index(f'"prev_hash":"{first.hash}"') > 0
