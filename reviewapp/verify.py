"""Verify reviewapp's signed records offline, with nothing but the public key(s).

    python -m reviewapp.verify EXPORT.jsonl --public-key KEY [--public-key KEY2]
                               [--checkpoint CHECKPOINT] [--proofs PROOFS.jsonl]

Two inputs are understood, told apart by their first line:

- a **ledger export** (``manage.py export_decisions``, or the decisions log's
  download): a header line, one line per ledger entry in order, and the
  server's signed checkpoints. Every entry's signature, its leaf hash, the
  decision hash chain, and every checkpoint (its signature and the root
  recomputed at its size) are checked.
- **decisions** as ``GET /api/decisions`` serves them, one JSON object per
  line: every signature, every hash, the hash chain, and that the readable
  fields (outcome, basis, rationale, decided_by, proposal) say what the signed
  bytes say. With ``--checkpoint``, each decision must also come with an
  inclusion proof (``--proofs``: JSONL of ``GET /api/ledger/proof/{entry}``
  answers) that verifies against that checkpoint.

``--checkpoint`` is a signed checkpoint (the note text, or the JSON of
``GET /api/ledger/checkpoint``) the records must be included in.
``--public-key`` is a base64 ed25519 public key or a file holding one; repeat
it for every key the server has used (key rotation).

Exit status 0 when everything verifies; 1 naming the first bad line; 2 for
unusable arguments. Imports nothing from Django: only PyNaCl and rfc8785,
through ``reviewapp.core.signing`` and ``reviewapp.core.merkle``.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import multiprocessing
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from reviewapp.core import merkle
from reviewapp.core.signing import canonical_json, key_id_for, sha256_hex, verify

GENESIS_HASH = "0" * 64
DECISION_TYPE = "reviewapp.decision/v1"
EVIDENCE_SCHEMA = "reviewapp.evidence/1"
EXPORT_FORMAT = "reviewapp.ledger-export/1"
BATCH = 1000
# Below this many entries a process pool costs more than it saves.
PARALLEL_THRESHOLD = 20000


class Failure(Exception):
    """The first thing that did not verify, and where."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


# ── one signed record, checked in isolation (runs in worker processes) ───────


@dataclass(frozen=True)
class Checked:
    leaf: bytes | None
    problem: str | None
    facts: dict[str, Any] = field(default_factory=dict)


def _describe(kind: str, signed: Any) -> dict[str, Any]:
    """What names an entry in messages; read before anything is trusted."""
    if not isinstance(signed, dict):
        return {}
    if kind == "decision":
        proposal = signed.get("proposal")
        return {"proposal": proposal.get("id") if isinstance(proposal, dict) else None}
    return {"checker": signed.get("checker")}


def check_entry(kind: str, payload: str, signature: str, key_id: str, keys: Mapping[str, bytes]) -> Checked:
    """Everything about one entry that needs no other entry: bytes, signature, payload."""
    try:
        leaf = merkle.leaf_hash(merkle.entry_bytes(kind, payload, signature, key_id))
        payload_bytes = payload.encode()
    except (ValueError, TypeError, UnicodeError) as exc:
        return Checked(None, f"not a ledger entry ({exc})")
    try:
        signed = json.loads(payload_bytes)
    except ValueError:
        return Checked(leaf, "signed bytes are not JSON")
    described = _describe(kind, signed)
    public_key = keys.get(key_id)
    if public_key is None:
        return Checked(leaf, f"signed by key {key_id}, which is not a trusted public key", described)
    try:
        raw_signature = base64.b64decode(signature, validate=True)
    except (ValueError, binascii.Error):
        return Checked(leaf, "signature is not base64", described)
    if not verify(payload_bytes, raw_signature, public_key):
        return Checked(leaf, f"signature does not verify with key {key_id}", described)
    try:
        canonical = canonical_json(signed) == payload_bytes
    except ValueError:
        canonical = False
    if not canonical or not isinstance(signed, dict):
        return Checked(leaf, "signed bytes are not a canonical JSON object", described)
    if kind == "decision":
        if signed.get("type") != DECISION_TYPE:
            return Checked(leaf, f"a decision entry whose payload is not a {DECISION_TYPE}", described)
        facts = {
            **described,
            "hash": sha256_hex(payload_bytes),
            "prev_hash": signed.get("prev_hash"),
            **{k: signed.get(k) for k in ("outcome", "basis", "rationale", "decided_by")},
        }
    else:
        if signed.get("schema") != EVIDENCE_SCHEMA:
            return Checked(leaf, f"an evidence entry whose payload is not {EVIDENCE_SCHEMA}", described)
        if signed.get("key_id") != key_id:
            return Checked(
                leaf, "evidence names a different signing key than it was signed with", described
            )
        facts = {k: signed.get(k) for k in ("checker", "version", "verdict", "reason")}
    return Checked(leaf, None, facts)


