"""The tree: integrating sequenced entries into stored subtrees, and roots and proofs
over what was integrated.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from reviewapp.core import merkle

from ..models import LedgerCheckpoint, LedgerEntry, LedgerNode


def integrated_size() -> int:
    """The size of the tree whose subtree hashes are all stored: the latest checkpoint's.

    Integration and signing are one transaction (``checkpoint_create``), so
    this is exactly the size that roots and proofs can be answered for.
    """
    latest = LedgerCheckpoint.objects.order_by("-tree_size").values_list("tree_size", flat=True)
    return latest.first() or 0


# Any fixed 64-bit number; only checkpoint_create takes this advisory lock.
_INTEGRATOR_LOCK = 0x7265766965774C47  # "reviewLG"


def integrator_lock() -> None:
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


def frontier(size: int) -> merkle.CompactRange:
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


def integrate(start: int) -> int:
    """Store the subtree hashes completed by the entries from ``start`` on; return the new size.

    ``start`` is the integrated size (every subtree below it stored). Reads
    committed, sequenced entries only, which the sequencer keeps contiguous; a
    gap would stop the integration at it rather than build a tree with a hole.
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
