"""Appending to the ledger, checkpointing it, and answering proofs from stored subtrees.

The tree is RFC 6962 over ``merkle.entry_bytes`` of each signed record. Every
perfect subtree is stored once (``LedgerNode``; leaves are
``LedgerEntry.leaf_hash``), so a root, an inclusion proof or a consistency
proof for any size costs O(log n) rows, never a scan.

Appending and integrating are two steps, as in Tessera-style logs. An append
only sequences: under the ledger's lock it gives each entry the next leaf
index and stores it, and nothing else (its leaf hash is computed before the
lock). The checkpoint task then integrates every entry appended since the
last checkpoint into the tree in one batch (their subtree hashes), and signs
the new size. So proofs are answered up to the latest checkpoint (the
*integrated* size), within one checkpoint interval of an append.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from reviewapp_client.verify.ledger import bound_evidence

from reviewapp.core import merkle
from reviewapp.core.signing import sha256_hex, verify
from reviewapp.review.keys import public_key_for, server_signer, trusted_keys, untrusted_key_problem
from reviewapp.review.models import ChainHead, Decision, Evidence

from .models import LedgerCheckpoint, LedgerEntry, LedgerLock, LedgerNode
from .witness import checkpoint_witness

DEFAULT_ORIGIN = "reviewapp.local/ledger"
EXPORT_FORMAT = "reviewapp.ledger-export/1"
MAX_PAGE = 1000


def ledger_origin() -> str:
    """The log's name: the checkpoint origin line and the note key name."""
    return settings.REVIEWAPP_LEDGER_ORIGIN or DEFAULT_ORIGIN


@dataclass(frozen=True)
class NewEntry:
    kind: str
    payload: str
    signature: str
    key_id: str
    decision: Decision | None = None
    evidence: Evidence | None = None


# ── appending ────────────────────────────────────────────────────────────────


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


def integrated_size() -> int:
    """The size of the tree whose subtree hashes are all stored: the latest checkpoint's.

    Integration and signing are one transaction (``checkpoint_create``), so
    this is exactly the size that roots and proofs can be answered for.
    """
    latest = LedgerCheckpoint.objects.order_by("-tree_size").values_list("tree_size", flat=True)
    return latest.first() or 0


# Any fixed 64-bit number; only checkpoint_create takes this advisory lock.
_INTEGRATOR_LOCK = 0x7265766965774C47  # "reviewLG"


