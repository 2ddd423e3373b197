"""Verify reviewapp's signed records offline, with nothing but the public key(s).

    python -m reviewapp.verify EXPORT.jsonl --public-key KEY [--public-key KEY2]
                               [--checkpoint CHECKPOINT] [--witness WITNESS.jsonl]
                               [--no-checkpoint] [--proofs PROOFS.jsonl]

Two inputs are understood, told apart by their first line:

- a **ledger export** (``manage.py export_decisions``, or the decisions log's
  download): a header line, one line per ledger entry in order, and the
  server's signed checkpoints. Every entry's signature, its leaf hash, the
  decision hash chain, that every evidence digest a decision signed is an
  evidence entry before it, and every checkpoint (its signature and the root
  recomputed at its size) are checked. An export with no checkpoint at all
  fails unless ``--no-checkpoint`` says that is expected; ``--witness`` adds
  every checkpoint of a witness log (``ledger-witness.jsonl``).
- **decisions** as ``GET /api/decisions`` serves them: one decision object per
  line, or the API's pages (``{"items": [...], "next_after": ...}``) one per
  line. Every signature, every hash, the hash chain, and that the readable
  fields (outcome, basis, rationale, decided_by, proposal) say what the signed
  bytes say. With ``--checkpoint``, each decision must also come with an
  inclusion proof (``--proofs``: JSONL of ``GET /api/ledger/proof/{entry}``
  answers) that verifies against that checkpoint.

``--checkpoint`` is a signed checkpoint (the note text, or the JSON of
``GET /api/ledger/checkpoint``) the records must be included in.
``--public-key`` is a base64 ed25519 public key or a file holding one; repeat
it for every key the server has used (key rotation). These are the only keys
trusted: a signature by any other key fails, naming it (the keys an export's
header lists are never used).

Exit status 0 when everything verifies; 1 naming the first bad line; 2 for
unusable arguments. Imports nothing from Django: only PyNaCl and rfc8785,
through ``reviewapp.core.signing`` and ``reviewapp.core.merkle``.

Large inputs are checked in worker processes (signatures cost ~60 µs each);
the order-dependent checks (indexes, chain, tree, checkpoints) stay in the
main process, so the first bad line reported is the same either way.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from reviewapp.core import merkle
from reviewapp.core.signing import key_id_for, sha256_hex, verify

GENESIS_HASH = "0" * 64
DECISION_TYPE = "reviewapp.decision/v1"
EVIDENCE_SCHEMA = "reviewapp.evidence/1"
EXPORT_FORMAT = "reviewapp.ledger-export/1"
BATCH = 500
# Below this many entries a process pool costs more than it saves.
PARALLEL_THRESHOLD = 20000
NOT_AN_ENTRY = "neither a ledger entry (index, kind, payload, signature, key_id) nor a checkpoint"
ENTRY_KEYS = ("kind", "payload", "signature", "key_id")


def _loads(text: str | bytes) -> Any:
    """json.loads, with nesting too deep for the parser reported as bad JSON, not a crash."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to check") from None


class Failure(Exception):
    """The first thing that did not verify, and where."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


# ── one signed record, checked in isolation (runs in worker processes) ───────


class Checked(NamedTuple):
    """What one entry's own bytes say; small, so it crosses processes cheaply."""

    leaf: bytes | None
    problem: str | None
    label: str = ""  # "decision for proposal 12", "evidence from regex-1"
    prev_hash: str | None = None  # decisions: the chain link the signed bytes claim
    hash: str | None = None  # SHA-256 of the signed bytes
    # decisions: (checker, payload SHA-256) of each piece of evidence the decision binds
    evidence: tuple[tuple[str, str], ...] = ()


def _label(kind: str, signed: Any) -> str:
    """What names an entry in messages; read before anything is trusted."""
    if not isinstance(signed, dict):
        return ""
    if kind == "decision":
        proposal = signed.get("proposal")
        if isinstance(proposal, dict) and proposal.get("id") is not None:
            return f"decision for proposal {proposal['id']}"
        return ""
    return f"evidence from {signed['checker']}" if signed.get("checker") else ""


# A decision row's columns that restate its signed payload, and the fact each restates.
DECISION_ROW_COLUMNS = (
    ("outcome", "outcome"),
    ("basis", "basis"),
    ("rationale", "rationale"),
    ("decided_by_name", "decided_by"),
    ("proposal_id", "proposal"),
    ("prev_hash", "prev_hash"),
    ("hash", "hash"),
)


