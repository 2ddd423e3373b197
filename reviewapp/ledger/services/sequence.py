"""The sequencer: committed entries take the next leaf indexes, a batch per short transaction.

Appenders store entries with no index (``append``), in their own
transactions, and take no lock. The sequencer then gives every committed
entry still without one the next contiguous indexes, in ascending id order
(so an entry follows every entry of its own transaction stored before it,
and a decision its evidence), in one statement under its own lock. It is
woken right after each appending transaction commits (``sequence_after_commit``,
in the committing process), and on a timer (the ``ledger_sequence`` task), which
picks up what a process killed after its commit left.

The database keeps the log honest: ``leaf_index`` is unique, and the
append-only trigger lets an entry's index be set once, from NULL, and nothing
else of it change, so no entry is sequenced twice. Indexes are MAX + 1 under
the lock, never from a sequence: a sequencer that dies mid-batch rolls back
and leaves no gap.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Min
from django.utils import timezone

from ..models import LedgerEntry

logger = logging.getLogger(__name__)

# How many entries one sequencing transaction indexes at most.
BATCH = 2000
# Any fixed 64-bit number; only the sequencer takes this advisory lock.
_SEQUENCER_LOCK = 0x7265766965775351  # "reviewSQ"

_TABLE = LedgerEntry._meta.db_table
# One statement: the next index after the lock (a new statement, so under READ
# COMMITTED it sees the last batch's commit), and the batch numbered in id order.
_SEQUENCE_SQL = (
    f"WITH base AS (SELECT COALESCE(MAX(leaf_index), -1) + 1 AS n FROM {_TABLE}), "
    "batch AS (SELECT id, ROW_NUMBER() OVER (ORDER BY id) - 1 AS ord FROM "
    f"(SELECT id FROM {_TABLE} WHERE leaf_index IS NULL ORDER BY id LIMIT %s) AS waiting) "
    f"UPDATE {_TABLE} SET leaf_index = base.n + batch.ord, sequenced_at = %s "
    f"FROM base, batch WHERE {_TABLE}.id = batch.id RETURNING 1"
)


# (wait, session) → the advisory lock function.
_LOCK_FUNCTIONS = {
    (True, False): "pg_advisory_xact_lock",
    (False, False): "pg_try_advisory_xact_lock",
    (True, True): "pg_advisory_lock",
    (False, True): "pg_try_advisory_lock",
}


def _lock(*, wait: bool = True, session: bool = False) -> bool:
    """Sequencers take turns (SQLite: the IMMEDIATE transaction already serialises them).

    An advisory lock, not a row: it writes nothing, so a sequencer that finds
    nothing to do commits without a WAL flush. Held to the end of the
    transaction, or with ``session`` until ``_unlock`` (the two kinds exclude
    each other). Without ``wait``, False at once if another sequencer holds it.
    """
    if connection.vendor != "postgresql":
        return True
    function = _LOCK_FUNCTIONS[(wait, session)]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [_SEQUENCER_LOCK])
        return wait or cursor.fetchone()[0]


def _unlock() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [_SEQUENCER_LOCK])


def _number(limit: int) -> int:
    now = connection.ops.adapt_datetimefield_value(timezone.now())  # once it holds the lock
    with connection.cursor() as cursor:
        cursor.execute(_SEQUENCE_SQL, [limit, now])
        return len(cursor.fetchall())  # (SQLite's rowcount is -1 after a WITH)


def ledger_sequence_batch(*, limit: int = BATCH, wait: bool = True) -> int | None:
    """Give up to ``limit`` committed entries their indexes, in one transaction; how many.

    None, without ``wait``, when another sequencer holds the lock.

    Outside any transaction on PostgreSQL (after a commit, the timer), the lock is
    the session's and the batch's statement commits by itself under it: a turn
    that finds the lock held costs one statement instead of three (BEGIN, the
    try, COMMIT), a turn that takes it three instead of four. Inside one, the
    transaction's. Either way the batch's statement starts after the lock is
    granted, so it sees every earlier batch committed.
    """
    if connection.vendor == "postgresql" and connection.get_autocommit():
        if not _lock(wait=wait, session=True):
            return None
        try:
            return _number(limit)
        finally:
            _unlock()  # (a connection lost on the way took the lock with it)
    with transaction.atomic():
        if not _lock(wait=wait):
            return None
        return _number(limit)


def ledger_sequence(*, limit: int = BATCH) -> int:
    """Sequence every committed entry waiting for its index, batch after batch; how many."""
    total = 0
    while True:
        done = ledger_sequence_batch(limit=limit)
        total += done
        if done < limit:
            return total


def _waiting() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {_TABLE} WHERE leaf_index IS NULL)")
        return cursor.fetchone()[0]


# How many batches a process sequences after its own commit, at most.
AFTER_COMMIT_ROUNDS = 4


def _sequence_committed() -> None:
    """After a commit: sequence what waits, unless another sequencer holds the lock.

    Then that one covers this commit: each sequencer, once it has let go, looks
    again (a new snapshot, after every commit that found the lock held) and
    sequences what waits. Appenders never queue on the lock, so batches grow
    with the load. After a few rounds a process goes back to its own work; what
    still waits then is taken by the next commit's sequencer, or by the timer.
    """
    try:
        for _ in range(AFTER_COMMIT_ROUNDS):
            done = ledger_sequence_batch(wait=False)
            if done is None or (done < BATCH and not _waiting()):
                return
    except Exception:  # the timer sequences what this missed; the commit stands
        logger.exception("sequencing the ledger after a commit failed")


def sequence_after_commit() -> None:
    """Wake the sequencer when the current transaction commits (once per transaction)."""
    pending = getattr(connection, "run_on_commit", ())
    if any(func is _sequence_committed for _, func, _ in pending):
        return
    transaction.on_commit(_sequence_committed)


@dataclass(frozen=True)
class SequencerBacklog:
    waiting: int
    oldest: datetime | None
    bound_seconds: float

    @property
    def late(self) -> bool:
        """An entry has waited for its index longer than the bound: the sequencer is stuck."""
        return self.oldest is not None and timezone.now() - self.oldest > timedelta(
            seconds=self.bound_seconds
        )

    @property
    def alert(self) -> str:
        if not self.late:
            return ""
        waited = (timezone.now() - self.oldest).total_seconds()
        return (
            f"{self.waiting} ledger entries wait for their index, the oldest for {waited:.0f}s "
            f"(more than REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS, {self.bound_seconds:.0f}s): "
            "is a worker with its scheduler (beat) running? `manage.py ledger_checkpoint` "
            "sequences them too"
        )


def sequencer_backlog() -> SequencerBacklog:
    """The committed entries still without an index (an indexed scan: they are few)."""
    waiting = LedgerEntry.objects.filter(leaf_index__isnull=True).aggregate(
        count=Count("id"), oldest=Min("created_at")
    )
    return SequencerBacklog(
        waiting["count"], waiting["oldest"], settings.REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS
    )


def ledger_gap_problem() -> str | None:
    """Whether the sequenced entries are 0 … n-1 with none missing (a deleted entry, with
    its record, leaves a gap: no other row remembers a decision signed alone)."""
    sequenced = LedgerEntry.objects.filter(leaf_index__isnull=False)
    counts = sequenced.aggregate(count=Count("id"), last=Max("leaf_index"))
    if counts["last"] is None or counts["count"] == counts["last"] + 1:
        return None
    indexes = sequenced.order_by("leaf_index").values_list("leaf_index", flat=True)
    missing = next(i for i, index in enumerate(indexes.iterator()) if i != index)
    return f"ledger entry {missing} is missing: entries were deleted"
