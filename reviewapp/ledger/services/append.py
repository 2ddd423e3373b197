"""Sequencing: entries and decisions take the next leaf indexes under the ledger's lock.

Only sequencing runs under the lock (and, for a decision, its signature and the chain
head's advance); the tree is built later, in batches, by the integrator (``tree``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from reviewapp.core import merkle
from reviewapp.review.models import ChainHead, Decision, Evidence

from ..models import LedgerEntry, LedgerLock


@dataclass(frozen=True)
class NewEntry:
    kind: str
    payload: str
    signature: str
    key_id: str
    decision: Decision | None = None
    evidence: Evidence | None = None


def check_foreign_keys_now() -> None:
    """Run the transaction's deferred foreign-key checks now, not at its COMMIT.

    Django declares PostgreSQL's foreign keys DEFERRABLE INITIALLY DEFERRED:
    the checks of every row a final step wrote (judgements, claims, evidence)
    would run at COMMIT, with the chain head or this ledger's lock held and
    every other decision waiting on it. Called just before such a lock; rows
    written after it are checked as they are written. (Measured in
    benchmarks/llm_pipeline.py: the chain head was held 11.8 ms a decision,
    5.9 ms of it from the last statement to the end of COMMIT; 6.5 ms after.)
    SQLite defers them too, but its write lock is held from BEGIN: nothing
    to gain there.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _lock() -> None:
    """Appends and checkpoints take turns on one row (SQLite: the IMMEDIATE transaction)."""
    locked = LedgerLock.objects.select_for_update().filter(singleton=True).values_list("pk")
    if not list(locked):
        LedgerLock.objects.get_or_create(singleton=True)
        list(locked.all())


def lock_chain_head_and_ledger(*, genesis: str) -> ChainHead:
    """Lock the decision chain head and the ledger's lock row, in one statement, until COMMIT.

    What ``decision_append`` takes: both are needed (decisions chain on the
    head; evidence of an escalation is sequenced under the ledger's lock
    alone), and one round trip fewer is held by every decision. Appenders of
    evidence alone take only the ledger's lock, and no one takes it before the
    head, so the two never wait on each other in a cycle. SQLite: the IMMEDIATE
    transaction holds the database instead.
    """
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    head, ledger = (connection.ops.quote_name(m._meta.db_table) for m in (ChainHead, LedgerLock))
    query = (
        f"SELECT h.id, h.last_hash FROM {head} h "
        f"CROSS JOIN {ledger} l WHERE h.singleton AND l.singleton{lock}"
    )
    with connection.cursor() as cursor:
        cursor.execute(query)
        row = cursor.fetchone()
        if row is None:  # the first decision (or a flushed test database)
            ChainHead.objects.get_or_create(singleton=True, defaults={"last_hash": genesis})
            LedgerLock.objects.get_or_create(singleton=True)
            cursor.execute(query)
            row = cursor.fetchone()
    head = ChainHead(id=row[0], singleton=True, last_hash=row[1])
    head._state.adding = False
    return head