def _check_batch(batch: list[tuple[str, str, str, str]], keys: Mapping[str, bytes]) -> list[Checked]:
    return [check_entry(*item, keys) for item in batch]


def checked_in_order(
    records: Iterable[tuple[Any, tuple[str, str, str, str] | None]],
    keys: Mapping[str, bytes],
    *,
    workers: int = 1,
) -> Iterator[tuple[Any, Checked | None]]:
    """Check records' signed content, possibly in worker processes; yield in input order.

    A record is ``(context, (kind, payload, signature, key_id))``, or
    ``(context, None)`` for a line to pass through untouched.
    """
    keys = dict(keys)
    if workers <= 1:
        for context, item in records:
            yield context, (check_entry(*item, keys) if item is not None else None)
        return
    check = partial(_check_batch, keys=keys)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque = deque()

        def drain_one():
            contexts, items, future = pending.popleft()
            results = iter(future.result())
            for context, item in zip(contexts, items, strict=True):
                yield context, (next(results) if item is not None else None)

        contexts, items = [], []
        for context, item in records:
            contexts.append(context)
            items.append(item)
            if len(items) >= BATCH:
                pending.append((contexts, items, pool.submit(check, [i for i in items if i])))
                contexts, items = [], []
                if len(pending) > 2 * workers:
                    yield from drain_one()
        if items:
            pending.append((contexts, items, pool.submit(check, [i for i in items if i])))
        while pending:
            yield from drain_one()


# ── the ledger, entry after entry ────────────────────────────────────────────


NOT_AN_ENTRY = (
    "neither a ledger entry (index, kind, payload, signature, key_id) nor a checkpoint"
)


class LedgerVerifier:
    """Rebuilds the tree and the decision chain from checked entries, in order."""

    def __init__(
        self, keys: Mapping[str, bytes], *, start: int = 0, frontier: Iterable[bytes] = ()
    ) -> None:
        self.keys = dict(keys)
        self.compact = merkle.CompactRange(start, list(frontier))
        self.start = start
        # Before the first decision of a partial export the chain's tail is unknown.
        self.prev_hash: str | None = GENESIS_HASH if start == 0 else None
        self.decisions = 0
        self.evidence = 0
        self.checkpoints = 0

    @property
    def size(self) -> int:
        return self.compact.size

    def entry(
        self, where: str, index: Any, kind: str, leaf_hex: str | None, checked: Checked
    ) -> list[tuple[int, int, bytes]]:
        """Add one entry; returns the subtree nodes it completed. Raises Failure."""
        if not isinstance(index, int) or isinstance(index, bool):
            raise Failure(where, "entry has no integer index")
        if index != self.size:
            if index > self.size:
                raise Failure(where, f"entry {self.size} is missing (found entry {index} next)")
            raise Failure(where, f"entry {index} is out of order (expected entry {self.size})")
        if checked.problem:
            raise Failure(where, checked.problem)
        if leaf_hex is not None and leaf_hex != checked.leaf.hex():
            raise Failure(where, "stored leaf hash does not match the entry")
        if kind == "decision":
            prev = checked.facts["prev_hash"]
            if self.prev_hash is not None and prev != self.prev_hash:
                raise Failure(
                    where,
                    f"decision chain broken: it follows {prev}, the previous decision is "
                    f"{self.prev_hash}",
                )
            self.prev_hash = checked.facts["hash"]
            self.decisions += 1
        else:
            self.evidence += 1
        return self.compact.append(checked.leaf)

    def open_checkpoint(self, where: str, note: Any) -> merkle.Checkpoint:
        if not isinstance(note, str):
            raise Failure(where, "checkpoint is not text")
        try:
            return merkle.open_checkpoint(note, self.keys.values())
        except merkle.NoteError as exc:
            raise Failure(where, f"checkpoint rejected: {exc}") from exc

    def check_root(self, where: str, checkpoint: merkle.Checkpoint) -> None:
        """The checkpoint's root must be the tree's root now (its size must be the tree's)."""
        if checkpoint.size != self.size:
            raise Failure(where, f"checkpoint size {checkpoint.size} checked at size {self.size}")
        root = self.compact.root()
        if root != checkpoint.root:
            raise Failure(
                where,
                f"checkpoint for size {checkpoint.size} has root {checkpoint.root_hex}, "
                f"the entries give {root.hex()}",
            )
        self.checkpoints += 1


