"""Appending: entries are stored, with their leaf hash and no index, in their writer's transaction.

No lock is taken: the sequencer (``sequence``) gives committed entries their
indexes afterwards, in batches, woken when the writer's transaction commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from reviewapp.core import merkle
from reviewapp.review.models import Decision, Evidence

from ..models import LedgerEntry
from .sequence import sequence_after_commit


@dataclass(frozen=True)
class NewEntry:
    kind: str
    payload: str
    signature: str
    key_id: str
    decision: Decision | None = None
    evidence: Evidence | None = None


def tree_size() -> int:
    """How many entries the ledger has sequenced (see ``integrated_size`` for proofs)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(leaf_index) FROM {LedgerEntry._meta.db_table}")
        (last,) = cursor.fetchone()
    return 0 if last is None else last + 1


def ledger_append(items: Iterable[NewEntry]) -> None:
    """Store entries, in order, in the writer's transaction; the sequencer indexes them.

    They stand or fall with that transaction: a rolled-back append leaves no
    entry. Their order among themselves is kept (ascending ids, which the
    sequencer follows within a batch).
    """
    rows = [_entry_row(item) for item in items]
    if not rows:
        return
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
                f"VALUES {', '.join(['(%s, %s, %s, %s, %s, %s)'] * len(rows))}",
                [value for row in rows for value in (*row, created_at)],
            )
        sequence_after_commit()


@dataclass(frozen=True)
class DecisionAppend:
    """A decision's append, built before it is signed: ``ledger_append_decision`` stores it."""

    decision: Decision
    evidence_rows: list[list]
    # PostgreSQL's one statement that stores the decision and its entries.
    sql: str = ""


# The decision's fields known only once it is signed (``created_at`` as save() sets it).
_SIGNED_FIELDS = ("payload", "signature", "key_id", "hash", "created_at")


def ledger_prepare_decision(
    *, decision: Decision, evidence: Iterable[NewEntry] = ()
) -> DecisionAppend:
    """Build the append of ``decision`` (unsaved, not yet signed).

    ``evidence`` are entries stored in this transaction that enter the ledger
    with it, before it.
    """
    evidence_rows = [_entry_row(item) for item in evidence]
    if connection.vendor != "postgresql":
        return DecisionAppend(decision, evidence_rows)
    columns = [f for f in _decision_columns()]
    values = ", ".join(["(%s::int, %s, %s::bigint, %s::bigint, %s, %s)"] * (len(evidence_rows) + 1))
    sql = (
        f"WITH d AS (INSERT INTO {connection.ops.quote_name(Decision._meta.db_table)} "
        f"({', '.join(connection.ops.quote_name(f.column) for f in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) RETURNING id) "
        f"INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
        "SELECT v.kind, CASE WHEN v.kind = 'decision' THEN d.id ELSE v.decision_id END, "
        "v.evidence_id, v.entry, v.leaf_hash, %s::timestamptz "
        f"FROM d CROSS JOIN (VALUES {values}) "
        "AS v(ord, kind, decision_id, evidence_id, entry, leaf_hash) ORDER BY v.ord "
        "RETURNING decision_id"
    )
    return DecisionAppend(decision, evidence_rows, sql)


def _decision_columns():
    fields = Decision._meta.concrete_fields
    return [f for f in fields if not f.primary_key and f.name not in _SIGNED_FIELDS] + [
        Decision._meta.get_field(name) for name in _SIGNED_FIELDS
    ]


def ledger_append_decision(append: DecisionAppend) -> None:
    """Store the prepared decision, now signed, and its entry after its evidence's.

    Call in the decision's transaction: a decision exists exactly when its
    entry does. PostgreSQL: one statement.
    """
    decision = append.decision
    rows = [*append.evidence_rows, _entry_row(decision_entry(decision))]
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    if connection.vendor == "postgresql":
        params = [
            *(
                f.get_db_prep_save(f.pre_save(decision, True), connection)
                for f in _decision_columns()
            ),
            created_at,
            *(value for ord_, row in enumerate(rows) for value in (ord_, *row)),
        ]
        with connection.cursor() as cursor:
            cursor.execute(append.sql, params)
            decision.pk = max(row[0] for row in cursor.fetchall() if row[0] is not None)
        decision._state.adding, decision._state.db = False, connection.alias
        sequence_after_commit()
        return
    decision.save(force_insert=True)
    rows[-1][1] = decision.pk
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
            f"VALUES {', '.join(['(%s, %s, %s, %s, %s, %s)'] * len(rows))}",
            [value for row in rows for value in (*row, created_at)],
        )
    sequence_after_commit()


def _entry_row(item: NewEntry) -> list:
    """An entry's columns but its time (a decision's id is filled in when it is stored)."""
    entry = merkle.entry_bytes(item.kind, item.payload, item.signature, item.key_id)
    return [
        item.kind,
        item.decision.pk if item.decision else None,
        item.evidence.pk if item.evidence else None,
        entry.decode(),
        merkle.leaf_hash(entry).hex(),
    ]


_ENTRY_COLUMNS = "kind, decision_id, evidence_id, entry, leaf_hash, created_at"


def decision_entry(decision: Decision) -> NewEntry:
    return NewEntry(
        "decision", decision.payload, decision.signature, decision.key_id, decision=decision
    )


def evidence_entry(evidence: Evidence) -> NewEntry:
    return NewEntry(
        "evidence", evidence.payload, evidence.signature, evidence.key_id, evidence=evidence
    )