def tree_size() -> int:
    """How many entries the ledger holds (sequenced; see ``integrated_size`` for proofs)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(leaf_index) FROM {LedgerEntry._meta.db_table}")
        (last,) = cursor.fetchone()
    return 0 if last is None else last + 1


def ledger_append(items: Iterable[NewEntry], *, locked: bool = False) -> list[int]:
    """Sequence entries, in order, as one transaction; return their leaf indexes.

    Call inside the writer's transaction; ``locked`` when it already holds the
    ledger's lock (``lock_chain_head_and_ledger``). Only the leaf index is taken under
    the lock; the tree is built later, in batches, by ``checkpoint_create``.
    Indexes come from MAX + 1 under the lock, never from a sequence: a
    rolled-back append leaves no gap, so the committed entries are always the
    contiguous prefix the integrator expects.
    """
    rows = [_entry_row(item) for item in items]
    if not rows:
        return []
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    # No savepoint inside the writer's transaction: the entries stand or fall with it.
    with transaction.atomic(savepoint=False):
        if not locked:
            _lock()
        if connection.vendor == "postgresql":
            sql = f"WITH {_entries_cte(len(rows))} SELECT MIN(leaf_index) FROM e"
            with connection.cursor() as cursor:
                cursor.execute(sql, [created_at, *_values(rows)])
                (first,) = cursor.fetchone()
        else:
            first = _append_in_statements(rows, created_at)
    return list(range(first, first + len(rows)))


# The decision's fields set only with the chain head locked (``created_at`` as save() sets it).
_CHAINED_FIELDS = ("payload", "signature", "key_id", "prev_hash", "hash", "created_at")


@dataclass(frozen=True)
class DecisionAppend:
    """A decision's append as far as it can be built before the chain head's lock:
    ``ledger_append_decision`` adds what depends on the chain."""

    decision: Decision
    evidence_rows: list[list]
    # PostgreSQL's one statement, and its first parameters: the decision's columns
    # that do not depend on the chain (the chained ones come next).
    sql: str = ""
    params: tuple = ()


def ledger_prepare_decision(
    *, decision: Decision, evidence: Iterable[NewEntry] = ()
) -> DecisionAppend:
    """Build the append of ``decision`` (unsaved, not yet signed) before the lock is taken.

    ``evidence`` are entries stored in this transaction that enter the ledger
    with it, before it. The statement and every value that does not depend on
    the chain are built here: every decision waits for the lock in turn.
    """
    evidence_rows = [_entry_row(item) for item in evidence]
    if connection.vendor != "postgresql":
        return DecisionAppend(decision, evidence_rows)
    static = [f for f in Decision._meta.concrete_fields if f.name not in _CHAINED_FIELDS]
    chained = [Decision._meta.get_field(name) for name in _CHAINED_FIELDS]
    columns = [f for f in static if not f.primary_key] + chained
    head_table = connection.ops.quote_name(ChainHead._meta.db_table)
    sql = (
        f"WITH d AS (INSERT INTO {connection.ops.quote_name(Decision._meta.db_table)} "
        f"({', '.join(connection.ops.quote_name(f.column) for f in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) RETURNING id), "
        + _entries_cte(
            len(evidence_rows) + 1,
            decision_id="CASE WHEN v.kind = 'decision' THEN d.id ELSE v.decision_id END",
            join=" CROSS JOIN d",
        )
        + f" UPDATE {head_table} SET last_hash = %s FROM d WHERE {head_table}.id = %s "
        "RETURNING d.id, (SELECT MIN(leaf_index) FROM e)"
    )
    params = tuple(
        f.get_db_prep_save(f.pre_save(decision, True), connection)
        for f in static
        if not f.primary_key
    )
    return DecisionAppend(decision, evidence_rows, sql, params)


def ledger_append_decision(append: DecisionAppend, *, head: ChainHead) -> list[int]:
    """Store the prepared decision, now signed and chained on ``head``, sequence it after
    its evidence and advance the chain head to it; return the leaf indexes.

    Call in the decision's transaction with ``head`` and the ledger's lock held
    (``lock_chain_head_and_ledger``): a decision exists exactly when its entry does.
    """
    decision = append.decision
    rows = [*append.evidence_rows, _entry_row(decision_entry(decision))]
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    if connection.vendor == "postgresql":
        first = _append_decision_in_one_statement(append, rows, created_at, head)
    else:
        decision.save(force_insert=True)
        rows[-1][1] = decision.pk
        first = _append_in_statements(rows, created_at)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {connection.ops.quote_name(ChainHead._meta.db_table)} "
                "SET last_hash = %s WHERE id = %s",
                [decision.hash, head.pk],
            )
    head.last_hash = decision.hash
    return list(range(first, first + len(rows)))


def _entry_row(item: NewEntry) -> list:
    """An entry's columns but its leaf index and time: none depends on the position (a
    decision's id is filled in when it is stored)."""
    entry = merkle.entry_bytes(item.kind, item.payload, item.signature, item.key_id)
    return [
        item.kind,
        item.decision.pk if item.decision else None,
        item.evidence.pk if item.evidence else None,
        entry.decode(),
        merkle.leaf_hash(entry).hex(),
    ]


