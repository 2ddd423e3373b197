"""Signed decisions: each signed alone, and entered in the ledger, which orders them."""

import base64
import json
from dataclasses import dataclass
from typing import NamedTuple

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from reviewapp_client.verify.ledger import (
    ReviewFacts,
    check_review,
    decision_facts,
    named_reviews,
    review_named_problem,
)

from reviewapp.core.signing import Signer, canonical_json, sha256_hex, verify
from reviewapp.ledger.keys import server_signer, trusted_keys, untrusted_key_problem
from reviewapp.ledger.services import (
    ledger_append_record,
    ledger_gap_problem,
    ledger_prepare_record,
    signed_entry,
)

from .. import events
from ..final_notice import proposal_final_notify
from ..in_ledger.rows import DECISION_ROW_COLUMNS, decision_row_mismatches
from ..models import Decision, DecisionAudit, Escalation, Evidence, Proposal, Review
from .annotations import Annotations, annotations_payload, annotations_store
from .audits import audit_problem
from .reviews import SignedReview, review_problem, reviews_named

# Decisions signed before the ledger ordered them alone (v1) chained on this, first.
GENESIS_HASH = "0" * 64
# v2: signed alone; v1 (before) also signed the previous decision's hash (``prev_hash``).
DECISION_PAYLOAD_TYPE = "reviewapp.decision/v2"


def decision_payload(
    *,
    proposal: Proposal,
    outcome: str,
    basis: str,
    rationale: str,
    decided_by: str,
    escalation: Escalation | None,
    decided_at: str,
    evidence: list[Evidence] | None = None,
    lenses: list[dict] | None = None,
    reviews: list[SignedReview] | None = None,
    annotations: Annotations | None = None,
    fallback: dict | None = None,
) -> dict:
    """Everything a decision is bound to, as the dict that gets canonicalised and signed.

    `evidence` and `lenses` (lens_name, lens_version) are read from the
    proposal unless the caller already holds them. A reviewer's annotations
    add their keys only when there are any (see services.annotations).
    `reviews` are the reviews a decision rests on when its escalation needed
    several, as signed; the payload names each (reviewer, outcome,
    review_sha256). A decision without them has no `reviews` key, byte for
    byte what it was before reviews existed.
    `fallback` (on_deadline, due_at, review_deadline_seconds) marks a decision
    no person made: its panel's deadline passed (services.deadlines); only such
    a decision has the key.
    """
    snapshot = proposal.panel_snapshot
    if evidence is None:
        evidence = proposal.evidence.all()
    if lenses is None:
        lenses = list(proposal.judgements.order_by().values("lens_name", "lens_version"))
    evidence_part = [
        {
            "checker": e.checker_name,
            "version": e.checker_version,
            "verdict": e.verdict,
            "payload_sha256": sha256_hex(e.payload.encode()),
        }
        for e in sorted(evidence, key=lambda e: e.checker_name)
    ]
    payload = {
        "type": DECISION_PAYLOAD_TYPE,
        "proposal": {"id": proposal.pk, "content_sha256": proposal.content_sha256},
        "panel": {
            "name": snapshot["name"],
            "version": snapshot["version"],
            "need": snapshot["need"],
        },
        "lenses": sorted(lenses, key=lambda lens: lens["lens_name"]),
        "tally": proposal.tally,
        "evidence": evidence_part,
        "escalation": (
            {"id": escalation.pk, "reasons": escalation.reasons} if escalation else None
        ),
        "outcome": outcome,
        "basis": basis,
        "decided_by": decided_by,
        "rationale": rationale,
        "decided_at": decided_at,
        **annotations_payload(annotations),
    }
    if reviews is not None:
        payload["reviews"] = reviews_named(reviews)
    if fallback is not None:
        payload["fallback"] = fallback
    return payload