def decision_facts(payload_bytes: bytes, signed: dict) -> dict[str, Any]:
    """What a decision's signed bytes say about the columns that restate them."""
    proposal = signed.get("proposal")
    return {
        "hash": sha256_hex(payload_bytes),
        "prev_hash": signed.get("prev_hash"),
        "proposal": proposal.get("id") if isinstance(proposal, dict) else None,
        **{k: signed.get(k) for k in ("outcome", "basis", "rationale", "decided_by")},
    }


def decision_row_mismatches(row: Mapping[str, Any], facts: Mapping[str, Any]) -> list[str]:
    """Columns of a decision row (by column name) that no longer say what was signed."""
    return [column for column, fact in DECISION_ROW_COLUMNS if row[column] != facts[fact]]


def check_entry(
    kind: str,
    payload: str,
    signature: str,
    key_id: str,
    keys: Mapping[str, bytes],
    *,
    entry: bytes | None = None,
) -> tuple[Checked, dict[str, Any]]:
    """Everything about one entry that needs no other entry: bytes, signature, payload.

    ``entry``: the entry's bytes when the caller has already built them with
    ``merkle.entry_bytes`` from these four values (so they are not encoded twice).
    Returns the result and the signed facts (empty unless the signature verified).
    """
    try:
        if entry is None:
            entry = merkle.entry_bytes(kind, payload, signature, key_id)
        leaf = merkle.leaf_hash(entry)
        payload_bytes = payload.encode()
    except (ValueError, TypeError, UnicodeError) as exc:
        return Checked(None, f"not a ledger entry ({exc})"), {}
    try:
        signed = json.loads(payload_bytes)
    except RecursionError:
        return Checked(leaf, "signed bytes are JSON nested too deeply to check"), {}
    except ValueError:
        return Checked(leaf, "signed bytes are not JSON"), {}
    label = _label(kind, signed)
    public_key = keys.get(key_id)
    if public_key is None:
        return Checked(
            leaf, f"signed by key {key_id}, which is not a trusted public key", label
        ), {}
    try:
        raw_signature = base64.b64decode(signature, validate=True)
    except (ValueError, binascii.Error):
        return Checked(leaf, "signature is not base64", label), {}
    if not verify(payload_bytes, raw_signature, public_key):
        return Checked(leaf, f"signature does not verify with key {key_id}", label), {}
    try:
        canonical = isinstance(signed, dict) and merkle.jcs(signed) == payload_bytes
    except (ValueError, RecursionError):
        canonical = False
    if not canonical:
        return Checked(leaf, "signed bytes are not a canonical JSON object", label), {}
    if kind == "decision":
        if signed.get("type") != DECISION_TYPE:
            return Checked(
                leaf, f"a decision entry whose payload is not a {DECISION_TYPE}", label
            ), {}
        facts = decision_facts(payload_bytes, signed)
        evidence = bound_evidence(signed.get("evidence"))
        if evidence is None:
            return Checked(leaf, "a decision whose evidence list is malformed", label), {}
        return Checked(leaf, None, label, facts["prev_hash"], facts["hash"], evidence), facts
    if signed.get("schema") != EVIDENCE_SCHEMA:
        return Checked(leaf, f"an evidence entry whose payload is not {EVIDENCE_SCHEMA}", label), {}
    if signed.get("key_id") != key_id:
        return Checked(
            leaf, "evidence names a different key than the one that signed it", label
        ), {}
    facts = {k: signed.get(k) for k in ("checker", "version", "verdict", "reason")}
    return Checked(leaf, None, label, hash=sha256_hex(payload_bytes)), facts


def bound_evidence(items: Any) -> tuple[tuple[str, str], ...] | None:
    """(checker, payload SHA-256) of each evidence item a decision signed, or None if malformed."""
    if items is None:
        return ()
    if not isinstance(items, list):
        return None
    bound = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("payload_sha256"), str):
            return None
        bound.append((str(item.get("checker")), item["payload_sha256"]))
    return tuple(bound)