_ENTRY_COLUMNS = "leaf_index, kind, decision_id, evidence_id, entry, leaf_hash, created_at"


def _entries_cte(count: int, decision_id: str = "v.decision_id", join: str = "") -> str:
    """PostgreSQL: the CTEs ``base`` (the next leaf index) and ``e`` (the entries inserted).

    One statement after the lock, so its snapshot sees the last holder's
    commit (READ COMMITTED), and takes the next index and inserts the entries
    in one round trip: every decision runs it with the chain head held. Its
    parameters: the entries' time, then ``_values`` of the rows.
    """
    values = ", ".join(["(%s::int, %s, %s::bigint, %s::bigint, %s, %s)"] * count)
    return (
        "base AS (SELECT COALESCE(MAX(leaf_index), -1) + 1 AS n "
        f"FROM {LedgerEntry._meta.db_table}), "
        f"e AS (INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
        f"SELECT base.n + v.ord, v.kind, {decision_id}, v.evidence_id, v.entry, v.leaf_hash, "
        f"%s::timestamptz FROM base{join} CROSS JOIN (VALUES {values}) "
        "AS v(ord, kind, decision_id, evidence_id, entry, leaf_hash) "
        "RETURNING leaf_index)"
    )


def _values(rows) -> list:
    return [value for ord_, row in enumerate(rows) for value in (ord_, *row)]


def _append_decision_in_one_statement(append: DecisionAppend, rows, created_at, head) -> int:
    """PostgreSQL: the decision, its entry (after the evidence's) and the head's advance in
    one statement, the one round trip between the lock and COMMIT.

    The head's UPDATE joins the decision's INSERT (``FROM d``), so the row is
    inserted before the head's row is updated, and the head's guard trigger
    (a volatile function: its query takes a new snapshot) sees it, as it
    would from an earlier statement; it refuses the advance unless the
    decision chains on the head. The decision's columns are its fields'
    values as ``save()`` would write them (``created_at`` included).
    """
    decision = append.decision
    chained = [
        f.get_db_prep_save(f.pre_save(decision, True), connection)
        for f in map(Decision._meta.get_field, _CHAINED_FIELDS)
    ]
    params = [*append.params, *chained, created_at, *_values(rows), decision.hash, head.pk]
    with connection.cursor() as cursor:
        cursor.execute(append.sql, params)
        row = cursor.fetchone()
    if row is None:
        raise ChainHead.DoesNotExist(f"chain head {head.pk} is gone")
    decision.pk, first = row
    decision._state.adding, decision._state.db = False, connection.alias
    return first


def _append_in_statements(rows, created_at) -> int:
    """SQLite: the write lock is held from BEGIN, and a round trip is a function call."""
    first = tree_size()  # a new statement after the lock: it sees the last holder's commit
    # Plain SQL, not bulk_create: every decision runs this with the chain head held.
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LedgerEntry._meta.db_table} ({_ENTRY_COLUMNS}) "
            f"VALUES {', '.join(['(%s, %s, %s, %s, %s, %s, %s)'] * len(rows))}",
            [
                value
                for index, row in enumerate(rows, start=first)
                for value in (index, *row, created_at)
            ],
        )
    return first


def decision_entry(decision: Decision) -> NewEntry:
    return NewEntry(
        "decision", decision.payload, decision.signature, decision.key_id, decision=decision
    )


def evidence_entry(evidence: Evidence) -> NewEntry:
    return NewEntry(
        "evidence", evidence.payload, evidence.signature, evidence.key_id, evidence=evidence
    )
