"""`verify_ledger`: recompute the whole ledger from the database and trust nothing stored.

Checks, in ledger order, and stops at the first problem, naming the entry:

- every entry's signature (with the registered public keys), its leaf hash and
  its canonical encoding — via the offline verifier's own code
  (``reviewapp.verify``), so the server and an outside auditor agree;
- that the decision or evidence row it records still says what was signed
  (payload, signature, key, and the readable columns: outcome, basis,
  rationale, decided by, proposal; checker, version, verdict, reason);
- the decision hash chain, in ledger order;
- every stored subtree hash, recomputed from the entries below it;
- every checkpoint: its signature, and its root against the recomputed tree
  at its size;

then that every decision and piece of evidence is in the ledger at all.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
from dataclasses import dataclass, field

from reviewapp import verify as offline
from reviewapp.core import merkle
from reviewapp.review.models import Decision, Evidence, SigningKey

from . import immutability
from .models import LedgerCheckpoint, LedgerEntry, LedgerNode

ENTRY_FIELDS = (
    "leaf_index",
    "kind",
    "entry",
    "leaf_hash",
    "decision_id",
    "evidence_id",
    "decision__payload",
    "decision__signature",
    "decision__key_id",
    "decision__outcome",
    "decision__basis",
    "decision__rationale",
    "decision__decided_by_name",
    "decision__proposal_id",
    "decision__prev_hash",
    "decision__hash",
    "evidence__payload",
    "evidence__signature",
    "evidence__key_id",
    "evidence__checker_name",
    "evidence__checker_version",
    "evidence__verdict",
    "evidence__reason",
)


@dataclass
class LedgerVerification:
    entries: int = 0
    decisions: int = 0
    evidence: int = 0
    checkpoints: int = 0
    problem: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.problem is None


def registered_keys() -> dict[str, bytes]:
    return {
        key_id: base64.b64decode(public_key)
        for key_id, public_key in SigningKey.objects.values_list("key_id", "public_key")
    }


def _entry_fields(text: str) -> tuple[str, str, str, str] | None:
    try:
        fields = json.loads(text)
        item = tuple(fields[k] for k in ("kind", "payload", "signature", "key_id"))
    except (ValueError, KeyError, TypeError):
        return None
    if fields.keys() != {"kind", "payload", "signature", "key_id"} or not all(
        isinstance(v, str) for v in item
    ):
        return None
    return item


def _row_problem(row: dict, item: tuple[str, str, str, str], facts: dict) -> str | None:
    """How the decision/evidence row differs from what its ledger entry signed, if it does."""
    kind, payload, signature, key_id = item
    if row["kind"] != kind:
        return f"stored kind {row['kind']!r} differs from the entry's {kind!r}"
    prefix = "decision" if kind == "decision" else "evidence"
    if row[f"{prefix}_id"] is None:
        return f"the {prefix} row this entry records is gone"
    differs = [
        name
        for name, value in (("payload", payload), ("signature", signature), ("key_id", key_id))
        if row[f"{prefix}__{name}"] != value
    ]
    if differs:
        return f"{prefix} {row[f'{prefix}_id']} differs from its ledger entry in {', '.join(differs)}"
    if kind == "decision":
        columns = (
            ("outcome", row["decision__outcome"], facts["outcome"]),
            ("basis", row["decision__basis"], facts["basis"]),
            ("rationale", row["decision__rationale"], facts["rationale"]),
            ("decided_by", row["decision__decided_by_name"], facts["decided_by"]),
            ("proposal", row["decision__proposal_id"], facts["proposal"]),
            ("prev_hash", row["decision__prev_hash"], facts["prev_hash"]),
            ("hash", row["decision__hash"], facts["hash"]),
        )
    else:
        columns = (
            ("checker", row["evidence__checker_name"], facts["checker"]),
            ("version", row["evidence__checker_version"], facts["version"]),
            ("verdict", row["evidence__verdict"], facts["verdict"]),
            ("reason", row["evidence__reason"], facts["reason"]),
        )
    mismatched = [name for name, stored, signed in columns if stored != signed]
    if mismatched:
        return (
            f"{prefix} {row[f'{prefix}_id']} differs from its signed bytes in "
            f"{', '.join(mismatched)}"
        )
    return None


def _label(row: dict, checked: offline.Checked | None) -> str:
    label = f"ledger entry {row['leaf_index']}"
    if row["kind"] == "decision" and row["decision_id"] is not None:
        label += f" (decision {row['decision_id']}, proposal {row['decision__proposal_id']})"
    elif row["kind"] == "evidence" and row["evidence_id"] is not None:
        label += f" (evidence {row['evidence_id']}, checker {row['evidence__checker_name']})"
    return label


def ledger_verify(*, workers: int | None = None) -> LedgerVerification:
    """Verify everything; ``result.problem`` names the first bad record, or is None."""
    result = LedgerVerification()
    try:
        _verify(result, workers)
    except offline.Failure as failure:
        result.problem = str(failure)
    return result


def _verify(result: LedgerVerification, workers: int | None) -> None:
    keys = registered_keys()
    verifier = offline.LedgerVerifier(keys)

    pending: dict[int, list[tuple[str, merkle.Checkpoint]]] = {}
    for cp in LedgerCheckpoint.objects.order_by("tree_size", "id"):
        where = f"checkpoint {cp.pk} (size {cp.tree_size})"
        signed = verifier.open_checkpoint(where, cp.note)
        if (signed.origin, signed.size, signed.root_hex) != (cp.origin, cp.tree_size, cp.root_hash):
            raise offline.Failure(where, "the row differs from its signed note")
        pending.setdefault(signed.size, []).append((where, signed))

    def settle() -> None:
        for where, signed in pending.pop(verifier.size, []):
            verifier.check_root(where, signed)

    settle()
    stored_nodes = {
        (level, index): h
        for level, index, h in LedgerNode.objects.values_list("level", "node_index", "hash")
    }
    total = LedgerEntry.objects.count()
    if workers is None:
        workers = min(2, multiprocessing.cpu_count()) if total >= offline.PARALLEL_THRESHOLD else 1

    def records():
        rows = LedgerEntry.objects.order_by("leaf_index").values(*ENTRY_FIELDS)
        for row in rows.iterator(chunk_size=2000):
            yield row, _entry_fields(row["entry"])

    seen_nodes = 0
    for row, checked in offline.checked_in_order(records(), keys, workers=workers):
        where = _label(row, checked)
        if checked is None:
            raise offline.Failure(where, "stored entry is not {kind, payload, signature, key_id}")
        created = verifier.entry(
            where, row["leaf_index"], row["kind"], row["leaf_hash"], checked
        )
        if merkle.leaf_hash(row["entry"].encode()) != checked.leaf:
            raise offline.Failure(where, "stored entry is not in canonical form")
        item = _entry_fields(row["entry"])
        problem = _row_problem(row, item, checked.facts)
        if problem:
            raise offline.Failure(where, problem)
        for level, index, h in created:
            stored = stored_nodes.get((level, index))
            if stored != h.hex():
                first, last = index << level, ((index + 1) << level) - 1
                state = "is missing" if stored is None else "does not match them"
                raise offline.Failure(
                    where,
                    f"entries {first}–{last} were changed, reordered or removed: "
                    f"their stored subtree hash (level {level}, index {index}) {state}",
                )
            seen_nodes += 1
        settle()

    result.entries = verifier.size
    result.decisions, result.evidence = verifier.decisions, verifier.evidence
    for size, waiting in sorted(pending.items()):
        where, _ = waiting[0]
        raise offline.Failure(
            where, f"signed for size {size}, but the ledger holds only {verifier.size} entries"
        )
    result.checkpoints = verifier.checkpoints
    if len(stored_nodes) != seen_nodes:
        level, index = min(set(stored_nodes) - _all_nodes(verifier.size))
        first, last = index << level, ((index + 1) << level) - 1
        raise offline.Failure(
            f"ledger entries {first}–{last}",
            f"entries were removed from the end: their subtree hash (level {level}, index {index}) "
            f"is stored, but the ledger ends with entry {verifier.size - 1}",
        )
    missing = Decision.objects.filter(ledger_entry__isnull=True).order_by("id").first()
    if missing is not None:
        raise offline.Failure(
            f"decision {missing.pk} (proposal {missing.proposal_id})", "is not in the ledger"
        )
    missing = Evidence.objects.filter(ledger_entry__isnull=True).order_by("id").first()
    if missing is not None:
        raise offline.Failure(
            f"evidence {missing.pk} (checker {missing.checker_name})", "is not in the ledger"
        )
    _warnings(result)


def _all_nodes(size: int) -> set[tuple[int, int]]:
    nodes = set()
    level = 1
    while (1 << level) <= size:
        nodes.update((level, i) for i in range(size >> level))
        level += 1
    return nodes


def _warnings(result: LedgerVerification) -> None:
    from django.db import connection

    latest = LedgerCheckpoint.objects.order_by("-tree_size").values_list("tree_size", flat=True)
    latest = latest.first()
    if latest is None:
        result.warnings.append("no checkpoint has been signed yet (run `manage.py ledger_checkpoint`)")
    elif latest < result.entries:
        result.warnings.append(
            f"{result.entries - latest} entries are not yet covered by a signed checkpoint"
        )
    missing = immutability.missing_triggers(connection)
    if missing:
        result.warnings.append(
            "append-only triggers are missing or disabled on: " + ", ".join(missing)
        )
