"""One signed ledger record checked on its own, and the ledger rebuilt from them in order.

The checks an export, the API's decisions and the server's own
``manage.py verify_ledger`` share: a record's signature, canonical bytes and
payload (``check_entry``, run in worker processes for large inputs by
``ordered_map``), then its place in the tree and the decision chain
(``LedgerVerifier``, in the main process).
"""

from __future__ import annotations

import base64
import binascii
import json
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any, NamedTuple

from . import merkle
from .signing import sha256_hex, verify

GENESIS_HASH = "0" * 64
DECISION_TYPE = "reviewapp.decision/v1"
EVIDENCE_SCHEMA = "reviewapp.evidence/1"
BATCH = 500
# Below this many entries a process pool costs more than it saves.
PARALLEL_THRESHOLD = 20000
ENTRY_KEYS = ("kind", "payload", "signature", "key_id")
ANNOTATION_KEYS = ("claims", "tags", "wrong_reason")


def loads(text: str | bytes) -> Any:
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
    # decisions: signed as a deadline's fallback (basis "fallback"), not by a person
    fallback: bool = False


def _label(kind: str, signed: Any) -> str:
    """What names an entry in messages; read before anything is trusted."""
    if not isinstance(signed, dict):
        return ""
    if kind == "decision":
        proposal = signed.get("proposal")
        if isinstance(proposal, dict) and proposal.get("id") is not None:
            # A fallback is named so wherever it is reported: no person made it.
            what = "fallback decision" if signed.get("basis") == "fallback" else "decision"
            return f"{what} for proposal {proposal['id']}"
        return ""
    return f"evidence from {signed['checker']}" if signed.get("checker") else ""


def decision_facts(payload_bytes: bytes, signed: dict) -> dict[str, Any]:
    """What a decision's signed bytes say about the columns that restate them."""
    proposal = signed.get("proposal")
    return {
        "hash": sha256_hex(payload_bytes),
        "prev_hash": signed.get("prev_hash"),
        "proposal": proposal.get("id") if isinstance(proposal, dict) else None,
        **{k: signed.get(k) for k in ("outcome", "basis", "rationale", "decided_by")},
        # A reviewer's annotations: keys present only when given, so absent means none.
        **{k: signed.get(k, []) for k in ANNOTATION_KEYS},
    }


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
        fallback = facts["basis"] == "fallback"
        return Checked(
            leaf, None, label, facts["prev_hash"], facts["hash"], evidence, fallback
        ), facts
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
        self.fallbacks = 0
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
            self.fallbacks += checked.fallback
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