def ordered_map(
    check: Callable[[list, Mapping[str, bytes]], list],
    records: Iterable[tuple[Any, Any]],
    keys: Mapping[str, bytes],
    *,
    workers: int = 1,
) -> Iterator[tuple[Any, Any]]:
    """Run ``check(batch, keys)`` over the work of ``(context, work)`` records; yield in order.

    ``check`` must be a module-level function (it is sent to worker processes).
    """
    keys = dict(keys)
    if workers <= 1:
        for context, work in records:
            yield context, check([work], keys)[0]
        return
    task = partial(check, keys=keys)
    context_spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context_spawn) as pool:
        pending: deque = deque()

        def drain() -> Iterator[tuple[Any, Any]]:
            contexts, future = pending.popleft()
            yield from zip(contexts, future.result(), strict=True)

        contexts, batch = [], []
        for context, work in records:
            contexts.append(context)
            batch.append(work)
            if len(batch) >= BATCH:
                pending.append((contexts, pool.submit(task, batch)))
                contexts, batch = [], []
                while len(pending) > 3 * workers:
                    yield from drain()
        if batch:
            pending.append((contexts, pool.submit(task, batch)))
        while pending:
            yield from drain()


# ── the ledger, entry after entry (main process) ─────────────────────────────


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
        # Payload digests of the evidence entries so far: every decision's must be among them.
        self.evidence_seen: set[str] = set()
        # A partial export cannot show evidence from before its start: counted, not failed.
        self.evidence_unseen = 0

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
            if self.prev_hash is not None and checked.prev_hash != self.prev_hash:
                raise Failure(
                    where,
                    f"decision chain broken: it follows {checked.prev_hash}, the previous "
                    f"decision is {self.prev_hash}",
                )
            for checker, digest in checked.evidence:
                if digest in self.evidence_seen:
                    continue
                if self.start:
                    self.evidence_unseen += 1
                    continue
                raise Failure(
                    where,
                    f"its signed evidence from {checker} (payload SHA-256 {digest}) is not in "
                    "the ledger before it: evidence was removed",
                )
            self.prev_hash = checked.hash
            self.decisions += 1
        else:
            self.evidence_seen.add(checked.hash)
            self.evidence += 1
        return self.compact.append(checked.leaf)

    def open_checkpoint(self, where: str, note: Any) -> merkle.Checkpoint:
        if not isinstance(note, str):
            raise Failure(where, "checkpoint is not text")
        try:
            return merkle.open_checkpoint(note, self.keys.values())
        except merkle.NoteError as exc:
            raise Failure(where, f"checkpoint rejected: {exc}{_note_signers(note)}") from exc

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


def _note_signers(note: str) -> str:
    """Name the keys a rejected note was signed by (name and 4-byte key hash)."""
    try:
        _, signatures = merkle.parse_note(note)
    except merkle.NoteError:
        return ""
    named = ", ".join(f"{sig.name} key hash {sig.key_hash.hex()}" for sig in signatures)
    return f" (signed by {named}, not a trusted key)" if named else ""


def entry_where(prefix: str, index: Any, checked: Checked | None) -> str:
    label = f"entry {index}"
    if checked is not None and checked.label:
        label += f", {checked.label}"
    return f"{prefix} ({label})"


# ── rows of the server's database (used by manage.py verify_ledger) ─────────

