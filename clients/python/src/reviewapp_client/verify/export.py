"""Verifying a whole file: a ledger export, or decisions as the REST API serves them.

Large inputs are checked in worker processes (signatures cost ~60 µs each);
the order-dependent checks (indexes, chain, tree, checkpoints) stay in the
main process, so the first bad line reported is the same either way.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import merkle
from .cosignature import WitnessPolicy, note_policy_check
from .files import BadLine, json_lines, read_checkpoint_file, read_proofs, read_witness_file
from .ledger import (
    ENTRY_KEYS,
    GENESIS_HASH,
    PARALLEL_THRESHOLD,
    Checked,
    Failure,
    LedgerVerifier,
    carried_fields_problem,
    check_entry,
    check_review_object,
    entry_where,
    loads,
    ordered_map,
)
from .signing import key_id_for

EXPORT_FORMAT = "reviewapp.ledger-export/2"
# Format 1 predates the review lines: the reviews its decisions name are not in it.
FORMAT_WITHOUT_REVIEWS = "reviewapp.ledger-export/1"
NOT_AN_ENTRY = "neither a ledger entry (index, kind, payload, signature, key_id) nor a checkpoint"


def check_export_lines(
    batch: list[str], keys: Mapping[str, bytes]
) -> list[tuple[str, Any, Any, Any]]:
    """Parse and check raw export lines: ``(what, a, b, c)`` per line.

    ``("bad", problem, -, -)``, ``("checkpoint", note, -, -)``,
    ``("entry", (index, kind, stored leaf hash), Checked, -)`` or
    ``("review", (SHA-256, reviewer), ReviewFacts, problem)``.
    """
    results = []
    for line in batch:
        try:
            obj = loads(line)
        except ValueError as exc:
            results.append(("bad", f"not JSON ({exc})", None, None))
            continue
        if not isinstance(obj, dict):
            results.append(("bad", "not a JSON object", None, None))
            continue
        if "checkpoint" in obj:
            results.append(("checkpoint", obj["checkpoint"], None, None))
            continue
        if "review" in obj:
            review = obj["review"]
            digest, facts, problem = check_review_object(review, keys)
            who = review.get("reviewer") if isinstance(review, dict) else None
            results.append(("review", (digest, who), facts, problem))
            continue
        item = tuple(obj.get(k) for k in ENTRY_KEYS)
        if obj.get("kind") not in merkle.ENTRY_KINDS or not all(isinstance(v, str) for v in item):
            results.append(("bad", NOT_AN_ENTRY, None, None))
            continue
        checked, _ = check_entry(*item, keys)
        results.append(("entry", (obj.get("index"), item[0], obj.get("leaf_hash")), checked, None))
    return results


@dataclass
class Report:
    kind: str
    lines: int = 0
    entries: int = 0
    decisions: int = 0
    # Of the decisions, those signed as a review deadline's fallback: no person made them.
    fallbacks: int = 0
    evidence: int = 0
    reviews: int = 0
    checkpoints: int = 0
    root: str | None = None
    # The witness policy's verdict: "checkpoint for size 6 cosigned by w1, w2 (witness quorum …)"
    witnessed: str | None = None
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.kind == "ledger":
            text = (
                f"OK: {self.entries} ledger entries ({self.decisions} decisions, "
                f"{self.evidence} evidence): signatures, leaf hashes, each decision once and "
                f"the v1 decisions' chain verified; {self.checkpoints} signed checkpoint(s) "
                "match the recomputed tree"
            )
            if self.root:
                text += f"; root at size {self.entries} is {self.root}"
        else:
            text = (
                f"OK: {self.decisions} decisions: signatures, hashes, each decision once and "
                "the v1 decisions' chain verified"
            )
            if self.checkpoints:
                text += "; every decision's inclusion in the checkpoint verified"
        if self.fallbacks:
            text += (
                f"; {self.fallbacks} of the decisions are fallbacks, signed by the server when "
                "a review deadline passed: no person made them"
            )
        if self.reviews:
            text += f"; {self.reviews} reviews the decisions name verified"
        if self.witnessed:
            text += f"; {self.witnessed}"
        return text


def witness_verdict(policy: WitnessPolicy, size: int, notes: list[tuple[str, str]]) -> str:
    """Hold the checkpoint for ``size`` to ``policy``: one of its ``notes`` (``(where, note)``,
    each opened already) must meet it. Returns what the report says; raises Failure naming
    the witnesses missing (from the note cosigned by the most)."""
    results = [(where, note_policy_check(policy, note)) for where, note in notes]
    for _, result in results:
        if result.ok:
            return (
                f"checkpoint for size {size} cosigned by {', '.join(result.cosigned) or 'none'} "
                f"(witness quorum {policy.quorum} of {len(policy.witnesses)})"
            )
    where, result = max(results, key=lambda item: len(item[1].cosigned))
    raise Failure(where, f"checkpoint for size {size}: {result.problem()}")


def verify_export(
    lines: Iterator[tuple[int, str]],
    keys: Mapping[str, bytes],
    *,
    first: tuple[int, Any],
    extra_checkpoints: Iterable[tuple[str, str]] = (),
    witnessed: Iterable[tuple[str, str]] = (),
    require_checkpoint: bool = True,
    witness_policy: WitnessPolicy | None = None,
    workers: int = 1,
) -> Report:
    """A ledger export: header, entries in order, checkpoint lines (raw lines after the first).

    ``witnessed`` checkpoints (a witness log) are checked like ``extra_checkpoints``,
    except that those before a partial export's start are skipped. Without any
    checkpoint at all the export fails, unless ``require_checkpoint`` is false.
    With a ``witness_policy``, the newest checkpoint (the largest tree size; of
    several at that size, any one) must carry enough cosignatures: older ones
    may predate the witnesses, and a consistent newer one vouches for them.
    """
    report = Report("ledger")
    number, header = first
    start = 0
    rest: Iterable[tuple[int, str]] = lines
    if isinstance(header, dict) and header.get("format") is not None:
        if header.get("format") not in (EXPORT_FORMAT, FORMAT_WITHOUT_REVIEWS):
            raise Failure(f"line {number}", f"unknown export format {header.get('format')!r}")
        start = header.get("start", 0)
        try:
            frontier = [bytes.fromhex(h) for h in header.get("frontier", [])]
            verifier = LedgerVerifier(keys, start=start, frontier=frontier)
        except (ValueError, TypeError) as exc:
            raise Failure(f"line {number}", f"unusable header ({exc})") from exc
        verifier.reviews_optional = header.get("format") == FORMAT_WITHOUT_REVIEWS
    else:
        verifier = LedgerVerifier(keys)
        rest = _chain([(number, json.dumps(header))], lines)

    pending: dict[int, list[tuple[str, merkle.Checkpoint]]] = {}
    newest: tuple[int, list[tuple[str, str]]] = (-1, [])  # size, (where, note) at that size

    def expect(where: str, checkpoint: merkle.Checkpoint, note: str) -> None:
        nonlocal newest
        if checkpoint.size > newest[0]:
            newest = (checkpoint.size, [])
        if checkpoint.size == newest[0]:
            newest[1].append((where, note))
        if checkpoint.size < verifier.size or checkpoint.size < start:
            raise Failure(
                where,
                f"checkpoint for size {checkpoint.size} comes after entry {verifier.size - 1}; "
                "it can only be checked where the tree has that size",
            )
        pending.setdefault(checkpoint.size, []).append((where, checkpoint))

    def settle() -> None:
        for where, checkpoint in pending.pop(verifier.size, []):
            verifier.check_root(where, checkpoint)

    for where, note in extra_checkpoints:
        expect(where, verifier.open_checkpoint(where, note), note)
    skipped = 0
    for where, note in witnessed:
        checkpoint = verifier.open_checkpoint(where, note)
        if checkpoint.size < start:
            skipped += 1
            continue
        expect(where, checkpoint, note)
    settle()

    records = ((n, line) for n, line in rest if line.strip())
    for number, (what, a, checked, review_problem) in ordered_map(
        check_export_lines, records, keys, workers=workers
    ):
        report.lines += 1
        if what == "bad":
            raise Failure(f"line {number}", a)
        if what == "checkpoint":
            where = f"line {number} (checkpoint)"
            expect(where, verifier.open_checkpoint(where, a), a)
            settle()
            continue
        if what == "review":
            digest, who = a
            where = f"line {number} (review{f' by {who}' if who else ''})"
            verifier.review(where, digest, checked, review_problem)
            continue
        index, kind, leaf_hex = a
        verifier.entry(
            entry_where(f"line {number}", index, checked), index, kind, leaf_hex, checked
        )
        settle()
    for size, waiting in sorted(pending.items()):
        where, _ = waiting[0]
        raise Failure(
            where, f"checkpoint for size {size}, but the export ends at size {verifier.size}"
        )
    report.entries = verifier.size
    report.decisions, report.evidence = verifier.decisions, verifier.evidence
    report.fallbacks = verifier.fallbacks
    report.reviews = verifier.reviews
    report.checkpoints = verifier.checkpoints
    report.root = verifier.compact.root().hex()
    if verifier.reviews_unseen:
        report.warnings.append(
            f"{verifier.reviews_unseen} review(s) named by decisions are not in this "
            f"{FORMAT_WITHOUT_REVIEWS} export: not checked (export again to include them)"
        )
    if start:
        report.warnings.append(
            f"partial export from entry {start}: entries before it were not checked, and the "
            "first decision's link to its predecessor was taken on trust"
        )
    if skipped:
        report.warnings.append(
            f"{skipped} witnessed checkpoint(s) precede the partial export's start: not checked"
        )
    if evidence_unseen := verifier.evidence_unseen:
        report.warnings.append(
            f"{evidence_unseen} evidence digest(s) signed into decisions point before the "
            "partial export's start: not checked"
        )
    if not report.checkpoints:
        if require_checkpoint:
            raise Failure(
                "export",
                "carries no signed checkpoint, so nothing proves it is complete (pass "
                "--checkpoint or --witness, or --no-checkpoint to check the entries alone)",
            )
        report.warnings.append(
            "no signed checkpoint: the entries verify, but nothing proves the export is complete"
        )
    if witness_policy is not None:
        if not newest[1]:
            raise Failure("export", "carries no checkpoint to hold to the witness policy")
        report.witnessed = witness_verdict(witness_policy, *newest)
        if verifier.size > newest[0]:
            report.warnings.append(
                f"entries {newest[0]}–{verifier.size - 1} come after the cosigned checkpoint: "
                "no witness vouches for them yet"
            )
    return report


def _chain(first: list, rest: Iterable) -> Iterator:
    yield from first
    yield from rest


DECISION_FIELDS = ("payload", "signature", "key_id", "hash")


def check_api_decisions(
    batch: list[Any], keys: Mapping[str, bytes]
) -> list[tuple[Checked | None, str | None]]:
    """Each decision object's signature, hash and readable fields: ``(Checked, problem)``."""
    results = []
    for obj in batch:
        if isinstance(obj, BadLine):
            results.append((None, obj.problem))
            continue
        if not isinstance(obj, dict) or any(
            not isinstance(obj.get(k), str) for k in DECISION_FIELDS
        ):
            results.append((None, "not a decision: needs " + ", ".join(DECISION_FIELDS)))
            continue
        if obj.get("prev_hash") is not None and not isinstance(obj["prev_hash"], str):
            results.append((None, "not a decision: prev_hash is neither null nor a string"))
            continue
        checked, facts = check_entry(
            "decision", obj["payload"], obj["signature"], obj["key_id"], keys
        )
        if checked.problem:
            results.append((checked, checked.problem))
            continue
        results.append(
            (checked, carried_fields_problem(obj, checked, facts, keys, reviews_required=True))
        )
    return results


