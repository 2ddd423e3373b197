"""The database itself refuses to edit or delete decisions, evidence and ledger rows."""

import random
import sqlite3

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from reviewapp.ledger import immutability, services
from reviewapp.ledger.models import (
    LedgerCheckpoint,
    LedgerCosignature,
    LedgerEntry,
    LedgerNode,
    SigningKey,
)
from reviewapp.review.models import (
    AccessLoss,
    Decision,
    DecisionAudit,
    Escalation,
    Evidence,
    Review,
)
from reviewapp.review.services import audits
from reviewapp.review.services.clients import api_client_create
from reviewapp.review.services.escalations import escalation_review
from tests.api.conftest import evaluated
from tests.factories import ReviewerFactory
from tests.ledger.helpers import decide
from tests.review.test_audits import CONTENT, decided, verdict
from tests.support.tamper import tampering
from tests.webhooks.helpers import one_lens_panel

ROW_OF = {
    "review_decision": Decision,
    "review_evidence": Evidence,
    "ledger_entry": LedgerEntry,
    "ledger_node": LedgerNode,
    "ledger_checkpoint": LedgerCheckpoint,
    "ledger_cosignature": LedgerCosignature,
    "review_signingkey": SigningKey,
    # A reviewer's signed review, and an audit verdict on an automatic decision.
    "review_review": Review,
    "review_decisionaudit": DecisionAudit,
    # The record of lost access that keeps personal tokens dead.
    "review_accessloss": AccessLoss,
}
COLUMN_OF = {
    "review_decision": "rationale",
    "review_evidence": "reason",
    "ledger_entry": "leaf_hash",
    "ledger_node": "hash",
    "ledger_checkpoint": "root_hash",
    "ledger_cosignature": "line",
    "review_signingkey": "public_key",
    "review_review": "outcome",
    "review_decisionaudit": "outcome",
    "review_accessloss": "reason",
}


def raw(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.fixture
def rows(db, monkeypatch):
    decide(2)
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))  # every decision audited
    verdict(decided(one_lens_panel(CONTENT, audit_rate=100)), "rejected")
    one_of_two = evaluated("Close account 7731.", requires_sign_off=True, reviews_needed=2)
    ann = ReviewerFactory(username="ann")
    escalation_review(
        escalation_id=Escalation.objects.get(proposal=one_of_two).pk,
        outcome="rejected",
        rationale="The account has open disputes.",
        user=ann,
        decided_by_name="ann",
    )
    api_client_create(name="ann-laptop", scopes=["review"], user=ann)
    type(ann).objects.filter(pk=ann.pk).update(is_active=False)  # a loss of access, recorded
    checkpoint = services.checkpoint_create()
    LedgerCosignature.objects.create(
        checkpoint=checkpoint, witness="w.example/w", key_id="00000000", timestamp=1, line="x"
    )
    return {table: model.objects.order_by("pk").first().pk for table, model in ROW_OF.items()}


def test_every_signed_record_and_ledger_table_is_protected():
    assert set(immutability.PROTECTED_TABLES) == set(ROW_OF)


@pytest.mark.parametrize("table", ROW_OF)
def test_a_raw_update_is_refused(rows, table):
    column = COLUMN_OF[table]
    value = {"singleton": False, "outcome": "approved"}.get(column, "tampered")
    with pytest.raises(IntegrityError, match=f"UPDATE on {table} refused"):
        raw(f'UPDATE "{table}" SET "{column}" = %s WHERE id = %s', [value, rows[table]])
    assert getattr(ROW_OF[table].objects.get(pk=rows[table]), column) != value


@pytest.mark.parametrize("table", ROW_OF)
def test_a_raw_delete_is_refused(rows, table):
    with pytest.raises(IntegrityError, match=f"DELETE on {table} refused"):
        raw(f'DELETE FROM "{table}" WHERE id = %s', [rows[table]])
    assert ROW_OF[table].objects.filter(pk=rows[table]).exists()


