"""`verify_ledger`: recompute the whole ledger from the database and trust nothing stored.

Checks, in ledger order, and stops at the first problem, naming the entry:

- every entry's signature (with the trust anchors, never the key rows), its leaf hash and
  its canonical encoding — via the offline verifier's own code
  (``reviewapp_client.verify``), so the server and an outside auditor agree;
- that the decision or evidence row it records still says what was signed
  (payload, signature, key, and the readable columns: outcome, basis,
  rationale, decided by, proposal; checker, version, verdict, reason);
- that each decision is in the log once, and the hash chain of the decisions
  signed before v2 (``reviewapp.decision/v1``), in ledger order;
- every stored subtree hash, recomputed from the entries below it, and
  every subtree within the latest checkpoint stored (those beyond it are
  integrated by the next checkpoint);
- every checkpoint: its signature, and its root against the recomputed tree
  at its size;
- every checkpoint in the witness log (outside the database): the tree must
  have reached its size, with its root there — so deleting records together
  with the checkpoints that covered them is caught;
- every decision's signed evidence digests against the evidence entries
  before it (via ``reviewapp_client.verify``);
- every review (its signature, and its row against what was signed) and every
  review a decision names, as it names it; every audit verdict;
- with a witness policy (REVIEWAPP_LEDGER_WITNESS_QUORUM), the latest
  checkpoint's cosignatures, re-verified against the configured witness keys:
  too few fails, naming the witnesses missing;

then the entries still waiting for their index (each checked by itself, as
above; a warning, and a failure only if one is a decision already in the log),
and that every decision and piece of evidence is in the ledger at all.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from reviewapp_client.verify.files import read_witness_file
from reviewapp_client.verify.ledger import PARALLEL_THRESHOLD, Failure, LedgerVerifier, ordered_map

from reviewapp.core import cosignature, merkle
from reviewapp.ledger import cosigning, immutability, services
from reviewapp.ledger.keys import trusted_keys
from reviewapp.ledger.models import LedgerCheckpoint, LedgerNode, SigningKey

from ..models import Decision, DecisionAudit, Evidence, RecordEntry
from ..services.audits import audit_problem
from ..services.decisions import reviews_checked
from .rows import LEDGER_ROW_FIELDS, check_ledger_rows

CONTEXT_FIELDS = (
    "leaf_index",
    "kind",
    "leaf_hash",
    "decision_id",
    "decision__proposal_id",
    "evidence_id",
    "evidence__checker_name",
)


@dataclass
class LedgerVerification:
    entries: int = 0
    decisions: int = 0
    evidence: int = 0
    reviews: int = 0
    audits: int = 0
    checkpoints: int = 0
    # Entries committed but not yet given their index by the sequencer.
    waiting: int = 0
    problem: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Key rows in the database that are not trust anchors (harmless unless they signed).
    untrusted_rows: list[str] = field(default_factory=list)
    # The witnesses whose cosignature of the latest checkpoint met the policy (if one is set).
    cosigned_by: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.problem is None


def _where(context: tuple) -> str:
    index, kind, _, decision_id, proposal_id, evidence_id, checker = context
    label = "ledger entry waiting for its index" if index is None else f"ledger entry {index}"
    if kind == "decision" and decision_id is not None:
        label += f" (decision {decision_id}, proposal {proposal_id})"
    elif kind == "evidence" and evidence_id is not None:
        label += f" (evidence {evidence_id}, checker {checker})"
    return label


def ledger_verify(
    *, workers: int | None = None, witness_files: list[str] | None = None
) -> LedgerVerification:
    """Verify everything; ``result.problem`` names the first bad record, or is None.

    ``witness_files``: witness logs to check against besides the configured
    REVIEWAPP_LEDGER_WITNESS_FILE (e.g. the checkpoints a witness URL kept).
    """
    result = LedgerVerification()
    try:
        _verify(result, workers, witness_files or [])
    except Failure as failure:
        result.problem = str(failure)
    return result


def _witnessed(
    verifier: LedgerVerifier, extra: list[str], result: LedgerVerification
) -> list[tuple[str, merkle.Checkpoint, str]]:
    paths = list(extra)
    configured = settings.REVIEWAPP_LEDGER_WITNESS_FILE
    if configured and Path(configured).exists():
        paths.insert(0, configured)
    elif LedgerCheckpoint.objects.exists():
        missing = (
            f"no witness log at {configured}"
            if configured
            else "no witness log is configured (REVIEWAPP_LEDGER_WITNESS_FILE is empty)"
        )
        if settings.REVIEWAPP_LEDGER_REQUIRE_WITNESS and not extra:
            # In production the log outside the database is what catches history
            # rewritten together with its checkpoints: without it, nothing verified that.
            raise Failure(
                "witness log",
                f"{missing}, yet checkpoints were signed: point REVIEWAPP_LEDGER_WITNESS_FILE at "
                "the log every process appends to, or pass --witness FILE",
            )
        if configured:
            result.warnings.append(f"{missing}: checkpoints cannot be checked against it")
    opened = []
    for path in paths:
        try:
            lines = read_witness_file(path)
        except OSError as exc:
            raise Failure(f"witness log {path}", f"cannot be read ({exc})") from exc
        for where, note in lines:
            opened.append((where, verifier.open_checkpoint(where, note), note))
    return opened


def _verify(result: LedgerVerification, workers: int | None, witness_files: list[str]) -> None:
    keys = trusted_keys()
    result.untrusted_rows = sorted(
        set(SigningKey.objects.values_list("key_id", flat=True)) - set(keys)
    )
    verifier = LedgerVerifier(keys)
    _take_reviews_and_audits(verifier, keys, result)

    pending: dict[int, list[tuple[str, merkle.Checkpoint]]] = {}
    for cp in LedgerCheckpoint.objects.order_by("tree_size", "id"):
        where = f"checkpoint {cp.pk} (size {cp.tree_size}, key {cp.key_id})"
        signed = verifier.open_checkpoint(where, cp.note)
        if (signed.origin, signed.size, signed.root_hex) != (cp.origin, cp.tree_size, cp.root_hash):
            raise Failure(where, "the row differs from its signed note")
        pending.setdefault(signed.size, []).append((where, signed))
    witnessed_notes = set()
    for where, signed, note in _witnessed(verifier, witness_files, result):
        pending.setdefault(signed.size, []).append((where, signed))
        witnessed_notes.add(note)

    def settle() -> None:
        for where, signed in pending.pop(verifier.size, []):
            verifier.check_root(where, signed)

    settle()
    stored_nodes = {
        (level, index): h
        for level, index, h in LedgerNode.objects.values_list("level", "node_index", "hash")
    }
    total = RecordEntry.objects.count()
    if workers is None:
        workers = min(2, multiprocessing.cpu_count()) if total >= PARALLEL_THRESHOLD else 1

    seen_nodes = 0
    # Subtrees beyond the latest checkpoint are stored when the next one integrates them.
    integrated = services.integrated_size()
    fields = CONTEXT_FIELDS + LEDGER_ROW_FIELDS
    width = len(CONTEXT_FIELDS)

    def records():
        rows = (
            RecordEntry.objects.filter(leaf_index__isnull=False)
            .order_by("leaf_index")
            .values_list(*fields)
        )
        for row in rows.iterator(chunk_size=2000):
            context = row[:width]
            yield context, (context[1], row[width:])

    for context, (checked, row_problem) in ordered_map(
        check_ledger_rows, records(), keys, workers=workers
    ):
        index, kind, leaf_hash = context[:3]
        where = _where(context)
        created = verifier.entry(where, index, kind, leaf_hash, checked)
        if row_problem:
            raise Failure(where, row_problem)
        for level, node_index, h in created:
            stored = stored_nodes.get((level, node_index))
            if stored is None and (node_index + 1) << level > integrated:
                continue
            if stored != h.hex():
                first, last = node_index << level, ((node_index + 1) << level) - 1
                state = "is missing" if stored is None else "does not match them"
                raise Failure(
                    where,
                    f"entries {first}–{last} were changed, reordered or removed: their stored "
                    f"subtree hash (level {level}, index {node_index}) {state}",
                )
            seen_nodes += 1
        settle()

    result.entries = verifier.size
    result.decisions, result.evidence = verifier.decisions, verifier.evidence
    for size, waiting in sorted(pending.items()):
        where, _ = waiting[0]
        raise Failure(
            where,
            f"signed for size {size}, but the ledger holds only {verifier.size} entries: "
            "entries were removed",
        )
    result.checkpoints = verifier.checkpoints
    if witness_files or settings.REVIEWAPP_LEDGER_WITNESS_FILE:
        unwitnessed = [
            size
            for note, size in LedgerCheckpoint.objects.values_list("note", "tree_size")
            if note not in witnessed_notes
        ]
        if unwitnessed:
            result.warnings.append(
                f"{len(unwitnessed)} checkpoint(s) are not in the witness log (sizes "
                f"{', '.join(map(str, sorted(unwitnessed)[:5]))}"
                f"{', …' if len(unwitnessed) > 5 else ''})"
            )
    if len(stored_nodes) != seen_nodes:
        level, index = min(set(stored_nodes) - _all_nodes(verifier.size))
        first, last = index << level, ((index + 1) << level) - 1
        raise Failure(
            f"ledger entries {first}–{last}",
            f"entries were removed from the end: their subtree hash (level {level}, index {index}) "
            f"is stored, but the ledger ends with entry {verifier.size - 1}",
        )
    _check_witness_policy(result)
    _check_waiting(verifier, keys, result)
    missing = Decision.objects.filter(ledger_entry__isnull=True).order_by("id").first()
    if missing is not None:
        raise Failure(
            f"decision {missing.pk} (proposal {missing.proposal_id})", "is not in the ledger"
        )
    missing = Evidence.objects.filter(ledger_entry__isnull=True).order_by("id").first()
    if missing is not None:
        raise Failure(
            f"evidence {missing.pk} (checker {missing.checker_name})", "is not in the ledger"
        )
    _warnings(result)


def _check_waiting(verifier: LedgerVerifier, keys, result: LedgerVerification) -> None:
    """Entries without an index yet: each one's signature and row, and no decision twice."""
    fields = CONTEXT_FIELDS + LEDGER_ROW_FIELDS
    width = len(CONTEXT_FIELDS)
    rows = RecordEntry.objects.filter(leaf_index__isnull=True).order_by("id").values_list(*fields)
    for row in rows.iterator(chunk_size=2000):
        context = row[:width]
        where = _where(context)
        [(checked, row_problem)] = check_ledger_rows([(context[1], row[width:])], keys)
        problem = checked.problem or row_problem
        if not problem and context[1] == "decision":
            first = verifier.decisions_seen.get(bytes.fromhex(checked.hash))
            problem = first is not None and f"this decision is in the log already, entry {first}"
        if problem:
            raise Failure(where, problem)
        result.waiting += 1