def verify_decisions(
    objects: Iterator[tuple[Any, Any]],
    keys: Mapping[str, bytes],
    *,
    first: tuple[Any, Any],
    checkpoints: Iterable[tuple[str, str]] = (),
    proofs: Mapping[str, tuple[str, dict]] | None = None,
    witness_policy: WitnessPolicy | None = None,
    workers: int = 1,
) -> Report:
    """Decisions as the REST API serves them, one per line (pages already unpacked).

    With a ``witness_policy``, every checkpoint the decisions are proven
    included in must carry enough cosignatures, and there must be one.
    """
    report = Report("decisions")
    probe = LedgerVerifier(keys)
    checkpoints = list(checkpoints)
    opened = [(where, probe.open_checkpoint(where, note)) for where, note in checkpoints]
    if witness_policy is not None:
        if not opened:
            raise Failure(
                "decisions",
                "a witness policy needs the cosigned checkpoint they are included in "
                "(--checkpoint, with --proofs)",
            )
        report.witnessed = "; ".join(
            witness_verdict(witness_policy, checkpoint.size, [(where, note)])
            for (where, note), (_, checkpoint) in zip(checkpoints, opened, strict=True)
        )
    proofs = proofs or {}
    # The last v1 decision's hash: v1 decisions (signed before v2) chain on each other.
    previous: str | None = None
    first_link: str | None = None
    seen: dict[str, Any] = {}
    records = (((number, obj), obj) for number, obj in _chain([first], objects))
    for (number, obj), (checked, problem) in ordered_map(
        check_api_decisions, records, keys, workers=workers
    ):
        report.lines += 1
        if checked is None:
            raise Failure(f"line {number}", problem)
        where = f"line {number} (decision {obj.get('id')}, proposal {obj.get('proposal')})"
        if problem:
            raise Failure(where, problem)
        chained = checked.prev_hash is not None
        if chained and previous is not None and checked.prev_hash != previous:
            raise Failure(
                where,
                f"hash chain broken: follows {checked.prev_hash}, the previous chained "
                f"decision is {previous}",
            )
        if chained and first_link is None:
            first_link = checked.prev_hash
        if seen.setdefault(checked.hash, number) != number:
            raise Failure(where, f"this decision is given twice: on line {seen[checked.hash]} too")
        for cp_where, checkpoint in opened:
            found = proofs.get(checked.leaf.hex())
            if found is None:
                raise Failure(where, f"no inclusion proof for this decision ({cp_where})")
            proof_where, proof = found
            _verify_proof(f"{where}, {proof_where}", checked.leaf, proof, checkpoint)
        if chained:
            previous = checked.hash
        report.decisions += 1
        report.fallbacks += obj.get("basis") == "fallback"  # checked against the signed bytes
        report.reviews += len(checked.reviews)
    report.checkpoints = len(opened)
    if first_link is not None and first_link != GENESIS_HASH:
        report.warnings.append(
            "the first chained (v1) decision is not the first in the chain: its predecessor "
            "was taken on trust"
        )
    return report


