"""Checking a transparency log: RFC 6962 leaves and roots, proofs, C2SP checkpoints.

The verification half of reviewapp's ledger; the server builds and signs its
tree with ``reviewapp.core.merkle``, which takes everything here from this
module, so what it writes and what an auditor checks are one implementation.

- **Entries.** A ledger entry is ``entry_bytes(kind, payload, signature,
  key_id)``: the RFC 8785 canonical JSON of those four strings, where
  ``payload`` is the exact signed text and ``signature`` its base64 ed25519
  signature. Swapping any of the four — even only the signature — changes the
  leaf.
- **Tree.** RFC 6962 §2.1: ``leaf = SHA-256(0x00 || entry)``,
  ``node = SHA-256(0x01 || left || right)``, the root of an empty tree is
  ``SHA-256("")``. ``CompactRange`` rebuilds a root leaf by leaf. Proof
  verification is RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency).
- **Checkpoints.** C2SP tlog-checkpoint text (origin, tree size, base64 root,
  optional extension lines) in a C2SP signed note, ed25519 signature type
  0x01, key ID ``SHA-256(name || 0x0A || 0x01 || public key)[:4]``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .signing import canonical_json, verify

HASH_BYTES = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()

ENTRY_KINDS = ("decision", "evidence")

# C2SP signed-note
NOTE_SIGNATURE_PREFIX = "\u2014 "  # em dash, space
ED25519_SIGNATURE_TYPE = b"\x01"
MAX_NOTE_SIGNATURES = 16
MAX_TREE_SIZE = 2**64 - 1  # C2SP tree sizes are uint64
# At most 20 digits: int() refuses (ValueError) a string of thousands of them.
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,19}")
FORBIDDEN_NOTE_CHARS = re.compile(r"[\x00-\x09\x0b-\x1f]")
_SPACES = re.compile(r"\s")


class NoteError(ValueError):
    """A signed note or checkpoint is malformed or not signed by a trusted key."""


# ── leaves and nodes ─────────────────────────────────────────────────────────


_MAX_EXACT_INT = 2**53 - 1


def _plain_json(obj: Any) -> bool:
    """Whether Python's json module encodes ``obj`` exactly as RFC 8785 does.

    True when the value holds no floats (ECMAScript number formatting differs
    from Python's), no integers beyond 2**53 (RFC 8785 refuses them) and only
    ASCII object keys (for those, code-point order is UTF-16 order). String
    escaping is the same in both: ``"``, ``\\``, the short escapes and
    ``\\u00xx`` for the other control characters; everything else literal.
    """
    stack = [obj]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str or kind is bool or value is None:
            continue
        if kind is int:
            if -_MAX_EXACT_INT <= value <= _MAX_EXACT_INT:
                continue
            return False
        if kind is dict:
            for key, item in value.items():
                if type(key) is not str or not key.isascii():
                    return False
                stack.append(item)
            continue
        if kind is list:
            stack.extend(value)
            continue
        return False
    return True


# Built once: json.dumps with non-default options builds a new encoder on every call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def _dumps(obj: Any) -> bytes:
    try:
        return _ENCODE(obj).encode()
    except UnicodeEncodeError as exc:  # a lone surrogate: not UTF-8, not JSON text
        raise ValueError("value contains a lone surrogate, which UTF-8 cannot encode") from exc


def jcs(obj: Any) -> bytes:
    """``signing.canonical_json(obj)``, several times faster for plain JSON values.

    Verifying 100,000 entries re-encodes every entry and every payload; the
    pure-Python RFC 8785 encoder is kept for the values where Python's own
    encoder would differ (floats, huge integers, non-ASCII keys).
    """
    if _plain_json(obj):
        return _dumps(obj)
    return canonical_json(obj)


def entry_bytes(kind: str, payload: str, signature: str, key_id: str) -> bytes:
    """The exact bytes a ledger leaf hashes: canonical JSON of the four strings."""
    if kind not in ENTRY_KINDS:
        raise ValueError(f"unknown ledger entry kind {kind!r}")
    for name, value in (("payload", payload), ("signature", signature), ("key_id", key_id)):
        if not isinstance(value, str):
            raise ValueError(f"ledger entry {name} must be a string")
    # Four strings under ASCII keys are plain JSON: no need to walk them first.
    return _dumps({"kind": kind, "payload": payload, "signature": signature, "key_id": key_id})


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# ── rebuilding a root leaf by leaf ───────────────────────────────────────────


class CompactRange:
    """The perfect subtrees covering leaves ``[0, size)``: enough to append and to root.

    ``hashes`` holds one hash per set bit of ``size``, largest subtree first
    (exactly the perfect cover of ``[0, size)``).
    """

    __slots__ = ("size", "hashes")

    def __init__(self, size: int = 0, hashes: Sequence[bytes] = ()) -> None:
        if size < 0 or len(hashes) != bin(size).count("1"):
            raise ValueError(f"a compact range of size {size} has {bin(size).count('1')} hashes")
        self.size = size
        self.hashes = list(hashes)

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf hash; returns the perfect nodes ``(level, index, hash)`` it completed."""
        created = []
        self.hashes.append(leaf)
        carry, level = self.size, 0
        while carry & 1:
            right = self.hashes.pop()
            left = self.hashes.pop()
            self.hashes.append(node_hash(left, right))
            level += 1
            carry >>= 1
            created.append((level, ((self.size + 1) >> level) - 1, self.hashes[-1]))
        self.size += 1
        return created

    def root(self) -> bytes:
        if not self.hashes:
            return EMPTY_ROOT
        root = self.hashes[-1]
        for h in reversed(self.hashes[:-1]):
            root = node_hash(h, root)
        return root

    def copy(self) -> CompactRange:
        return CompactRange(self.size, self.hashes)


# ── verifying proofs (RFC 9162 §2.1.3.2, §2.1.4.2) ───────────────────────────


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes | None:
    """The root ``proof`` implies for ``leaf`` at ``index``, or None if it cannot be one."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0 or len(p) != HASH_BYTES:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> bool:
    return root_from_inclusion(index, size, leaf, proof) == root


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    if not 0 <= old <= new:
        return False
    if old == new:
        return not proof and old_root == new_root
    if old == 0:
        return not proof and old_root == EMPTY_ROOT
    if not proof or any(len(p) != HASH_BYTES for p in proof):
        return False
    path = list(proof)
    if is_power_of_two(old):
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


# ── signed notes and checkpoints (C2SP) ──────────────────────────────────────


def note_key_hash(name: str, public_key: bytes) -> bytes:
    """The 4-byte C2SP key ID of an ed25519 note key."""
    return hashlib.sha256(
        name.encode() + b"\n" + ED25519_SIGNATURE_TYPE + bytes(public_key)
    ).digest()[:4]


def check_key_name(name: str) -> None:
    if not name or "+" in name or _SPACES.search(name):
        raise NoteError(f"note key name {name!r} must be non-empty, without spaces or '+'")


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_hash: bytes
    signature: bytes


def parse_note(note: str) -> tuple[str, list[NoteSignature]]:
    """Split a signed note into its text and signature lines. Raises NoteError."""
    if not isinstance(note, str) or FORBIDDEN_NOTE_CHARS.search(note):
        raise NoteError("a note is UTF-8 text without control characters other than newline")
    if not note.endswith("\n"):
        raise NoteError("a note ends with a newline")
    split = note.rfind("\n\n")
    if split < 0:
        raise NoteError("a note has a blank line between its text and its signatures")
    text, lines = note[: split + 1], note[split + 2 :].splitlines()
    if not lines:
        raise NoteError("a note carries at least one signature")
    if len(lines) > MAX_NOTE_SIGNATURES:
        raise NoteError(f"a note carries at most {MAX_NOTE_SIGNATURES} signatures")
    signatures = []
    for line in lines:
        if not line.startswith(NOTE_SIGNATURE_PREFIX):
            raise NoteError(f"malformed signature line {line!r}")
        name, _, blob = line[len(NOTE_SIGNATURE_PREFIX) :].partition(" ")
        try:
            check_key_name(name)
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise NoteError(f"malformed signature line {line!r}") from exc
        if len(raw) < 5:
            raise NoteError(f"malformed signature line {line!r}")
        signatures.append(NoteSignature(name, raw[:4], raw[4:]))
    return text, signatures


def open_note(
    note: str, public_keys: Iterable[bytes], *, name: str | None = None
) -> tuple[str, str]:
    """Verify a signed note against trusted ed25519 keys; returns (text, key name).

    Per C2SP signed-note: signatures from unknown keys are ignored; a known
    key's signature that fails rejects the note; at least one known key must
    have signed. ``name``, if given, is the only key name trusted.
    """
    text, signatures = parse_note(note)
    keys = [bytes(k) for k in public_keys]
    verified_by = None
    for sig in signatures:
        if name is not None and sig.name != name:
            continue
        for key in keys:
            if note_key_hash(sig.name, key) != sig.key_hash:
                continue
            if not verify(text.encode(), sig.signature, key):
                raise NoteError(f"the signature by {sig.name} does not verify")
            verified_by = verified_by or sig.name
    if verified_by is None:
        raise NoteError("the note is not signed by any trusted key")
    return text, verified_by


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    @property
    def root_hex(self) -> str:
        return self.root.hex()

    @property
    def timestamp(self) -> str | None:
        """The ``timestamp <RFC 3339>`` extension line this server adds, if present."""
        for line in self.extensions:
            if line.startswith("timestamp "):
                return line[len("timestamp ") :]
        return None

    def text(self) -> str:
        if not self.origin or "\n" in self.origin:
            raise NoteError("a checkpoint origin is one non-empty line")
        if self.size < 0 or len(self.root) != HASH_BYTES:
            raise NoteError("a checkpoint has a non-negative size and a 32-byte root")
        for line in self.extensions:
            if not line or "\n" in line:
                raise NoteError("checkpoint extension lines are single non-empty lines")
        lines = [
            self.origin,
            str(self.size),
            base64.b64encode(self.root).decode(),
            *self.extensions,
        ]
        return "".join(line + "\n" for line in lines)


def parse_tree_size(text: str) -> int | None:
    """A tree size as C2SP writes it (decimal, no leading zero, a uint64), or None."""
    if not _DECIMAL.fullmatch(text):
        return None
    size = int(text)
    return size if size <= MAX_TREE_SIZE else None


def parse_checkpoint_text(text: str) -> Checkpoint:
    """Strict C2SP tlog-checkpoint note text. Raises NoteError."""
    if not text.endswith("\n"):
        raise NoteError("checkpoint text ends with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise NoteError("a checkpoint has at least three non-empty lines")
    origin, size_text, root_text, *extensions = lines
    size = parse_tree_size(size_text)
    if size is None:
        raise NoteError(
            f"checkpoint tree size {size_text[:40]!r} is not a decimal without leading zeroes "
            "below 2**64"
        )
    try:
        root = base64.b64decode(root_text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise NoteError("checkpoint root hash is not base64") from exc
    if len(root) != HASH_BYTES or base64.b64encode(root).decode() != root_text:
        raise NoteError("checkpoint root hash is not the base64 of 32 bytes")
    return Checkpoint(origin, size, root, tuple(extensions))


def open_checkpoint(note: str, public_keys: Iterable[bytes]) -> Checkpoint:
    """Verify a signed checkpoint (signed under its origin by a trusted key) and parse it."""
    text, _ = parse_note(note)
    checkpoint = parse_checkpoint_text(text)
    open_note(note, public_keys, name=checkpoint.origin)
    return checkpoint
