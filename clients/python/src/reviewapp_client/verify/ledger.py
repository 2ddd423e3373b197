"""One signed ledger record checked on its own, and the ledger rebuilt from them in order.

The checks an export, the API's decisions and the server's own
``manage.py verify_ledger`` share: a record's signature, canonical bytes and
payload (``check_entry``, run in worker processes for large inputs by
``ordered_map``), then its place in the tree (``LedgerVerifier``, in the main
process): each decision in it exactly once, and the decisions signed before the
log ordered them alone (``reviewapp.decision/v1``) still in their hash chain.
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
# v2 is signed alone; v1 (every decision signed before v2) also signs `prev_hash`, the
# previous v1 decision's hash, and those decisions still form that chain.
DECISION_TYPE = "reviewapp.decision/v2"
CHAINED_DECISION_TYPE = "reviewapp.decision/v1"
DECISION_TYPES = (CHAINED_DECISION_TYPE, DECISION_TYPE)
REVIEW_TYPE = "reviewapp.review/v1"
# The escalation reason under which a reconciler decides against some of the reviews.
REVIEWERS_DISAGREE = "reviewers_disagree"
EVIDENCE_SCHEMA = "reviewapp.evidence/1"
BATCH = 500
# Below this many entries a process pool costs more than it saves.
PARALLEL_THRESHOLD = 20000
ENTRY_KEYS = ("kind", "payload", "signature", "key_id")
ANNOTATION_KEYS = ("claims", "tags", "wrong_reason")
# The fields of a decision object that restate its signed bytes (besides hash, prev_hash,
# public_key and reviews, checked each its own way); `id` and `ledger_index` are not signed.
READABLE_FIELDS = ("outcome", "basis", "rationale", "decided_by", "proposal", *ANNOTATION_KEYS)


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
    prev_hash: str | None = None  # v1 decisions: the chain link the signed bytes claim
    hash: str | None = None  # SHA-256 of the signed bytes
    # decisions: (checker, payload SHA-256) of each piece of evidence the decision binds
    evidence: tuple[tuple[str, str], ...] = ()
    # decisions: signed as a deadline's fallback (basis "fallback"), not by a person
    fallback: bool = False
    # decisions: each review it names, as (review SHA-256, what the review must say)
    reviews: tuple[tuple[str, ReviewFacts], ...] = ()


class ReviewFacts(NamedTuple):
    """What a review says, and so what a decision naming it must say of it."""

    reviewer: Any
    outcome: Any
    proposal: Any
    escalation: Any


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
        problem = decision_type_problem(signed)
        if problem:
            return Checked(leaf, problem, label), {}
        facts = decision_facts(payload_bytes, signed)
        evidence = bound_evidence(signed.get("evidence"))
        if evidence is None:
            return Checked(leaf, "a decision whose evidence list is malformed", label), {}
        reviews, problem = named_reviews(signed)
        if problem:
            return Checked(leaf, problem, label), {}
        checked = Checked(
            leaf,
            None,
            label,
            facts["prev_hash"],
            facts["hash"],
            evidence,
            fallback=facts["basis"] == "fallback",
            reviews=reviews,
        )
        return checked, facts
    if signed.get("schema") != EVIDENCE_SCHEMA:
        return Checked(leaf, f"an evidence entry whose payload is not {EVIDENCE_SCHEMA}", label), {}
    if signed.get("key_id") != key_id:
        return Checked(
            leaf, "evidence names a different key than the one that signed it", label
        ), {}
    facts = {k: signed.get(k) for k in ("checker", "version", "verdict", "reason")}
    return Checked(leaf, None, label, hash=sha256_hex(payload_bytes)), facts


def decision_type_problem(signed: dict) -> str | None:
    """A decision's payload is a v2 (no ``prev_hash``) or a v1 (a ``prev_hash`` string)."""
    kind = signed.get("type")
    if kind not in DECISION_TYPES:
        return (
            f"a decision entry whose payload is not a {DECISION_TYPE} "
            f"(or a {CHAINED_DECISION_TYPE})"
        )
    if kind == CHAINED_DECISION_TYPE and not isinstance(signed.get("prev_hash"), str):
        return f"a {CHAINED_DECISION_TYPE} decision without its prev_hash"
    if kind == DECISION_TYPE and "prev_hash" in signed:
        return f"a {DECISION_TYPE} decision that signs a prev_hash"
    return None