def _integrator_lock() -> None:
    """Integrators (checkpoint tasks) take turns; appenders never wait on this.

    Two integrators at once would read the same checkpoint size and both store
    the same subtree hashes: the second waits here, then reads the first's
    checkpoint (a new statement, so a new snapshot under READ COMMITTED) and
    integrates only what came after. SQLite: the IMMEDIATE transaction already
    serialises them.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_INTEGRATOR_LOCK])


def _perfect_hashes(keys: Iterable[merkle.Perfect]) -> dict[merkle.Perfect, bytes]:
    """Fetch stored subtree hashes; raises LookupError naming one that is missing.

    Raw SQL: this runs on every append, and the ORM spends milliseconds
    building an OR of a dozen (level, index) pairs.
    """
    keys = set(keys)
    found: dict[merkle.Perfect, bytes] = {}
    leaves = sorted(index for level, index in keys if level == 0)
    nodes = sorted(key for key in keys if key[0])
    with connection.cursor() as cursor:
        if leaves:
            marks = ", ".join(["%s"] * len(leaves))
            cursor.execute(
                f"SELECT leaf_index, leaf_hash FROM {LedgerEntry._meta.db_table} "
                f"WHERE leaf_index IN ({marks})",
                leaves,
            )
            for index, h in cursor.fetchall():
                found[(0, index)] = bytes.fromhex(h)
        if nodes:
            where = " OR ".join(["(level = %s AND node_index = %s)"] * len(nodes))
            cursor.execute(
                f"SELECT level, node_index, hash FROM {LedgerNode._meta.db_table} WHERE {where}",
                [value for key in nodes for value in key],
            )
            for level, index, h in cursor.fetchall():
                found[(level, index)] = bytes.fromhex(h)
    missing = keys - found.keys()
    if missing:
        level, index = min(missing)
        raise LookupError(f"ledger subtree (level {level}, index {index}) is missing")
    return found


def _frontier(size: int) -> merkle.CompactRange:
    """The compact range of any size: stored subtrees up to the integrated tree, then the
    leaves after it (at most one checkpoint interval of them)."""
    base = min(size, integrated_size())
    compact = _compact_range(base)
    leaves = LedgerEntry.objects.filter(leaf_index__gte=base, leaf_index__lt=size)
    for leaf in leaves.order_by("leaf_index").values_list("leaf_hash", flat=True):
        compact.append(bytes.fromhex(leaf))
    return compact


def _compact_range(size: int) -> merkle.CompactRange:
    if size == 0:
        return merkle.CompactRange()
    cover = merkle.perfect_cover(0, size)
    hashes = _perfect_hashes(cover)
    return merkle.CompactRange(size, [hashes[key] for key in cover])


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


def _integrate(start: int) -> int:
    """Store the subtree hashes completed by the entries from ``start`` on; return the new size.

    ``start`` is the integrated size (every subtree below it stored). Reads
    committed entries only, which ``ledger_append`` keeps contiguous; a gap
    would stop the integration at it rather than build a tree with a hole.
    Idempotent: a subtree hash already stored (by a ledger appended before
    integration was deferred) is kept if equal, and refused if not.
    """
    compact = _compact_range(start)
    created: dict[tuple[int, int], str] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT leaf_index, leaf_hash FROM {LedgerEntry._meta.db_table} "
            "WHERE leaf_index >= %s ORDER BY leaf_index",
            [start],
        )
        while rows := cursor.fetchmany(5000):
            for index, leaf in rows:
                if index != compact.size:
                    break
                for level, node_index, h in compact.append(bytes.fromhex(leaf)):
                    created[(level, node_index)] = h.hex()
            else:
                continue
            break
    stored = _stored_nodes(created)
    for key, h in stored.items():
        if created[key] != h:
            level, index = key
            raise LookupError(
                f"ledger subtree (level {level}, index {index}) is stored with another hash "
                "than its entries give: run verify_ledger"
            )
    LedgerNode.objects.bulk_create(
        (
            LedgerNode(level=level, node_index=index, hash=h)
            for (level, index), h in created.items()
            if (level, index) not in stored
        ),
        batch_size=1000,
    )
    return compact.size


def _stored_nodes(keys: dict[tuple[int, int], str]) -> dict[tuple[int, int], str]:
    """The stored hashes among ``keys``: one range query per level (few, and indexed)."""
    found = {}
    for level in {level for level, _ in keys}:
        indexes = [index for lv, index in keys if lv == level]
        rows = LedgerNode.objects.filter(
            level=level, node_index__gte=min(indexes), node_index__lte=max(indexes)
        ).values_list("node_index", "hash")
        found.update(((level, index), h) for index, h in rows)
    return found


def decision_entry(decision: Decision) -> NewEntry:
    return NewEntry(
        "decision", decision.payload, decision.signature, decision.key_id, decision=decision
    )


def evidence_entry(evidence: Evidence) -> NewEntry:
    return NewEntry(
        "evidence", evidence.payload, evidence.signature, evidence.key_id, evidence=evidence
    )


# ── roots and proofs ─────────────────────────────────────────────────────────


def root_at(size: int) -> bytes:
    if size == 0:
        return merkle.EMPTY_ROOT
    return merkle.fold_range(0, size, _perfect_hashes(merkle.perfect_cover(0, size)))


def _fold_all(ranges: list[tuple[int, int]]) -> list[bytes]:
    hashes = _perfect_hashes(merkle.perfect_keys(ranges))
    return [merkle.fold_range(s, e, hashes) for s, e in ranges]


def _within_integrated(size: int) -> None:
    current = integrated_size()
    if size > current:
        raise merkle.ProofError(
            f"tree size {size} is beyond the ledger's integrated tree of {current} entries "
            "(entries appended since are integrated, and provable, at the next checkpoint)"
        )


def inclusion_proof(index: int, size: int) -> list[bytes]:
    """PATH(index, D[size]). Raises merkle.ProofError for an index or size out of range."""
    _within_integrated(size)
    return _fold_all(merkle.inclusion_ranges(index, size))


def consistency_proof(old: int, new: int) -> list[bytes]:
    _within_integrated(new)
    return _fold_all(merkle.consistency_ranges(old, new))


# ── checkpoints ──────────────────────────────────────────────────────────────


def checkpoint_create(*, only_if_grown: bool = False) -> LedgerCheckpoint | None:
    """Integrate the entries appended since the last checkpoint, and sign the new tree head.

    The integrator: one transaction, so a crash leaves either both the new
    subtree hashes and the checkpoint or neither, and the next run starts
    again from the last checkpoint. Appends go on meanwhile (this never takes
    their lock). With ``only_if_grown``, None if nothing was appended since.
    """
    signer = server_signer()
    origin = ledger_origin()
    with transaction.atomic():
        _integrator_lock()
        latest = LedgerCheckpoint.objects.order_by("-tree_size", "-id").first()
        size = _integrate(latest.tree_size if latest else 0)
        if only_if_grown and latest is not None and latest.tree_size == size:
            return None
        root = root_at(size)
        now = timezone.now().replace(microsecond=0)
        stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        checkpoint = merkle.Checkpoint(origin, size, root, (f"timestamp {stamp}",))
        note = merkle.sign_checkpoint(checkpoint, signer.public_key, signer.sign_bytes)
        row = LedgerCheckpoint.objects.create(
            origin=origin,
            tree_size=size,
            root_hash=root.hex(),
            timestamp=now,
            note=note,
            key_id=signer.key_id,
        )
        checkpoint_witness(checkpoint_id=row.pk, tree_size=size, note=note)
        return row


def latest_checkpoint() -> LedgerCheckpoint | None:
    return LedgerCheckpoint.objects.order_by("-tree_size", "-id").first()


def checkpoint_note_with_cosignatures(checkpoint: LedgerCheckpoint) -> str:
    """The signed note with every stored witness cosignature appended (C2SP tlog-cosignature).

    Verifiers that know none of the witnesses ignore the extra lines, as
    signed-note requires; the cosignatures are stored only once they verified. (``.all()``,
    in the model's order, so an export's prefetched rows serve it.)
    """
    return checkpoint.note + "".join(c.line + "\n" for c in checkpoint.cosignatures.all())


def checkpoint_json(checkpoint: LedgerCheckpoint) -> dict:
    cosignatures = checkpoint.cosignatures.all()
    return {
        "origin": checkpoint.origin,
        "tree_size": checkpoint.tree_size,
        "root_hash": checkpoint.root_hash,
        "timestamp": checkpoint.timestamp.isoformat(),
        "key_id": checkpoint.key_id,
        "checkpoint": checkpoint_note_with_cosignatures(checkpoint),
        "cosignatures": [
            {"witness": c.witness, "key_id": c.key_id, "timestamp": c.timestamp}
            for c in cosignatures
        ],
    }


# ── for pages and exports ────────────────────────────────────────────────────


def ledger_position_for_decision(decision: Decision) -> int | None:
    """The decision's leaf index in the ledger, or None if it is not in it."""
    return (
        LedgerEntry.objects.filter(decision_id=decision.pk)
        .values_list("leaf_index", flat=True)
        .first()
    )


