"""Decisions and evidence stored before the ledger existed are put into it by migration 0002."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from reviewapp.ledger import immutability
from reviewapp.ledger.models import LedgerEntry, LedgerNode
from reviewapp.review.in_ledger.verification import ledger_verify
from reviewapp.review.models import Decision
from tests.ledger.helpers import decide_chained_v1

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(target=None):
    """To ``target``, or to every app's latest migration (going back before the ledger's
    append-only triggers took the later migrations that depend on them back too)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target] if target else executor.loader.graph.leaf_nodes())


def test_the_backfill_puts_existing_history_into_the_ledger_in_order():
    decide_chained_v1(3)  # the history before the ledger: chained decisions (v1)
    expected = [
        ("evidence" if e.evidence_id else "decision", e.evidence_id or e.decision_id)
        for e in LedgerEntry.objects.order_by("leaf_index")
    ]
    try:
        migrate(("ledger", "0001_initial"))  # no triggers, no backfill yet
        assert immutability.missing_triggers(connection)
        LedgerEntry.objects.all().delete()  # the state before the ledger existed
        LedgerNode.objects.all().delete()
        assert Decision.objects.count() == 3
    finally:
        migrate()  # through 0002's backfill and 0003's triggers
    assert immutability.missing_triggers(connection) == []
    assert [
        ("evidence" if e.evidence_id else "decision", e.evidence_id or e.decision_id)
        for e in LedgerEntry.objects.order_by("leaf_index")
    ] == expected
    result = ledger_verify()
    assert result.ok, result.problem
    assert (result.entries, result.decisions, result.evidence) == (3, 3, 0)