def named_reviews(signed: dict) -> tuple[tuple[tuple[str, ReviewFacts], ...], str | None]:
    """The reviews a signed decision names, as (SHA-256, what each must say), or a problem.

    Reviews that agreed make the decision, so each says its outcome; only a
    reconciler (the escalation's reasons say the reviewers disagreed) decides
    against some of them.
    """
    items = signed.get("reviews")
    if items is None:
        return (), None
    escalation = signed.get("escalation")
    if not isinstance(items, list) or not isinstance(escalation, dict):
        return (), "a decision whose reviews list is malformed"
    named = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("review_sha256"), str):
            return (), "a decision whose reviews list is malformed"
        facts = ReviewFacts(
            item.get("reviewer"), item.get("outcome"), signed.get("proposal"), escalation.get("id")
        )
        named.append((item["review_sha256"], facts))
    reconciled = REVIEWERS_DISAGREE in (escalation.get("reasons") or [])
    if not reconciled and any(facts.outcome != signed.get("outcome") for _, facts in named):
        return (), (
            f"a decision {signed.get('outcome')} by agreeing reviews names a review with "
            "another outcome"
        )
    return tuple(named), None


def check_signed_object(
    payload: Any, signature: Any, key_id: Any, keys: Mapping[str, bytes], kind: str
) -> tuple[dict | None, str | None]:
    """A signed record that is no ledger entry (a review, an audit verdict): a trusted key,
    a signature that verifies, canonical JSON of type ``kind``. Returns it, or a problem."""
    if not all(isinstance(v, str) for v in (payload, signature, key_id)):
        return None, "not a signed record (payload, signature, key_id)"
    public_key = keys.get(key_id)
    if public_key is None:
        return None, f"signed by key {key_id}, which is not a trusted public key"
    try:
        payload_bytes = payload.encode()
        raw_signature = base64.b64decode(signature, validate=True)
    except (ValueError, binascii.Error, UnicodeError):
        return None, "signature is not base64"
    if not verify(payload_bytes, raw_signature, public_key):
        return None, f"signature does not verify with key {key_id}"
    try:
        signed = json.loads(payload_bytes)
        canonical = isinstance(signed, dict) and merkle.jcs(signed) == payload_bytes
    except (ValueError, RecursionError):
        canonical = False
    if not canonical:
        return None, "signed bytes are not a canonical JSON object"
    if signed.get("type") != kind:
        return None, f"its payload is not a {kind}"
    return signed, None


def check_review(
    payload: Any, signature: Any, key_id: Any, keys: Mapping[str, bytes]
) -> tuple[ReviewFacts | None, str | None]:
    """A signed review by itself (``check_signed_object``); what it says, or a problem."""
    signed, problem = check_signed_object(payload, signature, key_id, keys, REVIEW_TYPE)
    if problem:
        return None, problem
    return review_facts(signed), None


def review_facts(signed: dict) -> ReviewFacts:
    escalation = signed.get("escalation")
    return ReviewFacts(
        signed.get("reviewer"),
        signed.get("outcome"),
        signed.get("proposal"),
        escalation.get("id") if isinstance(escalation, dict) else None,
    )


def review_named_problem(digest: str, named: ReviewFacts, signed: ReviewFacts | None) -> str | None:
    """How a review differs from the way a decision names it (None: not at all; ``signed``
    None: the review is not there)."""
    if signed is None:
        return f"names review {digest} by {named.reviewer}, which is not there: it was removed"
    differs = [f for f in ReviewFacts._fields if getattr(signed, f) != getattr(named, f)]
    if not differs:
        return None
    return (
        f"names review {digest} by {named.reviewer} with another {', '.join(differs)} than "
        "the review signed"
    )


def check_review_object(
    obj: Any, keys: Mapping[str, bytes]
) -> tuple[str | None, ReviewFacts | None, str | None]:
    """A review as an export or the API carries it: its signed bytes (``check_review``), and
    the fields it restates from them (``reviewer``, ``outcome``, ``hash``), if it has them.
    Returns (SHA-256 of the signed bytes, what it says, problem)."""
    if not isinstance(obj, Mapping):
        return None, None, "not a review (payload, signature, key_id)"
    payload = obj.get("payload")
    facts, problem = check_review(payload, obj.get("signature"), obj.get("key_id"), keys)
    if problem:
        return None, None, problem
    digest = sha256_hex(payload.encode())
    restated = {"reviewer": facts.reviewer, "outcome": facts.outcome, "hash": digest}
    differs = [k for k, signed in restated.items() if k in obj and obj[k] != signed]
    if differs:
        return digest, facts, f"differs from its signed bytes in {', '.join(differs)}"
    return digest, facts, None


def given_reviews_problem(
    named: tuple[tuple[str, ReviewFacts], ...], given: Any, keys: Mapping[str, bytes]
) -> str | None:
    """The reviews that travel with a decision (``given``) against those it names."""
    if given is None:
        given = []
    if not isinstance(given, list):
        return "its reviews are not a list"
    seen: dict[str, ReviewFacts] = {}
    for obj in given:
        digest, facts, problem = check_review_object(obj, keys)
        if problem:
            who = obj.get("reviewer") if isinstance(obj, Mapping) else None
            return f"review{f' by {who}' if who else ''}: {problem}"
        seen[digest] = facts
    names = {digest for digest, _ in named}
    for digest, facts in named:
        problem = review_named_problem(digest, facts, seen.get(digest))
        if problem:
            return problem
    extra = sorted(set(seen) - names)
    if extra:
        return f"carries review {extra[0]}, which the decision does not name"
    return None