# The layout of the row tuples `check_ledger_rows` takes: a ledger entry joined
# with the decision or evidence row it records.
LEDGER_ROW_FIELDS = (
    "entry",
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


def _entry_item(text: str) -> tuple[str, str, str, str] | None:
    try:
        fields = _loads(text)
    except ValueError:
        return None
    if not isinstance(fields, dict) or fields.keys() != set(ENTRY_KEYS):
        return None
    item = tuple(fields[k] for k in ENTRY_KEYS)
    return item if all(isinstance(v, str) for v in item) else None


def _row_problem(kind: str, row: tuple, item: tuple[str, str, str, str], facts: dict) -> str | None:
    """How the decision/evidence row differs from what its ledger entry signed, if it does."""
    r = dict(zip(LEDGER_ROW_FIELDS, row, strict=True))
    if item[0] != kind:
        return f"stored kind {kind!r} differs from the entry's {item[0]!r}"
    prefix = "decision" if kind == "decision" else "evidence"
    row_id = r[f"{prefix}_id"]
    if row_id is None:
        return f"the {prefix} row this entry records is gone"
    differs = [
        name
        for name, value in zip(("payload", "signature", "key_id"), item[1:], strict=True)
        if r[f"{prefix}__{name}"] != value
    ]
    if differs:
        return f"{prefix} {row_id} differs from its ledger entry in {', '.join(differs)}"
    if kind == "decision":
        mismatched = decision_row_mismatches(
            {column: r[f"decision__{column}"] for column, _ in DECISION_ROW_COLUMNS}, facts
        )
    else:
        columns = (
            ("checker", r["evidence__checker_name"], facts["checker"]),
            ("version", r["evidence__checker_version"], facts["version"]),
            ("verdict", r["evidence__verdict"], facts["verdict"]),
            ("reason", r["evidence__reason"], facts["reason"]),
        )
        mismatched = [name for name, stored, signed in columns if stored != signed]
    if mismatched:
        return f"{prefix} {row_id} differs from its signed bytes in {', '.join(mismatched)}"
    return None


# Where a row holds the payload, signature and key id its entry records, by kind.
_ROW_ENTRY_COLUMNS = {
    kind: tuple(LEDGER_ROW_FIELDS.index(f"{kind}__{name}") for name in ENTRY_KEYS[1:])
    for kind in merkle.ENTRY_KINDS
}


def _row_entry(kind: str, row: tuple, text: str) -> tuple[tuple[str, str, str, str], bytes] | None:
    """The entry as the row's own columns encode it, if the stored entry is exactly that.

    None otherwise (a changed row, a non-canonical entry, a missing row): the
    caller then parses the stored entry to say what differs.
    """
    columns = _ROW_ENTRY_COLUMNS.get(kind)
    if columns is None:
        return None
    item = (kind, *(row[i] for i in columns))
    try:
        entry = merkle.entry_bytes(*item)
        if entry != text.encode():
            return None
    except (ValueError, TypeError, UnicodeError):
        return None
    return item, entry


def check_ledger_rows(
    batch: list[tuple[str, tuple]], keys: Mapping[str, bytes]
) -> list[tuple[Checked, str | None]]:
    """For each ``(kind, row)``: the entry's own check, then how the row betrays it (if it does).

    The second value is checked only after the entry's position and leaf, so
    it is returned separately.
    """
    results = []
    for kind, row in batch:
        text = row[0]
        entry = _row_entry(kind, row, text)
        if entry is not None:
            # The stored entry is byte for byte the encoding of the row's columns: it is
            # canonical and says what the row says, so it needs no parsing.
            item, entry_bytes = entry
            checked, facts = check_entry(*item, keys, entry=entry_bytes)
            problem = None if checked.problem else _row_problem(kind, row, item, facts)
            results.append((checked, problem))
            continue
        item = _entry_item(text)
        if item is None:
            results.append(
                (Checked(None, "stored entry is not {kind, payload, signature, key_id}"), None)
            )
            continue
        checked, facts = check_entry(*item, keys)
        if checked.problem:
            results.append((checked, None))
            continue
        if merkle.leaf_hash(text.encode()) != checked.leaf:
            results.append((checked, "stored entry is not in canonical form"))
            continue
        results.append((checked, _row_problem(kind, row, item, facts)))
    return results


# ── reading files ────────────────────────────────────────────────────────────


def _json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-blank line; a line that is not JSON gives a BadLine."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, _loads(line)
        except ValueError as exc:
            yield number, BadLine(f"not JSON ({exc})")


@dataclass(frozen=True)
class BadLine:
    """A line that cannot be used, carried in order so it is reported in order."""

    problem: str


def check_export_lines(
    batch: list[str], keys: Mapping[str, bytes]
) -> list[tuple[str, Any, Any, Any]]:
    """Parse and check raw export lines: ``(what, a, b, c)`` per line.

    ``("bad", problem, -, -)``, ``("checkpoint", note, -, -)`` or
    ``("entry", (index, kind, stored leaf hash), Checked, -)``.
    """
    results = []
    for line in batch:
        try:
            obj = _loads(line)
        except ValueError as exc:
            results.append(("bad", f"not JSON ({exc})", None, None))
            continue
        if not isinstance(obj, dict):
            results.append(("bad", "not a JSON object", None, None))
            continue
        if "checkpoint" in obj:
            results.append(("checkpoint", obj["checkpoint"], None, None))
            continue
        item = tuple(obj.get(k) for k in ENTRY_KEYS)
        if obj.get("kind") not in merkle.ENTRY_KINDS or not all(isinstance(v, str) for v in item):
            results.append(("bad", NOT_AN_ENTRY, None, None))
            continue
        checked, _ = check_entry(*item, keys)
        results.append(("entry", (obj.get("index"), item[0], obj.get("leaf_hash")), checked, None))
    return results


def read_witness_file(path: str) -> list[tuple[str, str]]:
    """A witness log: one ``{"tree_size", "checkpoint"}`` JSON line per signed checkpoint."""
    notes = []
    with open(path, encoding="utf-8") as handle:
        for number, obj in _json_lines(handle):
            where = f"witness log {path} line {number}"
            if not isinstance(obj, dict) or not isinstance(obj.get("checkpoint"), str):
                raise Failure(where, "not a checkpoint line")
            notes.append((where, obj["checkpoint"]))
    return notes


def read_checkpoint_file(path: str) -> str:
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        try:
            text = _loads(text)["checkpoint"]
        except (ValueError, KeyError, TypeError) as exc:
            raise Failure(path, "not a checkpoint: JSON without a 'checkpoint' field") from exc
    return text


def _decode_key(text: str, source: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{source} is not a base64 public key") from exc
    if len(key) != 32:
        raise ValueError(f"{source} is not a 32-byte ed25519 public key")
    return key


def load_public_keys(value: str) -> list[bytes]:
    """Keys from ``--public-key``: base64 text, or a file holding keys.

    A file may hold one base64 key per line (anything after the key on a line,
    and lines starting with ``#``, are ignored: ``manage.py ledger_keys``
    writes ``KEY key_id``), or JSON: ``{"public_key": ...}`` or a list of
    those (``GET /api/keys``).
    """
    path = Path(value)
    if not path.is_file():
        try:
            return [_decode_key(value, repr(value))]
        except ValueError:
            raise ValueError(f"{value!r} is neither a base64 public key nor a file") from None
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith(("{", "[")):
        try:
            data = _loads(text)
            items = data if isinstance(data, list) else [data]
            return [_decode_key(item["public_key"], f"{value}") for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{value} is JSON without public_key fields ({exc})") from exc
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            keys.append(_decode_key(line.split()[0], f"{value} line {number}"))
    if not keys:
        raise ValueError(f"{value} holds no public key")
    return keys


def load_public_key(value: str) -> bytes:
    """One key (the first, if ``value`` is a file holding several)."""
    return load_public_keys(value)[0]


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
            return text
        text = f"OK: {self.decisions} decisions: signatures, hashes and the hash chain verified"
        if self.checkpoints:
            text += "; every decision's inclusion in the checkpoint verified"
        return text


def verify_export(
    lines: Iterator[tuple[int, str]],
    keys: Mapping[str, bytes],
    *,
    first: tuple[int, Any],
    extra_checkpoints: Iterable[tuple[str, str]] = (),
    witnessed: Iterable[tuple[str, str]] = (),
    require_checkpoint: bool = True,
    workers: int = 1,
) -> Report:
    """A ledger export: header, entries in order, checkpoint lines (raw lines after the first).

    ``witnessed`` checkpoints (a witness log) are checked like ``extra_checkpoints``,
    except that those before a partial export's start are skipped. Without any
    checkpoint at all the export fails, unless ``require_checkpoint`` is false.
    """
    report = Report("ledger")
    number, header = first
    start = 0
    rest: Iterable[tuple[int, str]] = lines
    if isinstance(header, dict) and header.get("format") is not None:
        if header.get("format") != EXPORT_FORMAT:
            raise Failure(f"line {number}", f"unknown export format {header.get('format')!r}")
        start = header.get("start", 0)
        try:
            frontier = [bytes.fromhex(h) for h in header.get("frontier", [])]
            verifier = LedgerVerifier(keys, start=start, frontier=frontier)
        except (ValueError, TypeError) as exc:
            raise Failure(f"line {number}", f"unusable header ({exc})") from exc
    else:
        verifier = LedgerVerifier(keys)
        rest = _chain([(number, json.dumps(header))], lines)

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
    skipped = 0
    for where, note in witnessed:
        checkpoint = verifier.open_checkpoint(where, note)
        if checkpoint.size < start:
            skipped += 1
            continue
        expect(where, checkpoint)
    settle()

    records = ((n, line) for n, line in rest if line.strip())
    for number, (what, a, checked, _) in ordered_map(
        check_export_lines, records, keys, workers=workers
    ):
        report.lines += 1
        if what == "bad":
            raise Failure(f"line {number}", a)
        if what == "checkpoint":
            where = f"line {number} (checkpoint)"
            expect(where, verifier.open_checkpoint(where, a))
            settle()
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
    report.checkpoints = verifier.checkpoints
    report.root = verifier.compact.root().hex()
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
    return report


def _chain(first: list, rest: Iterable) -> Iterator:
    yield from first
    yield from rest


DECISION_FIELDS = ("payload", "signature", "key_id", "prev_hash", "hash")


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
        checked, facts = check_entry(
            "decision", obj["payload"], obj["signature"], obj["key_id"], keys
        )
        if checked.problem:
            results.append((checked, checked.problem))
            continue
        public_key = obj.get("public_key")
        if public_key is not None and public_key != base64.b64encode(keys[obj["key_id"]]).decode():
            results.append((checked, "public_key differs from the trusted key with that key id"))
        elif obj["hash"] != facts["hash"]:
            results.append((checked, "hash is not the SHA-256 of the signed bytes"))
        elif obj["prev_hash"] != facts["prev_hash"]:
            results.append((checked, "prev_hash differs from the signed bytes"))
        else:
            mismatched = [
                name
                for name in ("outcome", "basis", "rationale", "decided_by", "proposal")
                if name in obj and obj[name] != facts[name]
            ]
            problem = (
                f"differs from its signed bytes in {', '.join(mismatched)}" if mismatched else None
            )
            results.append((checked, problem))
    return results


def verify_decisions(
    objects: Iterator[tuple[Any, Any]],
    keys: Mapping[str, bytes],
    *,
    first: tuple[Any, Any],
    checkpoints: Iterable[tuple[str, str]] = (),
    proofs: Mapping[str, tuple[str, dict]] | None = None,
    workers: int = 1,
) -> Report:
    """Decisions as the REST API serves them, one per line (pages already unpacked)."""
    report = Report("decisions")
    probe = LedgerVerifier(keys)
    opened = [(where, probe.open_checkpoint(where, note)) for where, note in checkpoints]
    proofs = proofs or {}
    previous: str | None = None
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
        if previous is not None and obj["prev_hash"] != previous:
            raise Failure(
                where, f"hash chain broken: follows {obj['prev_hash']}, previous line is {previous}"
            )
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
        raise Failure(
            where, f"inclusion proof is for size {size}, the checkpoint's is {checkpoint.size}"
        )
    if not merkle.verify_inclusion(index, size, leaf, path, checkpoint.root):
        raise Failure(
            where, f"inclusion proof for entry {index} does not verify against the checkpoint"
        )


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
            obj = _loads(line)
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
                workers=workers,
            )
        objects = _unpaged(_chain([first], _json_lines_from(lines)))
        first = next(objects, None)
        if first is None:
            raise Failure(path, "no decisions in the pages")
        number, obj = first
        if isinstance(obj, dict) and "prev_hash" in obj and "hash" in obj:
            proofs = read_proofs(proofs_file) if proofs_file else {}
            return verify_decisions(
                objects, keys, first=first, checkpoints=extra, proofs=proofs, workers=workers
            )
        raise Failure(f"line {number}", "neither a ledger export nor decisions from the API")


def _json_lines_from(numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, Any]]:
    for number, line in numbered:
        if not line.strip():
            continue
        try:
            yield number, _loads(line)
        except ValueError as exc:
            yield number, BadLine(f"not JSON ({exc})")


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
        help="a trusted base64 ed25519 public key, or a file of them (one per line, or GET "
        "/api/keys JSON); repeat for rotated keys. Only these are trusted: the keys an export's "
        "header lists are not",
    )
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="FILE",
        help="a signed checkpoint (note text or the API's JSON) the records must be included in",
    )
    parser.add_argument(
        "--witness",
        action="append",
        default=[],
        metavar="FILE",
        help="a witness log (the server's ledger-witness.jsonl, or a witness's copy): every "
        "checkpoint in it must match the export's tree (ledger export input)",
    )
    parser.add_argument(
        "--no-checkpoint",
        action="store_true",
        help="accept a ledger export that carries no signed checkpoint (it then proves "
        "nothing about completeness)",
    )
    parser.add_argument(
        "--proofs", metavar="FILE", help="JSONL of /api/ledger/proof answers (decisions input)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="processes checking signatures (default: auto)"
    )
    args = parser.parse_args(argv)
    try:
        keys = [key for value in args.public_key for key in load_public_keys(value)]
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    try:
        report = verify_file(
            args.file,
            keys,
            checkpoint_files=args.checkpoint,
            witness_files=args.witness,
            proofs_file=args.proofs,
            require_checkpoint=not args.no_checkpoint,
            workers=args.workers,
        )
    except Failure as failure:
        print(f"FAIL {failure}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        # Anything nested too deeply that a check above did not catch first.
        print(f"FAIL {args.file}: input nested too deeply to check", file=sys.stderr)
        return 1
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(report.summary())
    return 0


if __name__ == "__main__":
    # Run the importable module's main, so worker processes find the same functions.
    from reviewapp.verify import main as _main

    sys.exit(_main())
