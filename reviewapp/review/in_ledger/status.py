"""A decision's place in the ledger, re-verified for the proposal page."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from reviewapp_client.verify.ledger import bound_evidence

from reviewapp.core import merkle
from reviewapp.core.signing import sha256_hex, verify
from reviewapp.ledger.cosigning import cosigned_checkpoint_covering, witness_policy
from reviewapp.ledger.keys import public_key_for, trusted_keys, untrusted_key_problem
from reviewapp.ledger.models import LedgerEntry
from reviewapp.ledger.services import inclusion_proof, latest_checkpoint

from ..models import Decision, Evidence


def ledger_position_for_decision(decision: Decision) -> int | None:
    """The decision's leaf index in the ledger, or None if it is not in it or not yet
    sequenced."""
    return (
        LedgerEntry.objects.filter(decision_id=decision.pk)
        .values_list("leaf_index", flat=True)
        .first()
    )


@dataclass(frozen=True)
class DecisionLedgerStatus:
    """What the proposal page shows next to a decision."""

    position: int | None
    verified: bool
    checkpoint_size: int | None
    detail: str


def decision_ledger_status(decision: Decision) -> DecisionLedgerStatus:
    """Re-verify one decision: signature, leaf, and inclusion in the latest checkpoint.

    A decision whose entry waits for its index is verified as signed (position None).
    """
    entry = LedgerEntry.objects.filter(decision_id=decision.pk).first()
    if entry is None:
        return DecisionLedgerStatus(None, False, None, "not in the ledger")
    position = entry.leaf_index
    expected = merkle.entry_bytes("decision", decision.payload, decision.signature, decision.key_id)
    if entry.entry.encode() != expected or merkle.leaf_hash(expected).hex() != entry.leaf_hash:
        return DecisionLedgerStatus(position, False, None, "differs from its ledger entry")
    public_key = public_key_for(decision.key_id)
    if public_key is None:
        return DecisionLedgerStatus(position, False, None, untrusted_key_problem(decision.key_id))
    if not verify(decision.payload.encode(), _b64(decision.signature), public_key):
        return DecisionLedgerStatus(position, False, None, "signature does not verify")
    missing = _missing_evidence(decision)
    if missing:
        return DecisionLedgerStatus(
            position, False, None, f"its signed evidence from {missing} is not in the ledger"
        )
    if position is None:
        return DecisionLedgerStatus(
            None, True, None, "signature verified; its ledger index is being assigned"
        )
    checkpoint = latest_checkpoint()
    if checkpoint is None or checkpoint.tree_size <= position:
        return DecisionLedgerStatus(
            position, True, None, "signature verified; not yet covered by a checkpoint"
        )
    witnessed = ""
    if witness_policy() is not None:
        cosigned, problem = cosigned_checkpoint_covering(position)
        if cosigned is None:
            return DecisionLedgerStatus(
                position, False, checkpoint.tree_size, f"not in a witnessed checkpoint: {problem}"
            )
        checkpoint, witnessed = cosigned, ", cosigned by enough witnesses"
    try:
        signed = merkle.open_checkpoint(checkpoint.note, trusted_keys().values())
        proof = inclusion_proof(position, signed.size)
    except (merkle.NoteError, merkle.ProofError, LookupError) as exc:
        return DecisionLedgerStatus(position, False, checkpoint.tree_size, f"checkpoint: {exc}")
    if not merkle.verify_inclusion(
        position, signed.size, bytes.fromhex(entry.leaf_hash), proof, signed.root
    ):
        return DecisionLedgerStatus(
            position, False, signed.size, "not included in the latest checkpoint"
        )
    return DecisionLedgerStatus(
        position,
        True,
        signed.size,
        f"signature and inclusion in checkpoint {signed.size}{witnessed} verified",
    )


def _missing_evidence(decision: Decision) -> str | None:
    """The checker of the first piece of evidence the decision signed that the ledger lacks."""
    bound = bound_evidence(json.loads(decision.payload).get("evidence")) or ()
    if not bound:
        return None
    entries = LedgerEntry.objects.filter(
        kind=LedgerEntry.Kind.EVIDENCE,
        evidence_id__in=Evidence.objects.filter(proposal_id=decision.proposal_id).values("pk"),
    ).values_list("entry", flat=True)
    present = {sha256_hex(json.loads(text)["payload"].encode()) for text in entries}
    return next((checker for checker, digest in bound if digest not in present), None)


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return b""
