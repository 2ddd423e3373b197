"""Witness cosignatures: C2SP tlog-cosignature (v1, Ed25519) and tlog-witness messages.

Pure: no Django, so the server, `run_witness` and an offline verifier share it.

- **Verifier keys** (C2SP signed-note "vkeys"):
  ``<name>+<key id, 8 hex digits>+<base64(signature type ‖ public key)>``,
  key id = ``SHA-256(name ‖ "\\n" ‖ type ‖ public key)[:4]``. Type 0x01 is a
  log's Ed25519 note key, 0x04 a witness's timestamped Ed25519 cosigning key.
- **Cosignatures**: the note signature line
  ``— <name> base64(key id ‖ u64 big-endian timestamp ‖ Ed25519 signature)``
  over ``"cosignature/v1\\n" "time <timestamp>\\n"`` followed by the checkpoint's
  note text.
- **add-checkpoint** request bodies: ``old <size>``, at most 63 base64
  consistency-proof hashes, an empty line, the signed checkpoint.
- **Witness policies**: k of n witness keys must have cosigned.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from .merkle import HASH_BYTES, NOTE_SIGNATURE_PREFIX, parse_note
from .signing import verify

LOG_KEY_TYPE = 0x01  # signed-note Ed25519: a log's checkpoint signature
COSIGNATURE_KEY_TYPE = 0x04  # tlog-cosignature v1, timestamped Ed25519
ED25519_PUBLIC_KEY_BYTES = 32
ED25519_SIGNATURE_BYTES = 64
TIMESTAMP_BYTES = 8
MAX_TIMESTAMP = 2**63 - 1
COSIGNATURE_HEADER = "cosignature/v1\n"
MAX_PROOF_LINES = 63
SIZE_CONTENT_TYPE = "text/x.tlog.size"

_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_KEY_ID_HEX = re.compile(r"[0-9a-f]{8}")
_SPACES = re.compile(r"\s")


class CosignatureError(ValueError):
    """A verifier key, cosignature or add-checkpoint body is malformed."""


def key_id(name: str, key_type: int, public_key: bytes) -> bytes:
    """The 4-byte signed-note key id of ``public_key`` under ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([key_type]) + bytes(public_key)).digest()[
        :4
    ]


def _check_name(name: str) -> None:
    if not name or "+" in name or _SPACES.search(name):
        raise CosignatureError(f"key name {name!r} must be non-empty, without spaces or '+'")


def _b64decode(text: str, what: str) -> bytes:
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
        _check_name(self.name)
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
    _check_name(name)
    if not _KEY_ID_HEX.fullmatch(id_hex):
        raise CosignatureError(f"verifier key {name}: key id {id_hex!r} is not 8 hex digits")
    raw = _b64decode(blob, f"verifier key {name}: the key")
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


def cosignature_line(
    checkpoint_text: str,
    name: str,
    public_key: bytes,
    sign_bytes: Callable[[bytes], bytes],
    timestamp: int,
) -> str:
    """The cosignature note line (ending in a newline) of ``checkpoint_text`` at ``timestamp``."""
    _check_name(name)
    signature = sign_bytes(signed_message(checkpoint_text, timestamp))
    blob = (
        key_id(name, COSIGNATURE_KEY_TYPE, public_key)
        + struct.pack(">Q", timestamp)
        + bytes(signature)
    )
    return f"{NOTE_SIGNATURE_PREFIX}{name} {base64.b64encode(blob).decode()}\n"


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
    _check_name(name)
    raw = _b64decode(blob, f"the signature of {name}")
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
    if not old_line.startswith("old ") or not _DECIMAL.fullmatch(old_line[4:]):
        raise CosignatureError("the first line is not `old <size>` (a decimal, no leading zero)")
    if len(proof_lines) > MAX_PROOF_LINES:
        raise CosignatureError(f"more than {MAX_PROOF_LINES} consistency proof lines")
    proof = []
    for line in proof_lines:
        h = _b64decode(line, "a consistency proof line")
        if len(h) != HASH_BYTES:
            raise CosignatureError("a consistency proof line is not a 32-byte hash")
        proof.append(h)
    if not note:
        raise CosignatureError("no checkpoint after the empty line")
    return AddCheckpoint(int(old_line[4:]), tuple(proof), note)


def parse_size_body(body: str) -> int:
    """A 409 answer's body: the witness's latest cosigned size, a decimal and a newline."""
    if not body.endswith("\n") or not _DECIMAL.fullmatch(body[:-1]):
        raise CosignatureError(f"{body[:40]!r} is not a tree size line")
    return int(body[:-1])


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