@dataclass(frozen=True)
class DecisionLedgerStatus:
    """What the proposal page shows next to a decision."""

    position: int | None
    verified: bool
    checkpoint_size: int | None
    detail: str


def decision_ledger_status(decision: Decision) -> DecisionLedgerStatus:
    """Re-verify one decision: signature, leaf, and inclusion in the latest checkpoint."""
    entry = LedgerEntry.objects.filter(decision_id=decision.pk).first()
    if entry is None:
        return DecisionLedgerStatus(None, False, None, "not in the ledger")
    position = entry.leaf_index
    expected = merkle.entry_bytes("decision", decision.payload, decision.signature, decision.key_id)
    if entry.entry.encode() != expected or merkle.leaf_hash(expected).hex() != entry.leaf_hash:
        return DecisionLedgerStatus(position, False, None, "differs from its ledger entry")
    public_key = public_key_for(decision.key_id)
    if public_key is None:
        return DecisionLedgerStatus(position, False, None, untrusted_key_problem(decision.key_id))
    if not verify(decision.payload.encode(), _b64(decision.signature), public_key):
        return DecisionLedgerStatus(position, False, None, "signature does not verify")
    missing = _missing_evidence(decision)
    if missing:
        return DecisionLedgerStatus(
            position, False, None, f"its signed evidence from {missing} is not in the ledger"
        )
    checkpoint = latest_checkpoint()
    if checkpoint is None or checkpoint.tree_size <= position:
        return DecisionLedgerStatus(
            position, True, None, "signature verified; not yet covered by a checkpoint"
        )
    # Imported here: cosigning builds on this module.
    from .cosigning import cosigned_checkpoint_covering, witness_policy

    witnessed = ""
    if witness_policy() is not None:
        cosigned, problem = cosigned_checkpoint_covering(position)
        if cosigned is None:
            return DecisionLedgerStatus(
                position, False, checkpoint.tree_size, f"not in a witnessed checkpoint: {problem}"
            )
        checkpoint, witnessed = cosigned, ", cosigned by enough witnesses"
    try:
        signed = merkle.open_checkpoint(checkpoint.note, trusted_keys().values())
        proof = inclusion_proof(position, signed.size)
    except (merkle.NoteError, merkle.ProofError, LookupError) as exc:
        return DecisionLedgerStatus(position, False, checkpoint.tree_size, f"checkpoint: {exc}")
    if not merkle.verify_inclusion(
        position, signed.size, bytes.fromhex(entry.leaf_hash), proof, signed.root
    ):
        return DecisionLedgerStatus(
            position, False, signed.size, "not included in the latest checkpoint"
        )
    return DecisionLedgerStatus(
        position,
        True,
        signed.size,
        f"signature and inclusion in checkpoint {signed.size}{witnessed} verified",
    )