def _take_reviews_and_audits(verifier: LedgerVerifier, keys, result: LedgerVerification) -> None:
    """Check every review and audit verdict first; the decisions naming reviews are then
    checked against them entry by entry, as the offline verifier does with an export's."""
    for digest, check in reviews_checked(keys).items():
        verifier.review(check.where, digest, check.facts, check.problem)
    result.reviews = verifier.reviews
    for audit in DecisionAudit.objects.select_related("decision").order_by("id").iterator():
        problem = audit_problem(audit, keys)
        if problem:
            raise Failure(f"audit verdict {audit.pk} on decision {audit.decision_id}", problem)
        result.audits += 1


def _check_witness_policy(result: LedgerVerification) -> None:
    policy = cosigning.witness_policy()
    latest = LedgerCheckpoint.objects.order_by("-tree_size", "-id").first()
    if policy is None or latest is None:
        return
    problem = cosigning.checkpoint_policy_problem(latest, policy)
    if problem:
        raise Failure(
            f"checkpoint {latest.pk} (size {latest.tree_size})",
            f"{problem} (REVIEWAPP_LEDGER_WITNESS_QUORUM; a checkpoint signed seconds ago may "
            "still await its witnesses: see the admin's ledger witnesses and /healthz)",
        )
    note = services.checkpoint_note_with_cosignatures(latest)
    result.cosigned_by = cosignature.note_policy_check(policy, note).cosigned


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
        result.warnings.append(
            "no checkpoint has been signed yet (run `manage.py ledger_checkpoint`)"
        )
    elif latest < result.entries:
        result.warnings.append(
            f"{result.entries - latest} entries are not yet covered by a signed checkpoint"
        )
    if result.waiting:
        result.warnings.append(
            f"{result.waiting} entries wait for their index from the sequencer (checked "
            "by themselves; their place in the log is checked once they have one)"
        )
    if result.untrusted_rows:
        result.warnings.append(
            "key rows that are not trust anchors (nothing verified was signed by them): "
            + ", ".join(result.untrusted_rows)
        )
    missing = immutability.missing_triggers(connection)
    if missing:
        result.warnings.append(
            "append-only triggers are missing or disabled on: " + ", ".join(missing)
        )