def entry_label(index: Any, kind: str, checked: Checked | None) -> str:
    label = f"entry {index}"
    if checked is not None and checked.facts:
        if kind == "decision" and checked.facts.get("proposal") is not None:
            label += f", decision for proposal {checked.facts['proposal']}"
        elif kind == "evidence" and checked.facts.get("checker"):
            label += f", evidence from {checked.facts['checker']}"
    return label


# ── reading files ────────────────────────────────────────────────────────────


class BadLine:
    """A line that is not JSON, carried in order so it is reported in order."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            yield number, BadLine(f"not JSON ({exc})")


def read_checkpoint_file(path: str) -> str:
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        try:
            text = json.loads(text)["checkpoint"]
        except (ValueError, KeyError, TypeError) as exc:
            raise Failure(path, "not a checkpoint: JSON without a 'checkpoint' field") from exc
    return text


def load_public_key(value: str) -> bytes:
    text = value
    path = Path(value)
    if path.is_file():
        text = path.read_text(encoding="utf-8").strip()
        if text.startswith("{"):
            text = json.loads(text).get("public_key", "")
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{value!r} is neither a base64 public key nor a file holding one") from exc
    if len(key) != 32:
        raise ValueError(f"{value!r} is not a 32-byte ed25519 public key")
    return key


@dataclass
class Report:
    kind: str
    lines: int = 0
    entries: int = 0
    decisions: int = 0
    evidence: int = 0
    checkpoints: int = 0
    root: str | None = None
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.kind == "ledger":
            text = (
                f"OK: {self.entries} ledger entries ({self.decisions} decisions, "
                f"{self.evidence} evidence): signatures, leaf hashes and the decision chain "
                f"verified; {self.checkpoints} signed checkpoint(s) match the recomputed tree"
            )
            if self.root:
                text += f"; root at size {self.entries} is {self.root}"
        else:
            text = (
                f"OK: {self.decisions} decisions: signatures, hashes and the hash chain verified"
            )
            if self.checkpoints:
                text += "; every decision's inclusion in the checkpoint verified"
        return text


def verify_export(
    objects: Iterator[tuple[int, Any]],
    keys: Mapping[str, bytes],
    *,
    first: tuple[int, Any],
    extra_checkpoints: Iterable[tuple[str, str]] = (),
    workers: int = 1,
) -> Report:
    """A ledger export: header, entries in order, checkpoint lines."""
    report = Report("ledger")
    number, header = first
    start, frontier = 0, []
    if isinstance(header, dict) and header.get("format") is not None:
        if header.get("format") != EXPORT_FORMAT:
            raise Failure(f"line {number}", f"unknown export format {header.get('format')!r}")
        start = header.get("start", 0)
        try:
            frontier = [bytes.fromhex(h) for h in header.get("frontier", [])]
            verifier = LedgerVerifier(keys, start=start, frontier=frontier)
        except (ValueError, TypeError) as exc:
            raise Failure(f"line {number}", f"unusable header ({exc})") from exc
        rest = objects
    else:
        verifier = LedgerVerifier(keys)
        rest = _chain([first], objects)

    pending: dict[int, list[tuple[str, merkle.Checkpoint]]] = {}

    def expect(where: str, checkpoint: merkle.Checkpoint) -> None:
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
        expect(where, verifier.open_checkpoint(where, note))
    settle()

    def records():
        # Problems found while reading travel with the line, so that with
        # worker processes the first bad line is still the one reported.
        for number, obj in rest:
            report.lines += 1
            if isinstance(obj, BadLine):
                yield (number, obj, obj.problem), None
            elif not isinstance(obj, dict):
                yield (number, obj, "not a JSON object"), None
            elif "checkpoint" in obj:
                yield (number, obj, None), None
            else:
                item = tuple(obj.get(k) for k in ("kind", "payload", "signature", "key_id"))
                if obj.get("kind") in merkle.ENTRY_KINDS and all(isinstance(v, str) for v in item):
                    yield (number, obj, None), item
                else:
                    yield (number, obj, NOT_AN_ENTRY), None

    for (number, obj, problem), checked in checked_in_order(records(), keys, workers=workers):
        if problem:
            raise Failure(f"line {number}", problem)
        if checked is None:
            where = f"line {number} (checkpoint)"
            expect(where, verifier.open_checkpoint(where, obj["checkpoint"]))
            settle()
            continue
        where = f"line {number} ({entry_label(obj.get('index'), obj['kind'], checked)})"
        verifier.entry(where, obj.get("index"), obj["kind"], obj.get("leaf_hash"), checked)
        settle()
    for size, waiting in sorted(pending.items()):
        where, _ = waiting[0]
        raise Failure(where, f"checkpoint for size {size}, but the export ends at size {verifier.size}")
    report.entries = verifier.size
    report.decisions, report.evidence = verifier.decisions, verifier.evidence
    report.checkpoints = verifier.checkpoints
    report.root = verifier.compact.root().hex()
    if start:
        report.warnings.append(
            f"partial export from entry {start}: entries before it were not checked, and the "
            "first decision's link to its predecessor was taken on trust"
        )
    if not report.checkpoints:
        report.warnings.append(
            "no signed checkpoint: the entries verify, but nothing proves the export is complete"
        )
    return report


def _chain(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


DECISION_FIELDS = ("payload", "signature", "key_id", "prev_hash", "hash")


def verify_decisions(
    objects: Iterator[tuple[int, Any]],
    keys: Mapping[str, bytes],
    *,
    first: tuple[int, Any],
    checkpoints: Iterable[tuple[str, str]] = (),
    proofs: Mapping[str, tuple[str, dict]] | None = None,
    workers: int = 1,
) -> Report:
    """Decisions as the REST API serves them, one per line."""
    report = Report("decisions")
    opened = []
    probe = LedgerVerifier(keys)
    for where, note in checkpoints:
        opened.append((where, probe.open_checkpoint(where, note)))
    proofs = proofs or {}
    previous: str | None = None

    def records():
        for number, obj in _chain([first], objects):
            if isinstance(obj, BadLine):
                yield (number, obj, obj.problem), None
            elif not isinstance(obj, dict) or any(
                not isinstance(obj.get(k), str) for k in DECISION_FIELDS
            ):
                yield (number, obj, "not a decision: needs " + ", ".join(DECISION_FIELDS)), None
            else:
                item = ("decision", obj["payload"], obj["signature"], obj["key_id"])
                yield (number, obj, None), item

    for (number, obj, problem), checked in checked_in_order(records(), keys, workers=workers):
        report.lines += 1
        if problem:
            raise Failure(f"line {number}", problem)
        where = f"line {number} (decision {obj.get('id')}, proposal {obj.get('proposal')})"
        if checked.problem:
            raise Failure(where, checked.problem)
        public_key = obj.get("public_key")
        if public_key is not None and public_key != base64.b64encode(keys[obj["key_id"]]).decode():
            raise Failure(where, "public_key differs from the trusted key with that key id")
        facts = checked.facts
        if obj["hash"] != facts["hash"]:
            raise Failure(where, "hash is not the SHA-256 of the signed bytes")
        if obj["prev_hash"] != facts["prev_hash"]:
            raise Failure(where, "prev_hash differs from the signed bytes")
        if previous is not None and obj["prev_hash"] != previous:
            raise Failure(
                where, f"hash chain broken: follows {obj['prev_hash']}, previous line is {previous}"
            )
        mismatched = [
            name
            for name in ("outcome", "basis", "rationale", "decided_by", "proposal")
            if name in obj and obj[name] != facts[name]
        ]
        if mismatched:
            raise Failure(where, f"differs from its signed bytes in {', '.join(mismatched)}")
        for cp_where, checkpoint in opened:
            found = proofs.get(checked.leaf.hex())
            if found is None:
                raise Failure(where, f"no inclusion proof for this decision ({cp_where})")
            proof_where, proof = found
            _verify_proof(f"{where}, {proof_where}", checked.leaf, proof, checkpoint)
        previous = obj["hash"]
        report.decisions += 1
    report.checkpoints = len(opened)
    if isinstance(first[1], dict) and first[1].get("prev_hash") != GENESIS_HASH:
        report.warnings.append(
            "the first decision is not the first in the chain: its predecessor was taken on trust"
        )
    return report


def _verify_proof(where: str, leaf: bytes, proof: dict, checkpoint: merkle.Checkpoint) -> None:
    try:
        index, size = int(proof["index"]), int(proof["tree_size"])
        path = [bytes.fromhex(h) for h in proof["proof"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise Failure(where, "malformed inclusion proof") from exc
    if size != checkpoint.size:
        raise Failure(where, f"inclusion proof is for size {size}, the checkpoint's is {checkpoint.size}")
    if not merkle.verify_inclusion(index, size, leaf, path, checkpoint.root):
        raise Failure(where, f"inclusion proof for entry {index} does not verify against the checkpoint")


def read_proofs(path: str) -> dict[str, tuple[str, dict]]:
    proofs = {}
    with open(path, encoding="utf-8") as handle:
        for number, obj in _json_lines(handle):
            if isinstance(obj, BadLine):
                raise Failure(f"{path} line {number}", obj.problem)
            if not isinstance(obj, dict) or not isinstance(obj.get("leaf_hash"), str):
                raise Failure(f"{path} line {number}", "not an inclusion proof")
            proofs[obj["leaf_hash"]] = (f"{path} line {number}", obj)
    return proofs


def verify_file(
    path: str,
    public_keys: Iterable[bytes],
    *,
    checkpoint_files: Iterable[str] = (),
    proofs_file: str | None = None,
    workers: int | None = None,
) -> Report:
    """Verify one file; raises Failure at the first problem."""
    keys = {key_id_for(k): bytes(k) for k in public_keys}
    extra = [(f"checkpoint {p}", read_checkpoint_file(p)) for p in checkpoint_files]
    with open(path, encoding="utf-8") as handle:
        if workers is None:
            workers = _default_workers(path)
        objects = _json_lines(handle)
        first = next(objects, None)
        if first is None:
            raise Failure(path, "empty file")
        number, obj = first
        if isinstance(obj, BadLine):
            raise Failure(f"line {number}", obj.problem)
        if _is_page(obj):
            # Pages of GET /api/decisions saved as they came: {"items": [...], "next_after"}.
            objects = _unpaged(_chain([first], objects))
            first = next(objects, None)
            if first is None:
                raise Failure(path, "no decisions in the pages")
            number, obj = first
        if isinstance(obj, dict) and ("format" in obj or ("kind" in obj and "index" in obj)):
            if proofs_file:
                raise Failure(path, "--proofs is for decisions from the API; an export proves itself")
            return verify_export(objects, keys, first=first, extra_checkpoints=extra, workers=workers)
        if isinstance(obj, dict) and "prev_hash" in obj and "hash" in obj:
            proofs = read_proofs(proofs_file) if proofs_file else {}
            return verify_decisions(
                objects, keys, first=first, checkpoints=extra, proofs=proofs, workers=workers
            )
        raise Failure(f"line {number}", "neither a ledger export nor decisions from the API")


def _is_page(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("items"), list) and "hash" not in obj


def _unpaged(objects: Iterator[tuple[int, Any]]) -> Iterator[tuple[Any, Any]]:
    for number, obj in objects:
        if _is_page(obj):
            for position, item in enumerate(obj["items"], 1):
                yield f"{number}, item {position}", item
        else:
            yield number, obj


def _default_workers(path: str) -> int:
    try:
        big = Path(path).stat().st_size > PARALLEL_THRESHOLD * 800
    except OSError:
        big = False
    return min(2, multiprocessing.cpu_count()) if big else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reviewapp.verify",
        description="Verify a reviewapp ledger export or decisions JSONL offline.",
    )
    parser.add_argument("file", help="ledger export (export_decisions) or decisions JSONL")
    parser.add_argument(
        "--public-key",
        action="append",
        required=True,
        metavar="KEY",
        help="base64 ed25519 public key, or a file holding one; repeat for rotated keys",
    )
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="FILE",
        help="a signed checkpoint (note text or the API's JSON) the records must be included in",
    )
    parser.add_argument(
        "--proofs", metavar="FILE", help="JSONL of /api/ledger/proof answers (decisions input)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="processes checking signatures (default: auto)"
    )
    args = parser.parse_args(argv)
    try:
        keys = [load_public_key(value) for value in args.public_key]
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    try:
        report = verify_file(
            args.file,
            keys,
            checkpoint_files=args.checkpoint,
            proofs_file=args.proofs,
            workers=args.workers,
        )
    except Failure as failure:
        print(f"FAIL {failure}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(report.summary())
    return 0


if __name__ == "__main__":
    # Run the importable module's main, so worker processes find the same functions.
    from reviewapp.verify import main as _main

    sys.exit(_main())
