"""Checkpoints: the integrator signs each new tree head, and what serves them."""

from __future__ import annotations

from datetime import UTC

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp.core import merkle

from ..keys import server_signer
from ..models import LedgerCheckpoint
from ..witness import checkpoint_witness
from .sequence import ledger_sequence
from .tree import integrate, integrator_lock, root_at

DEFAULT_ORIGIN = "reviewapp.local/ledger"


def ledger_origin() -> str:
    """The log's name: the checkpoint origin line and the note key name."""
    return settings.REVIEWAPP_LEDGER_ORIGIN or DEFAULT_ORIGIN


def checkpoint_create(*, only_if_grown: bool = False) -> LedgerCheckpoint | None:
    """Integrate the entries sequenced since the last checkpoint, and sign the new tree head.

    Sequences first whatever committed entry still waits for its index (in
    its own transactions). The integrator: one transaction, so a crash leaves either both the new
    subtree hashes and the checkpoint or neither, and the next run starts
    again from the last checkpoint. Appends go on meanwhile (this never takes
    their lock). With ``only_if_grown``, None if nothing was appended since.
    """
    signer = server_signer()
    origin = ledger_origin()
    ledger_sequence()
    with transaction.atomic():
        integrator_lock()
        latest = LedgerCheckpoint.objects.order_by("-tree_size", "-id").first()
        size = integrate(latest.tree_size if latest else 0)
        if only_if_grown and latest is not None and latest.tree_size == size:
            return None
        root = root_at(size)
        now = timezone.now().replace(microsecond=0)
        stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        checkpoint = merkle.Checkpoint(origin, size, root, (f"timestamp {stamp}",))
        note = merkle.sign_checkpoint(checkpoint, signer.public_key, signer.sign_bytes)
        row = LedgerCheckpoint.objects.create(
            origin=origin,
            tree_size=size,
            root_hash=root.hex(),
            timestamp=now,
            note=note,
            key_id=signer.key_id,
        )
        checkpoint_witness(checkpoint_id=row.pk, tree_size=size, note=note)
        return row


def latest_checkpoint() -> LedgerCheckpoint | None:
    return LedgerCheckpoint.objects.order_by("-tree_size", "-id").first()


def checkpoint_note_with_cosignatures(checkpoint: LedgerCheckpoint) -> str:
    """The signed note with every stored witness cosignature appended (C2SP tlog-cosignature).

    Verifiers that know none of the witnesses ignore the extra lines, as
    signed-note requires; the cosignatures are stored only once they verified. (``.all()``,
    in the model's order, so an export's prefetched rows serve it.)
    """
    return checkpoint.note + "".join(c.line + "\n" for c in checkpoint.cosignatures.all())


def checkpoint_json(checkpoint: LedgerCheckpoint) -> dict:
    cosignatures = checkpoint.cosignatures.all()
    return {
        "origin": checkpoint.origin,
        "tree_size": checkpoint.tree_size,
        "root_hash": checkpoint.root_hash,
        "timestamp": checkpoint.timestamp.isoformat(),
        "key_id": checkpoint.key_id,
        "checkpoint": checkpoint_note_with_cosignatures(checkpoint),
        "cosignatures": [
            {"witness": c.witness, "key_id": c.key_id, "timestamp": c.timestamp}
            for c in cosignatures
        ],
    }