def content_problem(signed: Mapping[str, Any], content: str | bytes) -> str | None:
    """Whether ``content`` (the text an agent is about to act on) is what the decision
    ``signed``: its SHA-256 must be the signed proposal's content_sha256."""
    text = content.encode() if isinstance(content, str) else bytes(content)
    proposal = signed.get("proposal")
    signed_digest = proposal.get("content_sha256") if isinstance(proposal, dict) else None
    if sha256_hex(text) == signed_digest:
        return None
    return (
        f"content: the text given is not the one this decision signed (its SHA-256 is "
        f"{sha256_hex(text)}, the signed content_sha256 {signed_digest})"
    )


def carried_fields_problem(
    obj: Mapping[str, Any],
    checked: Checked,
    facts: Mapping[str, Any],
    keys: Mapping[str, bytes],
    *,
    reviews_required: bool,
) -> str | None:
    """How a decision object's fields differ from its signed bytes (``check_entry``'s
    ``facts``), naming the field; only the fields it carries are compared. Its reviews are
    checked when it carries them, or (``reviews_required``) whenever it names some."""
    public_key = obj.get("public_key")
    if public_key is not None and public_key != base64.b64encode(keys[obj["key_id"]]).decode():
        return "public_key differs from the trusted key with that key id"
    if "hash" in obj and obj["hash"] != facts["hash"]:
        return "hash is not the SHA-256 of the signed bytes"
    if "prev_hash" in obj and obj["prev_hash"] != facts["prev_hash"]:
        return "prev_hash differs from the signed bytes"
    mismatched = [name for name in READABLE_FIELDS if name in obj and obj[name] != facts[name]]
    if mismatched:
        return f"differs from its signed bytes in {', '.join(mismatched)}"
    if "reviews" in obj or (reviews_required and checked.reviews):
        problem = given_reviews_problem(checked.reviews, obj.get("reviews"), keys)
        return problem and f"reviews: {problem}"
    return None


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
    """Rebuilds the tree from checked entries, in order: each decision once, the v1 chain."""

    def __init__(
        self, keys: Mapping[str, bytes], *, start: int = 0, frontier: Iterable[bytes] = ()
    ) -> None:
        self.keys = dict(keys)
        self.compact = merkle.CompactRange(start, list(frontier))
        self.start = start
        # The last v1 decision's hash: each v1 decision chains on the one before it
        # (v2 decisions, signed alone, between or after them). Before the first
        # decision of a partial export the chain's tail is unknown.
        self.prev_hash: str | None = GENESIS_HASH if start == 0 else None
        # Each decision's hash and where it was first seen: a decision is in the log once.
        self.decisions_seen: dict[bytes, int] = {}
        self.decisions = 0
        self.fallbacks = 0
        self.evidence = 0
        self.checkpoints = 0
        # Payload digests of the evidence entries so far: every decision's must be among them.
        self.evidence_seen: set[str] = set()
        # A partial export cannot show evidence from before its start: counted, not failed.
        self.evidence_unseen = 0
        # Reviews checked so far, by the SHA-256 of their signed bytes.
        self.reviews_seen: dict[str, ReviewFacts] = {}
        # Whether a decision may name a review not given (an export older than reviews in it).
        self.reviews_optional = False
        self.reviews_unseen = 0
        self.reviews = 0

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
            self._once(where, index, checked)
            chained = checked.prev_hash is not None
            if chained and self.prev_hash is not None and checked.prev_hash != self.prev_hash:
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
            self._named_reviews(where, checked)
            if chained:
                self.prev_hash = checked.hash
            self.decisions += 1
            self.fallbacks += checked.fallback
        else:
            self.evidence_seen.add(checked.hash)
            self.evidence += 1
        return self.compact.append(checked.leaf)

    def _once(self, where: str, index: int, checked: Checked) -> None:
        first = self.decisions_seen.setdefault(bytes.fromhex(checked.hash), index)
        if first != index:
            raise Failure(where, f"this decision is in the log twice: it is entry {first} too")

    def review(self, where: str, digest: str, facts: ReviewFacts | None, problem: str | None):
        """Take a review (checked by ``check_review``) that a later decision may name."""
        if problem:
            raise Failure(where, problem)
        self.reviews_seen[digest] = facts
        self.reviews += 1

    def _named_reviews(self, where: str, checked: Checked) -> None:
        for digest, named in checked.reviews:
            signed = self.reviews_seen.get(digest)
            if signed is None and self.reviews_optional:
                self.reviews_unseen += 1
                continue
            problem = review_named_problem(digest, named, signed)
            if problem:
                raise Failure(where, problem)

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
