"""Appending: entries are stored, with their leaf hash and no index, in their writer's transaction.

No lock is taken: the sequencer (``sequence``) gives committed entries their
indexes afterwards, in batches, woken when the writer's transaction commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, models, transaction
from django.utils import timezone

from reviewapp.core import merkle

from ..models import LedgerEntry
from .sequence import sequence_after_commit

# The column of an entry that holds the id of the row it records, by kind.
_RECORD_COLUMN = {"decision": "decision_id", "evidence": "evidence_id"}


@dataclass(frozen=True)
class NewEntry:
    kind: str
    payload: str
    signature: str
    key_id: str
    # The row it records (a decision stored with its entry gets its id then).
    record_id: int | None = None


def signed_entry(kind: str, record: models.Model) -> NewEntry:
    """The entry recording ``record``, a stored row with a signed ``payload``."""
    return NewEntry(kind, record.payload, record.signature, record.key_id, record.pk)


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
        _insert_entries(rows, created_at)
        sequence_after_commit()


@dataclass(frozen=True)
class RecordAppend:
    """A record's append, built before it is signed: ``ledger_append_record`` stores both."""

    record: models.Model
    kind: str
    evidence_rows: list[list]
    # PostgreSQL's one statement that stores the record and its entries.
    sql: str = ""


def ledger_prepare_record(
    *, record: models.Model, kind: str, evidence: Iterable[NewEntry] = ()
) -> RecordAppend:
    """Build the append of ``record`` (unsaved, not yet signed), an entry of ``kind``.

    ``evidence`` are entries stored in this transaction that enter the ledger
    with it, before it.
    """
    evidence_rows = [_entry_row(item) for item in evidence]
    if connection.vendor != "postgresql":
        return RecordAppend(record, kind, evidence_rows)
    quote = connection.ops.quote_name
    columns = _record_columns(type(record))
    values = ", ".join(["(%s::int, %s, %s::bigint, %s::bigint, %s, %s)"] * (len(evidence_rows) + 1))
    record_id = {
        kind_: f"CASE WHEN v.ord = {len(evidence_rows)} THEN r.id ELSE v.{column} END"
        if kind_ == kind
        else f"v.{column}"
        for kind_, column in _RECORD_COLUMN.items()
    }
    sql = (
        f"WITH r AS (INSERT INTO {quote(type(record)._meta.db_table)} "
        f"({', '.join(quote(f.column) for f in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) RETURNING id) "
        f"INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
        f"SELECT v.kind, {record_id['decision']}, {record_id['evidence']}, "
        "v.entry, v.leaf_hash, %s::timestamptz "
        f"FROM r CROSS JOIN (VALUES {values}) "
        "AS v(ord, kind, decision_id, evidence_id, entry, leaf_hash) ORDER BY v.ord "
        f"RETURNING {_RECORD_COLUMN[kind]}"
    )
    return RecordAppend(record, kind, evidence_rows, sql)


def _record_columns(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.primary_key]


def ledger_append_record(append: RecordAppend) -> None:
    """Store the prepared record, now signed, and its entry after its evidence's.

    Call in the record's transaction: the record exists exactly when its entry
    does. PostgreSQL: one statement.
    """
    record = append.record
    rows = [*append.evidence_rows, _entry_row(signed_entry(append.kind, record))]
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    if connection.vendor != "postgresql":
        record.save(force_insert=True)
        rows[-1][_ROW_INDEX[append.kind]] = record.pk
        _insert_entries(rows, created_at)
        sequence_after_commit()
        return
    params = [
        *(
            f.get_db_prep_save(f.pre_save(record, True), connection)
            for f in _record_columns(type(record))
        ),
        created_at,
        *(value for ord_, row in enumerate(rows) for value in (ord_, *row)),
    ]
    with connection.cursor() as cursor:
        cursor.execute(append.sql, params)
        returned = {row[0] for row in cursor.fetchall()}
    # Of the ids the entries record in the record's column, the one no evidence row had.
    known = {row[_ROW_INDEX[append.kind]] for row in append.evidence_rows}
    (record.pk,) = returned - known - {None}
    record._state.adding, record._state.db = False, connection.alias
    sequence_after_commit()


def _insert_entries(rows: list[list], created_at) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
            f"VALUES {', '.join(['(%s, %s, %s, %s, %s, %s)'] * len(rows))}",
            [value for row in rows for value in (*row, created_at)],
        )


def _entry_row(item: NewEntry) -> list:
    """An entry's columns but its time."""
    entry = merkle.entry_bytes(item.kind, item.payload, item.signature, item.key_id)
    ids = {column: None for column in _RECORD_COLUMN.values()}
    ids[_RECORD_COLUMN[item.kind]] = item.record_id
    return [item.kind, *ids.values(), entry.decode(), merkle.leaf_hash(entry).hex()]


_ENTRY_COLUMNS = "kind, decision_id, evidence_id, entry, leaf_hash, created_at"
# Where an entry row (``_entry_row``) holds the id of its record, by kind.
_ROW_INDEX = {kind: 1 + i for i, kind in enumerate(_RECORD_COLUMN)}
