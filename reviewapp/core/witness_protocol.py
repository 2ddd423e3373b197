"""A witness's judgement of one C2SP tlog-witness ``add-checkpoint`` request (pure).

``judge`` applies the specification's checks in its order: a malformed body
is 400, an unknown origin 404, no valid signature by a key trusted for that
origin 403, an old size beyond the checkpoint's 400, an old size other than
the latest cosigned one 409 (with that size), a same-size checkpoint with a
different root 409, a consistency proof that does not verify 422. Whoever
calls it holds the witness's state lock from reading ``latest`` until the
accepted checkpoint is persisted: checking and recording must be one step,
or two requests could roll the witness's view of a log back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from . import merkle
from .cosignature import (
    LOG_KEY_TYPE,
    CosignatureError,
    VerifierKey,
    parse_add_checkpoint,
    parse_vkey,
)
from .signing import verify


@dataclass(frozen=True)
class WitnessedLog:
    """A log this witness cosigns: its origin line and the note keys it signs with."""

    origin: str
    keys: tuple[VerifierKey, ...]


def parse_log(text: str) -> WitnessedLog:
    """``<vkey>`` (the origin is the key's name) or ``<origin> <vkey>``."""
    fields = text.split()
    if len(fields) not in (1, 2):
        raise CosignatureError(f"{text!r} is neither `<vkey>` nor `<origin> <vkey>`")
    key = parse_vkey(fields[-1], key_type=LOG_KEY_TYPE)
    return WitnessedLog(fields[0] if len(fields) == 2 else key.name, (key,))


def logs_by_origin(logs: list[WitnessedLog]) -> dict[str, WitnessedLog]:
    """Several keys for one origin (a rotated log key) make one entry."""
    merged: dict[str, WitnessedLog] = {}
    for log in logs:
        known = merged.get(log.origin)
        keys = (known.keys if known else ()) + log.keys
        merged[log.origin] = WitnessedLog(log.origin, keys)
    return merged


@dataclass(frozen=True)
class Latest:
    """The latest checkpoint a witness cosigned for one origin."""

    size: int
    root: bytes


@dataclass(frozen=True)
class Refused:
    status: int
    reason: str
    latest_size: int | None = None  # a 409's body


@dataclass(frozen=True)
class Accepted:
    origin: str
    size: int
    root: bytes
    text: str  # the checkpoint's note text: what the cosignature covers


def _signed_by(note: str, log: WitnessedLog) -> bool:
    """Whether a key trusted for the log signed the note; a trusted key's bad signature is no."""
    text, signatures = merkle.parse_note(note)
    verified = False
    for sig in signatures:
        for key in log.keys:
            if (sig.name, sig.key_hash) != (key.name, key.key_id):
                continue
            if not verify(text.encode(), sig.signature, key.public_key):
                return False
            verified = True
    return verified


def judge(
    body: bytes,
    logs: Mapping[str, WitnessedLog],
    latest: Callable[[str], Latest | None],
) -> Refused | Accepted:
    try:
        request = parse_add_checkpoint(body)
        text, _ = merkle.parse_note(request.note)
        checkpoint = merkle.parse_checkpoint_text(text)
    except (CosignatureError, merkle.NoteError) as exc:
        return Refused(400, f"malformed request: {exc}")
    log = logs.get(checkpoint.origin)
    if log is None:
        return Refused(404, f"unknown log origin {checkpoint.origin!r}")
    if not _signed_by(request.note, log):
        return Refused(403, "no valid signature by a key this witness trusts for the log")
    old = request.old_size
    if old > checkpoint.size:
        return Refused(400, f"old size {old} exceeds the checkpoint's size {checkpoint.size}")
    known = latest(checkpoint.origin) or Latest(0, merkle.EMPTY_ROOT)
    if old != known.size:
        return Refused(409, f"old size {old} is not the latest cosigned size", known.size)
    if old == checkpoint.size and checkpoint.root != known.root:
        return Refused(409, f"a different root for size {old} than the one cosigned", known.size)
    if old == 0:
        consistent = not request.proof
    else:
        consistent = merkle.verify_consistency(
            old, checkpoint.size, known.root, checkpoint.root, request.proof
        )
    if not consistent:
        return Refused(
            422, f"the consistency proof from size {old} to {checkpoint.size} does not verify"
        )
    return Accepted(checkpoint.origin, checkpoint.size, checkpoint.root, text)
