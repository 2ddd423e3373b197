"""The ledger as served and exported: its entries, and the JSONL export."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator

from ..keys import trusted_keys
from ..models import LedgerCheckpoint, LedgerEntry
from .append import tree_size
from .checkpoints import checkpoint_note_with_cosignatures, ledger_origin
from .tree import frontier

# 2: each review a decision names travels on a line of its own before the decision.
EXPORT_FORMAT = "reviewapp.ledger-export/2"
MAX_PAGE = 1000


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


# Who gives the lines that travel before an entry: the app owning its kind's records
# registers one (review: the reviews a decision rests on; ``register_export_companions``).
_companion_providers: list[Callable[[list[LedgerEntry]], dict[int, list[dict]]]] = []


def register_export_companions(
    provider: Callable[[list[LedgerEntry]], dict[int, list[dict]]],
) -> None:
    """``provider(entries)`` answers, for a chunk of entries, the objects exported on lines
    of their own before each one, by entry id (the records an entry's payload names but
    the log does not hold)."""
    if provider not in _companion_providers:
        _companion_providers.append(provider)


def _entry_lines(
    entries: Iterator[LedgerEntry], chunk: int = 2000
) -> Iterator[tuple[LedgerEntry | None, str]]:
    """``(entry, its line)``, each preceded by ``(None, line)`` for each of its companions
    (asked for once per chunk of entries)."""
    batch: list[LedgerEntry] = []

    def flush() -> Iterator[tuple[LedgerEntry | None, str]]:
        companions: dict[int, list[dict]] = {}
        for provider in _companion_providers:
            for entry_id, objs in provider(batch).items():
                companions.setdefault(entry_id, []).extend(objs)
        for entry in batch:
            for obj in companions.get(entry.pk, ()):
                yield None, _line(obj)
            yield entry, _line(entry_json(entry))
        batch.clear()

    for entry in entries:
        batch.append(entry)
        if len(batch) >= chunk:
            yield from flush()
    yield from flush()


def _line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def export_lines(
    after: int | None = None, *, through: LedgerCheckpoint | None = None
) -> Iterator[str]:
    """The ledger as JSONL, streamed: a header, every entry in order, the checkpoints
    (`through`: none newer than that one, e.g. the latest the witnesses cosigned).

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
        "frontier": [h.hex() for h in frontier(start).hashes],
        # Informational: a verifier takes its keys from its own trust anchors, never from here.
        "keys": [
            {"key_id": key_id, "public_key": base64.b64encode(public_key).decode()}
            for key_id, public_key in sorted(trusted_keys().items())
        ],
    }
    yield _line(header)
    checkpoints: dict[int, list[LedgerCheckpoint]] = {}
    last = size if through is None else min(size, through.tree_size)
    for cp in (
        LedgerCheckpoint.objects.filter(tree_size__gte=start, tree_size__lte=last)
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
    entries = entries.iterator(chunk_size=2000)
    for entry, line in _entry_lines(entries):
        yield line
        if entry is not None:
            yield from checkpoint_lines(entry.leaf_index + 1)