def _missing_evidence(decision: Decision) -> str | None:
    """The checker of the first piece of evidence the decision signed that the ledger lacks."""
    bound = bound_evidence(json.loads(decision.payload).get("evidence")) or ()
    if not bound:
        return None
    entries = LedgerEntry.objects.filter(
        kind=LedgerEntry.Kind.EVIDENCE, evidence__proposal_id=decision.proposal_id
    ).values_list("entry", flat=True)
    present = {sha256_hex(json.loads(text)["payload"].encode()) for text in entries}
    return next((checker for checker, digest in bound if digest not in present), None)


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return b""


def entry_json(entry: LedgerEntry) -> dict:
    """An entry as exported and served: everything needed to recompute its leaf."""
    fields = json.loads(entry.entry)
    return {
        "index": entry.leaf_index,
        "kind": fields["kind"],
        "payload": fields["payload"],
        "signature": fields["signature"],
        "key_id": fields["key_id"],
        "leaf_hash": entry.leaf_hash,
    }


def _line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def export_lines(after: int | None = None) -> Iterator[str]:
    """The ledger as JSONL, streamed: a header, every entry in order, the checkpoints.

    ``after`` (a leaf index) exports only later entries; the header then
    carries the compact range (perfect-subtree hashes) of the entries before,
    so the verifier can still recompute every root and check the checkpoints.
    A checkpoint line follows the entry that completes its tree size.
    """
    start = 0 if after is None else max(0, after + 1)
    size = tree_size()
    start = min(start, size)
    header = {
        "format": EXPORT_FORMAT,
        "origin": ledger_origin(),
        "start": start,
        "tree_size": size,
        "frontier": [h.hex() for h in _frontier(start).hashes],
        # Informational: a verifier takes its keys from its own trust anchors, never from here.
        "keys": [
            {"key_id": key_id, "public_key": base64.b64encode(public_key).decode()}
            for key_id, public_key in sorted(trusted_keys().items())
        ],
    }
    yield _line(header)
    checkpoints: dict[int, list[LedgerCheckpoint]] = {}
    for cp in (
        LedgerCheckpoint.objects.filter(tree_size__gte=start, tree_size__lte=size)
        .prefetch_related("cosignatures")
        .order_by("tree_size", "id")
    ):
        checkpoints.setdefault(cp.tree_size, []).append(cp)

    def checkpoint_lines(at: int) -> Iterator[str]:
        for cp in checkpoints.get(at, []):
            note = checkpoint_note_with_cosignatures(cp)
            yield _line({"tree_size": cp.tree_size, "checkpoint": note})

    yield from checkpoint_lines(start)
    entries = LedgerEntry.objects.filter(leaf_index__gte=start, leaf_index__lt=size).order_by(
        "leaf_index"
    )
    for entry in entries.iterator(chunk_size=2000):
        yield _line(entry_json(entry))
        yield from checkpoint_lines(entry.leaf_index + 1)
