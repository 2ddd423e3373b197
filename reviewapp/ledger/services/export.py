"""The ledger as served and exported: its entries, and the JSONL export."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

from reviewapp.review.keys import trusted_keys
from reviewapp.review.models import Decision, Review

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


def review_json(review: Review) -> dict:
    """A review as exported: its signed bytes, and the columns that restate them."""
    return {
        "reviewer": review.reviewer_name,
        "outcome": review.outcome,
        "payload": review.payload,
        "signature": review.signature,
        "key_id": review.key_id,
    }


def _names_reviews(payload: str) -> bool:
    # Most decisions rest on no reviews: only those that might are parsed.
    return '"reviews":' in payload and isinstance(json.loads(payload).get("reviews"), list)


def _entry_lines(
    entries: Iterator[LedgerEntry], chunk: int = 2000
) -> Iterator[tuple[LedgerEntry | None, str]]:
    """``(entry, its line)``, a decision resting on reviews preceded by ``(None, line)`` for
    each review of its escalation, as stored (read once per chunk of entries). What was
    changed or removed is exported as it is now: finding it is the verifier's job."""
    batch: list[tuple[LedgerEntry, dict, bool]] = []

    def flush() -> Iterator[tuple[LedgerEntry | None, str]]:
        wanted = [entry.decision_id for entry, _, named in batch if named]
        escalation_of = dict(
            Decision.objects.filter(pk__in=wanted).values_list("pk", "escalation_id")
        )
        reviews: dict[int, list[Review]] = {}
        for review in Review.objects.filter(escalation_id__in=set(escalation_of.values())).order_by(
            "id"
        ):
            reviews.setdefault(review.escalation_id, []).append(review)
        for entry, obj, named in batch:
            if named:
                for review in reviews.get(escalation_of.get(entry.decision_id), []):
                    yield None, _line({"review": review_json(review)})
            yield entry, _line(obj)
        batch.clear()

    for entry in entries:
        obj = entry_json(entry)
        batch.append((entry, obj, obj["kind"] == "decision" and _names_reviews(obj["payload"])))
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