def decision_append(
    *,
    proposal: Proposal,
    outcome: str,
    basis: str,
    rationale: str,
    decided_by_user=None,
    decided_by_name: str = "system",
    escalation: Escalation | None = None,
    signer: Signer | None = None,
    evidence: list[Evidence] | None = None,
    lenses: list[dict] | None = None,
    evidence_is_new: bool = False,
    reviews: list[SignedReview] | None = None,
    annotations: Annotations | None = None,
    fallback: dict | None = None,
) -> Decision:
    """Sign and store a decision. Raises IntegrityError if the proposal already has one.

    The final step passes what it already holds: its signer, the evidence and
    lenses the payload binds, and with `evidence_is_new` the evidence it
    stored in this transaction, which enters the ledger with the decision.
    """
    signer = signer or server_signer()
    decision = Decision(
        proposal=proposal,
        escalation=escalation,
        outcome=outcome,
        basis=basis,
        decided_by=decided_by_user,
        decided_by_name=decided_by_name,
        rationale=rationale,
    )
    prepared: dict = {}  # what receivers read before the decision is stored
    events.decision_preparing.send(sender=Decision, proposal=proposal, prepared=prepared)
    # No savepoint inside a caller's transaction: nothing here is retried, and
    # a failure must roll back the caller's writes as well.
    with transaction.atomic(savepoint=False):
        payload = decision_payload(
            proposal=proposal,
            outcome=outcome,
            basis=basis,
            rationale=rationale,
            decided_by=decided_by_name,
            escalation=escalation,
            decided_at=timezone.now().isoformat(),
            evidence=evidence,
            lenses=lenses,
            reviews=reviews,
            annotations=annotations,
            fallback=fallback,
        )
        signed = signer.sign(payload)
        decision.payload = signed.payload_bytes.decode()
        decision.signature = signed.signature_b64
        decision.key_id = signed.key_id
        decision.hash = sha256_hex(signed.payload_bytes)
        # Same transaction: a decision exists exactly when its ledger entry does. The
        # entry (after the decision's new evidence) waits for its index from the
        # sequencer, woken when this commits; the tree is built by the next checkpoint.
        ledger_append_record(
            ledger_prepare_record(
                record=decision,
                kind="decision",
                evidence=[signed_entry("evidence", e) for e in evidence] if evidence_is_new else [],
            )
        )
        annotations_store(decision=decision, annotations=annotations)
        # The outbox row and a reviewer's human labels commit with the decision.
        events.decision_appended.send(sender=Decision, decision=decision, prepared=prepared)
        proposal_final_notify(proposal_id=proposal.pk)  # sent after commit
    return decision


def decision_signature_valid(decision: Decision, keys: dict[str, bytes] | None = None) -> bool:
    """Verify from the stored bytes and a trusted public key alone (a trust anchor)."""
    public_key = (trusted_keys() if keys is None else keys).get(decision.key_id)
    if public_key is None:
        return False
    try:
        signature = base64.b64decode(decision.signature, validate=True)
    except ValueError:
        return False
    return verify(decision.payload.encode(), signature, public_key)


@dataclass(frozen=True)
class DecisionCheck:
    """A decision re-checked from its stored bytes and a trusted public key alone."""

    signature_ok: bool
    hash_ok: bool
    canonical_ok: bool
    # Row columns that no longer say what the signed bytes say.
    mismatched: tuple[str, ...]
    # The signing key, when it is not a trust anchor (then the signature is not ok).
    untrusted_key: str | None = None
    # How a review the decision names fails it (changed, removed, or not what it names).
    reviews_problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def problem(self) -> str | None:
        if not self.hash_ok:
            return "stored hash does not match its signed bytes"
        if self.untrusted_key:
            return untrusted_key_problem(self.untrusted_key)
        if not self.signature_ok:
            return "signature does not verify"
        if not self.canonical_ok:
            return "signed bytes are not canonical JSON"
        if self.mismatched:
            return f"row differs from its signed bytes in {', '.join(self.mismatched)}"
        return self.reviews_problem


