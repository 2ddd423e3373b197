"""Checking witness cosignatures (C2SP tlog-cosignature v1, Ed25519) and k-of-n witness policies.

The verification half: the server (``reviewapp.core.cosignature``), its
``run_witness`` and an auditor's ``reviewapp-verify --witness-key`` all take
these from here. Producing cosignatures and the tlog-witness request formats
stay with the server.

- **Verifier keys** (C2SP signed-note "vkeys"):
  ``<name>+<key id, 8 hex digits>+<base64(signature type ‖ public key)>``,
  key id = ``SHA-256(name ‖ "\\n" ‖ type ‖ public key)[:4]``. Type 0x01 is a
  log's Ed25519 note key, 0x04 a witness's timestamped Ed25519 cosigning key.
- **Cosignatures**: the note signature line
  ``— <name> base64(key id ‖ u64 big-endian timestamp ‖ Ed25519 signature)``
  over ``"cosignature/v1\\n" "time <timestamp>\\n"`` followed by the checkpoint's
  note text.
- **Witness policies**: k of n witness keys must have cosigned.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from .merkle import NOTE_SIGNATURE_PREFIX, parse_note
from .signing import verify

LOG_KEY_TYPE = 0x01  # signed-note Ed25519: a log's checkpoint signature
COSIGNATURE_KEY_TYPE = 0x04  # tlog-cosignature v1, timestamped Ed25519
ED25519_PUBLIC_KEY_BYTES = 32
ED25519_SIGNATURE_BYTES = 64
TIMESTAMP_BYTES = 8
MAX_TIMESTAMP = 2**63 - 1
COSIGNATURE_HEADER = "cosignature/v1\n"

_KEY_ID_HEX = re.compile(r"[0-9a-f]{8}")
_SPACES = re.compile(r"\s")


class CosignatureError(ValueError):
    """A verifier key, cosignature, witness policy or add-checkpoint body is malformed."""


def key_id(name: str, key_type: int, public_key: bytes) -> bytes:
    """The 4-byte signed-note key id of ``public_key`` under ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([key_type]) + bytes(public_key)).digest()[
        :4
    ]


def check_name(name: str) -> None:
    if not name or "+" in name or _SPACES.search(name):
        raise CosignatureError(f"key name {name!r} must be non-empty, without spaces or '+'")


def b64decode_canonical(text: str, what: str) -> bytes:
    """Strict base64: anything that does not re-encode to ``text`` is refused."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CosignatureError(f"{what} is not base64") from exc
    if base64.b64encode(raw).decode() != text:
        raise CosignatureError(f"{what} is not canonical base64")
    return raw


@dataclass(frozen=True)
class VerifierKey:
    name: str
    key_type: int
    public_key: bytes

    def __post_init__(self) -> None:
        check_name(self.name)
        if len(self.public_key) != ED25519_PUBLIC_KEY_BYTES:
            raise CosignatureError(f"{self.name}: an Ed25519 public key is 32 bytes")

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.key_type, self.public_key)

    def text(self) -> str:
        blob = base64.b64encode(bytes([self.key_type]) + self.public_key).decode()
        return f"{self.name}+{self.key_id.hex()}+{blob}"


def parse_vkey(text: str, *, key_type: int = COSIGNATURE_KEY_TYPE) -> VerifierKey:
    """A vkey of the given signature type, checked: its key id must be its key's."""
    if not isinstance(text, str):
        raise CosignatureError("a verifier key is text")
    parts = text.split("+", 2)  # base64 may hold '+' too
    if len(parts) != 3:
        raise CosignatureError(f"verifier key {text!r} is not <name>+<key id>+<base64 key>")
    name, id_hex, blob = parts
    check_name(name)
    if not _KEY_ID_HEX.fullmatch(id_hex):
        raise CosignatureError(f"verifier key {name}: key id {id_hex!r} is not 8 hex digits")
    raw = b64decode_canonical(blob, f"verifier key {name}: the key")
    if len(raw) != 1 + ED25519_PUBLIC_KEY_BYTES or raw[0] != key_type:
        raise CosignatureError(
            f"verifier key {name}: expected signature type 0x{key_type:02x} and a "
            f"{ED25519_PUBLIC_KEY_BYTES}-byte Ed25519 key"
        )
    vkey = VerifierKey(name, key_type, raw[1:])
    if vkey.key_id.hex() != id_hex:
        raise CosignatureError(
            f"verifier key {name}: key id {id_hex} is not this key's ({vkey.key_id.hex()})"
        )
    return vkey


# ── cosignatures ─────────────────────────────────────────────────────────────


