"""Witness cosignatures: C2SP tlog-cosignature (v1, Ed25519) and tlog-witness messages.

Pure: no Django, so the server and ``run_witness`` share it. Checking — verifier
keys, cosignature lines, k-of-n witness policies — lives in the offline
verifier (``reviewapp_client.verify.cosignature``, run by auditors as
``reviewapp-verify --witness-key``) and is re-exported here, so the server and
an auditor hold checkpoints to a policy with one implementation. What only
the server and its witness do stays here: producing cosignature lines, the
tlog-witness request and answer formats, the witness configuration.

- **Verifier keys, cosignatures, policies**: see ``reviewapp_client.verify.cosignature``.
- **add-checkpoint** request bodies: ``old <size>``, at most 63 base64
  consistency-proof hashes, an empty line, the signed checkpoint.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from reviewapp_client.verify.cosignature import (
    COSIGNATURE_HEADER,
    COSIGNATURE_KEY_TYPE,
    ED25519_PUBLIC_KEY_BYTES,
    ED25519_SIGNATURE_BYTES,
    LOG_KEY_TYPE,
    MAX_TIMESTAMP,
    TIMESTAMP_BYTES,
    Cosignature,
    CosignatureError,
    PolicyResult,
    VerifierKey,
    WitnessPolicy,
    b64decode_canonical,
    check_name,
    key_id,
    note_policy_check,
    parse_cosignature,
    parse_vkey,
    policy_check,
    signed_message,
    verify_cosignature,
)

from .merkle import HASH_BYTES, NOTE_SIGNATURE_PREFIX, parse_tree_size

__all__ = [
    "COSIGNATURE_HEADER",
    "COSIGNATURE_KEY_TYPE",
    "ED25519_PUBLIC_KEY_BYTES",
    "ED25519_SIGNATURE_BYTES",
    "LOG_KEY_TYPE",
    "MAX_PROOF_LINES",
    "MAX_TIMESTAMP",
    "SIZE_CONTENT_TYPE",
    "TIMESTAMP_BYTES",
    "AddCheckpoint",
    "ConfiguredWitness",
    "Cosignature",
    "CosignatureError",
    "PolicyResult",
    "VerifierKey",
    "WitnessPolicy",
    "add_checkpoint_body",
    "cosignature_line",
    "key_id",
    "note_policy_check",
    "parse_add_checkpoint",
    "parse_cosignature",
    "parse_size_body",
    "parse_vkey",
    "parse_witnesses",
    "policy_check",
    "response_lines",
    "signed_message",
    "verify_cosignature",
]

MAX_PROOF_LINES = 63
SIZE_CONTENT_TYPE = "text/x.tlog.size"


# ── producing cosignatures ───────────────────────────────────────────────────


def cosignature_line(
    checkpoint_text: str,
    name: str,
    public_key: bytes,
    sign_bytes: Callable[[bytes], bytes],
    timestamp: int,
) -> str:
    """The cosignature note line (ending in a newline) of ``checkpoint_text`` at ``timestamp``."""
    check_name(name)
    signature = sign_bytes(signed_message(checkpoint_text, timestamp))
    blob = (
        key_id(name, COSIGNATURE_KEY_TYPE, public_key)
        + struct.pack(">Q", timestamp)
        + bytes(signature)
    )
    return f"{NOTE_SIGNATURE_PREFIX}{name} {base64.b64encode(blob).decode()}\n"


def response_lines(body: str) -> list[str]:
    """The signature lines of a witness's 200 answer: one or more, each ending in a newline."""
    if not body.endswith("\n"):
        raise CosignatureError("a witness's answer ends with a newline")
    lines = body[:-1].split("\n")
    for line in lines:
        if not line.startswith(NOTE_SIGNATURE_PREFIX):
            raise CosignatureError(f"{line[:80]!r} is not a note signature line")
    return lines


# ── the add-checkpoint request (C2SP tlog-witness) ───────────────────────────


@dataclass(frozen=True)
class AddCheckpoint:
    old_size: int
    proof: tuple[bytes, ...]
    note: str  # the signed checkpoint, verbatim


def add_checkpoint_body(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    if old_size < 0:
        raise CosignatureError("the old size is not negative")
    if len(proof) > MAX_PROOF_LINES or any(len(h) != HASH_BYTES for h in proof):
        raise CosignatureError(f"a proof is at most {MAX_PROOF_LINES} hashes of 32 bytes")
    lines = [f"old {old_size}", *(base64.b64encode(h).decode() for h in proof), ""]
    return ("\n".join(lines) + "\n" + note).encode()


def parse_add_checkpoint(body: bytes) -> AddCheckpoint:
    """Strictly parse an add-checkpoint body. Raises CosignatureError (a 400)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CosignatureError("the body is not UTF-8") from exc
    head, blank, note = text.partition("\n\n")
    if not blank:
        raise CosignatureError("no empty line between the proof and the checkpoint")
    old_line, *proof_lines = head.split("\n")
    old_size = parse_tree_size(old_line[4:]) if old_line.startswith("old ") else None
    if old_size is None:
        raise CosignatureError(
            "the first line is not `old <size>` (a decimal, no leading zero, below 2**64)"
        )
    if len(proof_lines) > MAX_PROOF_LINES:
        raise CosignatureError(f"more than {MAX_PROOF_LINES} consistency proof lines")
    proof = []
    for line in proof_lines:
        h = b64decode_canonical(line, "a consistency proof line")
        if len(h) != HASH_BYTES:
            raise CosignatureError("a consistency proof line is not a 32-byte hash")
        proof.append(h)
    if not note:
        raise CosignatureError("no checkpoint after the empty line")
    return AddCheckpoint(old_size, tuple(proof), note)


def parse_size_body(body: str) -> int:
    """A 409 answer's body: the witness's latest cosigned size, a decimal and a newline."""
    size = parse_tree_size(body[:-1]) if body.endswith("\n") else None
    if size is None:
        raise CosignatureError(f"{body[:40]!r} is not a tree size line")
    return size


# ── configuration ────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ConfiguredWitness:
    key: VerifierKey
    url: str  # the submission prefix, without a trailing slash


def parse_witnesses(text: str) -> list[ConfiguredWitness]:
    """One witness per line, ``<vkey> <url>``; blank lines and ``#`` comments are skipped.

    Raises CosignatureError naming the line: a typo must stop the start, not
    quietly leave a witness out.
    """
    witnesses: list[ConfiguredWitness] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        try:
            if len(fields) != 2:
                raise CosignatureError("expected `<vkey> <url>`")
            key = parse_vkey(fields[0])
            parts = urlsplit(fields[1])
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise CosignatureError(f"{fields[1]!r} is not an http(s) URL")
            if parts.query or parts.fragment or parts.username or parts.password:
                raise CosignatureError(f"{fields[1]!r}: no query, fragment or credentials")
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except (CosignatureError, ValueError) as exc:
            raise CosignatureError(f"line {number}: {exc}") from exc
        if any(w.key.name == key.name for w in witnesses):
            raise CosignatureError(f"line {number}: a second witness named {key.name}")
        witnesses.append(ConfiguredWitness(key, fields[1].rstrip("/")))
    return witnesses