def _verify_proof(where: str, leaf: bytes, proof: dict, checkpoint: merkle.Checkpoint) -> None:
    try:
        index, size = int(proof["index"]), int(proof["tree_size"])
        path = [bytes.fromhex(h) for h in proof["proof"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise Failure(where, "malformed inclusion proof") from exc
    if size != checkpoint.size:
        raise Failure(
            where, f"inclusion proof is for size {size}, the checkpoint's is {checkpoint.size}"
        )
    if not merkle.verify_inclusion(index, size, leaf, path, checkpoint.root):
        raise Failure(
            where, f"inclusion proof for entry {index} does not verify against the checkpoint"
        )


def _is_page(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("items"), list) and "hash" not in obj


def _unpaged(objects: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    for number, obj in objects:
        if _is_page(obj):
            for position, item in enumerate(obj["items"], 1):
                yield f"{number}, item {position}", item
        else:
            yield number, obj


def verify_file(
    path: str,
    public_keys: Iterable[bytes],
    *,
    checkpoint_files: Iterable[str] = (),
    witness_files: Iterable[str] = (),
    proofs_file: str | None = None,
    require_checkpoint: bool = True,
    witness_policy: WitnessPolicy | None = None,
    workers: int | None = None,
) -> Report:
    """Verify one file; raises Failure at the first problem."""
    keys = {key_id_for(k): bytes(k) for k in public_keys}
    extra = [(f"checkpoint {p}", read_checkpoint_file(p)) for p in checkpoint_files]
    witnessed = [line for p in witness_files for line in read_witness_file(p)]
    if workers is None:
        workers = _default_workers(path)
    with open(path, encoding="utf-8") as handle:
        lines = enumerate(handle, 1)
        for number, line in lines:  # noqa: B007 - both are used after the break
            if line.strip():
                break
        else:
            raise Failure(path, "empty file")
        try:
            obj = loads(line)
        except ValueError as exc:
            raise Failure(f"line {number}", f"not JSON ({exc})") from exc
        first = (number, obj)
        if isinstance(obj, dict) and ("format" in obj or ("kind" in obj and "index" in obj)):
            if proofs_file:
                raise Failure(
                    path, "--proofs is for decisions from the API; an export proves itself"
                )
            return verify_export(
                lines,
                keys,
                first=first,
                extra_checkpoints=extra,
                witnessed=witnessed,
                require_checkpoint=require_checkpoint,
                witness_policy=witness_policy,
                workers=workers,
            )
        objects = _unpaged(_chain([first], json_lines(lines)))
        first = next(objects, None)
        if first is None:
            raise Failure(path, "no decisions in the pages")
        number, obj = first
        if isinstance(obj, dict) and "payload" in obj and "hash" in obj:
            proofs = read_proofs(proofs_file) if proofs_file else {}
            return verify_decisions(
                objects,
                keys,
                first=first,
                checkpoints=extra,
                proofs=proofs,
                witness_policy=witness_policy,
                workers=workers,
            )
        raise Failure(f"line {number}", "neither a ledger export nor decisions from the API")


def _default_workers(path: str) -> int:
    try:
        big = Path(path).stat().st_size > PARALLEL_THRESHOLD * 800
    except OSError:
        big = False
    return min(2, multiprocessing.cpu_count()) if big else 1