def signed_message(checkpoint_text: str, timestamp: int) -> bytes:
    """What a v1 cosignature signs: header line, time line, the checkpoint note text."""
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise CosignatureError(f"cosignature timestamp {timestamp} is out of range")
    if not checkpoint_text.endswith("\n"):
        raise CosignatureError("checkpoint text ends with a newline")
    return f"{COSIGNATURE_HEADER}time {timestamp}\n{checkpoint_text}".encode()


@dataclass(frozen=True)
class Cosignature:
    name: str
    key_id: bytes
    timestamp: int
    signature: bytes
    line: str  # without its newline


def parse_cosignature(line: str) -> Cosignature:
    """One note signature line shaped as an Ed25519 cosignature. Raises CosignatureError."""
    line = line.removesuffix("\n")
    if not line.startswith(NOTE_SIGNATURE_PREFIX) or "\n" in line:
        raise CosignatureError(f"{line[:80]!r} is not a note signature line")
    name, _, blob = line[len(NOTE_SIGNATURE_PREFIX) :].partition(" ")
    check_name(name)
    raw = b64decode_canonical(blob, f"the signature of {name}")
    if len(raw) != 4 + TIMESTAMP_BYTES + ED25519_SIGNATURE_BYTES:
        raise CosignatureError(f"the signature of {name} is not an Ed25519 cosignature")
    (timestamp,) = struct.unpack(">Q", raw[4:12])
    if timestamp > MAX_TIMESTAMP:
        raise CosignatureError(f"the cosignature of {name} has an out-of-range timestamp")
    return Cosignature(name, raw[:4], timestamp, raw[12:], line)


def verify_cosignature(checkpoint_text: str, cosignature: Cosignature, key: VerifierKey) -> bool:
    """Whether ``cosignature`` is ``key``'s (name and key id match) and verifies."""
    if key.key_type != COSIGNATURE_KEY_TYPE:
        return False
    if (cosignature.name, cosignature.key_id) != (key.name, key.key_id):
        return False
    message = signed_message(checkpoint_text, cosignature.timestamp)
    return verify(message, cosignature.signature, key.public_key)


# ── witness policies ─────────────────────────────────────────────────────────


@dataclass(frozen=True)
class WitnessPolicy:
    """``quorum`` of ``witnesses`` must have cosigned a checkpoint for it to be trusted."""

    witnesses: tuple[VerifierKey, ...]
    quorum: int

    def __post_init__(self) -> None:
        if not 0 <= self.quorum <= len(self.witnesses):
            raise CosignatureError(
                f"a quorum of {self.quorum} out of {len(self.witnesses)} witnesses"
            )
        names = [key.name for key in self.witnesses]
        if len(set(names)) != len(names):
            raise CosignatureError("two witness keys share a name")


@dataclass(frozen=True)
class PolicyResult:
    quorum: int
    cosigned: tuple[str, ...]  # witnesses whose cosignature verified
    missing: tuple[str, ...]  # the others
    invalid: tuple[str, ...]  # among missing: a cosignature by their key that does not verify

    @property
    def ok(self) -> bool:
        return len(self.cosigned) >= self.quorum

    def problem(self) -> str | None:
        if self.ok:
            return None
        total = len(self.cosigned) + len(self.missing)
        text = (
            f"cosigned by {len(self.cosigned)} of the {self.quorum} (of {total}) witnesses "
            f"required; missing: {', '.join(self.missing)}"
        )
        if self.invalid:
            text += f" (an invalid cosignature from {', '.join(self.invalid)})"
        return text


def policy_check(
    policy: WitnessPolicy, checkpoint_text: str, signature_lines: Iterable[str]
) -> PolicyResult:
    """Which of the policy's witnesses cosigned ``checkpoint_text`` among ``signature_lines``.

    Lines that are not cosignatures, or not by a policy key, are ignored (as
    signed-note says of unknown keys).
    """
    parsed = []
    for line in signature_lines:
        try:
            parsed.append(parse_cosignature(line))
        except CosignatureError:
            continue
    cosigned, missing, invalid = [], [], []
    for key in policy.witnesses:
        mine = [c for c in parsed if (c.name, c.key_id) == (key.name, key.key_id)]
        if any(verify_cosignature(checkpoint_text, c, key) for c in mine):
            cosigned.append(key.name)
        else:
            missing.append(key.name)
            if mine:
                invalid.append(key.name)
    return PolicyResult(policy.quorum, tuple(cosigned), tuple(missing), tuple(invalid))


def note_policy_check(policy: WitnessPolicy, note: str) -> PolicyResult:
    """``policy_check`` of a signed note carrying its cosignatures. Raises NoteError."""
    text, _ = parse_note(note)
    lines = note[len(text) + 1 :].splitlines()
    return policy_check(policy, text, lines)