def test_orm_updates_and_saves_are_refused(rows):
    decision = Decision.objects.get(pk=rows["review_decision"])
    decision.outcome = "rejected"
    with pytest.raises(IntegrityError), transaction.atomic():
        decision.save()
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerCheckpoint.objects.all().delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        Evidence.objects.update(verdict="fail")


def test_every_trigger_is_installed(rows):
    assert immutability.missing_triggers(connection) == []


def test_the_tamper_helper_switches_them_off_for_the_block_only(rows):
    with tampering():
        per_table = 3 if connection.vendor == "postgresql" else 2
        expected = len(immutability.PROTECTED_TABLES) * per_table
        assert len(immutability.missing_triggers(connection)) == expected
        Decision.objects.filter(pk=rows["review_decision"]).update(rationale="edited")
    assert immutability.missing_triggers(connection) == []
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.filter(pk=rows["review_decision"]).update(rationale="again")


def test_triggers_a_migration_dropped_come_back_after_migrate(rows):
    """SQLite drops a table's triggers whenever a migration rebuilds the table."""
    with tampering("review_decision"):
        assert "review_decision:update" in immutability.missing_triggers(connection)
        immutability.reinstall_after_migrate(sender=None, using="default")
        assert immutability.missing_triggers(connection) == []


@pytest.mark.django_db(transaction=True)
def test_flush_still_empties_every_table_and_the_triggers_survive():
    """What the test suite does between transactional tests (TRUNCATE on PostgreSQL,
    DELETE through the guard on SQLite)."""
    decide(2)
    services.checkpoint_create()
    call_command("flush", interactive=False, verbosity=0)
    for model in ROW_OF.values():
        assert not model.objects.exists()
    assert immutability.missing_triggers(connection) == []
    decide(1)  # the ledger starts again from entry 0
    assert list(LedgerEntry.objects.values_list("leaf_index", flat=True)) == [0, 1]
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.all().delete()


def test_a_signing_key_may_be_retired_once_and_nothing_else(rows):
    key = SigningKey.objects.get()
    now = timezone.now()
    SigningKey.objects.filter(pk=key.pk).update(retired_at=now)
    with pytest.raises(IntegrityError, match="UPDATE on review_signingkey refused"):
        with transaction.atomic():
            SigningKey.objects.filter(pk=key.pk).update(retired_at=None)
    with pytest.raises(IntegrityError, match="UPDATE on review_signingkey refused"):
        with transaction.atomic():
            SigningKey.objects.filter(pk=key.pk).update(key_id="ed25519:0000000000000000")


@pytest.mark.parametrize("table", ROW_OF)
def test_truncate_is_refused_on_postgresql(rows, table):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no TRUNCATE; its DELETE is covered above")
    with pytest.raises(IntegrityError, match=f"TRUNCATE on {table} refused"):
        # Deferred foreign-key checks queued in the test's transaction would block the
        # TRUNCATE before any trigger ran: run them first.
        raw(f'SET CONSTRAINTS ALL IMMEDIATE; TRUNCATE "{table}" CASCADE')
    assert ROW_OF[table].objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_sqlite_client_other_than_the_app_cannot_delete():
    """The old guard was a row: one UPDATE of it opened every DELETE. Now nothing does."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    decide(1)
    services.checkpoint_create()
    other = sqlite3.connect(connection.settings_dict["NAME"])
    try:
        tables = {name for (name,) in other.execute("SELECT name FROM sqlite_master")}
        assert immutability.OLD_SQLITE_GUARD_TABLE not in tables
        with pytest.raises(sqlite3.OperationalError):
            other.execute("DELETE FROM ledger_checkpoint")
    finally:
        other.close()
    assert LedgerCheckpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_no_delete_guard_is_open_outside_flush():
    decide(1)
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.all().delete()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {immutability.SQLITE_DELETES_ALLOWED}()")
            assert cursor.fetchone() == (0,)