def decision_check(
    decision: Decision,
    keys: dict[str, bytes] | None = None,
    reviews: dict[str, tuple[Review, str | None]] | None = None,
) -> DecisionCheck:
    """``keys``: the trusted keys, and ``reviews`` (``reviews_checked``), when the caller
    checks many decisions (default: read them, and the reviews of its escalation)."""
    keys = trusted_keys() if keys is None else keys
    payload_bytes = decision.payload.encode()
    try:
        signed = json.loads(payload_bytes)
        canonical_ok = isinstance(signed, dict) and canonical_json(signed) == payload_bytes
    except ValueError:
        signed, canonical_ok = {}, False
    if not isinstance(signed, dict):
        signed = {}
    mismatched = decision_row_mismatches(
        {column: getattr(decision, column) for column, _ in DECISION_ROW_COLUMNS},
        decision_facts(payload_bytes, signed),
    )
    named, problem = named_reviews(signed)
    if named and problem is None:
        if reviews is None:
            rows = Review.objects.filter(escalation=decision.escalation_id)
            reviews = reviews_checked(keys, rows)
            problem = next(filter(None, (c.failure for c in reviews.values())), None)
        problem = problem or _named_reviews_problem(named, reviews)
    return DecisionCheck(
        signature_ok=decision_signature_valid(decision, keys),
        hash_ok=sha256_hex(payload_bytes) == decision.hash,
        canonical_ok=canonical_ok,
        mismatched=tuple(mismatched),
        untrusted_key=None if decision.key_id in keys else decision.key_id,
        reviews_problem=problem,
    )


class ReviewCheck(NamedTuple):
    where: str  # "review 3 by ann"
    facts: ReviewFacts | None  # what it signed, if its signature verifies
    problem: str | None  # how it fails (``review_problem``)

    @property
    def failure(self) -> str | None:
        return f"{self.where}: {self.problem}" if self.problem else None


def reviews_checked(keys, rows=None) -> dict[str, ReviewCheck]:
    """Each stored review (``rows``, default all) checked, by the SHA-256 of its signed bytes."""
    checked = {}
    for review in (Review.objects.all() if rows is None else rows).order_by("id").iterator():
        facts, _ = check_review(review.payload, review.signature, review.key_id, keys)
        checked[sha256_hex(review.payload.encode())] = ReviewCheck(
            f"review {review.pk} by {review.reviewer_name}", facts, review_problem(review, keys)
        )
    return checked


def _named_reviews_problem(named, reviews: dict[str, ReviewCheck]) -> str | None:
    for digest, expected in named:
        check = reviews.get(digest)
        problem = (check and check.failure) or review_named_problem(
            digest, expected, check and check.facts
        )
        if problem:
            return problem
    return None


@dataclass(frozen=True)
class ChainVerification:
    decisions: int  # verified before the problem, if any
    reviews: int
    audits: int
    problem: str | None


def decisions_verify_chain() -> ChainVerification:
    """Re-verify every review and audit verdict, then every decision in order (each with the
    reviews it names, its ledger entry, and the v1 chain); stops at the first problem."""
    keys = trusted_keys()
    reviews = reviews_checked(keys)
    problem = next(filter(None, (c.failure for c in reviews.values())), None)
    audits = 0
    for audit in DecisionAudit.objects.select_related("decision").order_by("id").iterator():
        if problem:
            break
        problem = audit_problem(audit, keys)
        problem = problem and f"audit verdict {audit.pk} on decision {audit.decision_id}: {problem}"
        audits += 1
    if problem:
        return ChainVerification(0, len(reviews), audits, problem)
    checked, problem = _verify_chain(keys, reviews)
    problem = problem or ledger_gap_problem()
    return ChainVerification(checked, len(reviews), audits, problem)


def _verify_chain(keys, reviews) -> tuple[int, str | None]:
    """Each decision, in id order: its own check, an entry in the ledger (the database
    allows it one), and, for those signed before v2, the hash chain they form."""
    expected_prev = GENESIS_HASH
    checked = 0
    rows = Decision.objects.annotate(entry_id=F("ledger_entry__id"))
    for decision in rows.order_by("id").iterator(chunk_size=1000):
        label = f"decision {decision.pk} (proposal {decision.proposal_id})"
        problem = decision_check(decision, keys, reviews).problem
        if problem:
            return checked, f"{label}: {problem}"
        if decision.entry_id is None:
            return checked, f"{label}: is not in the ledger"
        if decision.prev_hash is not None:  # a v1 decision: in the chain
            if decision.prev_hash != expected_prev:
                return checked, f"{label}: chain broken, expected previous hash {expected_prev}"
            expected_prev = decision.hash
        checked += 1
    return checked, None
