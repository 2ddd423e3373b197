"""A transparency log's primitives: RFC 6962 Merkle trees, entries, checkpoints.

Pure: nothing here imports Django. What checking needs — entries, leaf and node
hashes, ``CompactRange``, proof verification, notes and checkpoints — lives in
the offline verifier (``reviewapp_client.verify.merkle``, run by auditors as
``reviewapp-verify``) and is re-exported here, so the server and an auditor
share one implementation. What only the server does stays here: answering
proofs from stored subtrees and signing checkpoints.

- **Entries, tree, checkpoints**: see ``reviewapp_client.verify.merkle``.
  Proofs are RFC 6962 §2.1.1 (PATH) and §2.1.2 (PROOF/SUBPROOF).
- **Storage-friendly proofs.** Every hash a proof needs is the root of a
  range ``[start, end)`` whose start is a multiple of the smallest power of two
  covering it, so it folds from *perfect* subtrees ``(level, index)`` — leaf
  ``index`` at level 0, or the node over leaves
  ``[index·2^level, (index+1)·2^level)``. A server stores those once each
  (``CompactRange.append`` reports them as they complete) and answers any
  proof with O(log n) lookups: ``inclusion_ranges`` / ``consistency_ranges``
  say which ranges, ``perfect_cover`` which stored nodes, ``fold_range`` the
  hash.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping, Sequence

from reviewapp_client.verify.merkle import (
    EMPTY_ROOT,
    ENTRY_KINDS,
    FORBIDDEN_NOTE_CHARS,
    HASH_BYTES,
    MAX_NOTE_SIGNATURES,
    NOTE_SIGNATURE_PREFIX,
    Checkpoint,
    CompactRange,
    NoteError,
    check_key_name,
    entry_bytes,
    is_power_of_two,
    jcs,
    leaf_hash,
    node_hash,
    note_key_hash,
    open_checkpoint,
    open_note,
    parse_checkpoint_text,
    parse_note,
    parse_tree_size,
    verify_consistency,
    verify_inclusion,
)

__all__ = [
    "EMPTY_ROOT",
    "ENTRY_KINDS",
    "HASH_BYTES",
    "MAX_NOTE_SIGNATURES",
    "NOTE_SIGNATURE_PREFIX",
    "Checkpoint",
    "CompactRange",
    "MemoryTree",
    "NoteError",
    "Perfect",
    "ProofError",
    "consistency_ranges",
    "entry_bytes",
    "fold_range",
    "inclusion_ranges",
    "jcs",
    "leaf_hash",
    "node_hash",
    "note_key_hash",
    "open_checkpoint",
    "open_note",
    "parse_checkpoint_text",
    "parse_note",
    "parse_tree_size",
    "perfect_cover",
    "perfect_keys",
    "root_of",
    "sign_checkpoint",
    "sign_note",
    "verify_consistency",
    "verify_inclusion",
]

Perfect = tuple[int, int]  # (level, index)


class ProofError(ValueError):
    """A proof was asked for something the tree cannot prove (bad index or sizes)."""


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n > 1): RFC 6962's k."""
    return 1 << ((n - 1).bit_length() - 1)


def root_of(leaves: Sequence[bytes]) -> bytes:
    """The RFC 6962 Merkle tree hash of a list of leaf hashes."""
    compact = CompactRange()
    for leaf in leaves:
        compact.append(leaf)
    return compact.root()


# ── which subtrees a proof needs ─────────────────────────────────────────────


def perfect_cover(start: int, end: int) -> list[Perfect]:
    """The perfect subtrees whose right fold is the MTH of leaves ``[start, end)``.

    Only for ranges a proof can ask about: ``start`` must be a multiple of the
    largest perfect subtree the range begins with (always true for
    ``[0, n)`` and for every range ``inclusion_ranges`` and
    ``consistency_ranges`` return).
    """
    if not 0 <= start < end:
        raise ProofError(f"empty or negative range [{start}, {end})")
    cover = []
    while start < end:
        n = end - start
        size = n if is_power_of_two(n) else _split(n)
        if start % size:
            raise ProofError(f"range [{start}, {end}) is not aligned to perfect subtrees")
        level = size.bit_length() - 1
        cover.append((level, start >> level))
        start += size
    return cover


def fold_range(start: int, end: int, perfect: Mapping[Perfect, bytes]) -> bytes:
    """MTH of leaves ``[start, end)`` from the hashes of its ``perfect_cover``."""
    if start == end == 0:
        return EMPTY_ROOT
    hashes = [perfect[key] for key in perfect_cover(start, end)]
    root = hashes[-1]
    for h in reversed(hashes[:-1]):
        root = node_hash(h, root)
    return root


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose MTHs make PATH(index, D[size]), leaf-side first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of size {size}")
    ranges = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
    ranges.reverse()
    return ranges


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The leaf ranges whose MTHs make PROOF(old, D[new]), bottom first.

    Empty when ``old`` is 0 or equals ``new``: every tree extends the empty one
    and itself.
    """
    if not 0 <= old <= new:
        raise ProofError(f"no consistency proof from size {old} to size {new}")
    if old == 0 or old == new:
        return []
    ranges = []
    lo, hi, m = 0, new, old
    complete = True  # SUBPROOF's b: the old tree is a complete prefix so far
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
            m -= k
            complete = False
    if not complete:
        ranges.append((lo, hi))
    ranges.reverse()
    return ranges


def perfect_keys(ranges: Iterable[tuple[int, int]]) -> set[Perfect]:
    """Every stored subtree needed to fold all of ``ranges``."""
    keys: set[Perfect] = set()
    for start, end in ranges:
        keys.update(perfect_cover(start, end))
    return keys


class MemoryTree:
    """A whole tree in memory (tests, exports, the offline verifier)."""

    def __init__(self, leaves: Iterable[bytes] = ()) -> None:
        self.leaves: list[bytes] = []
        self.nodes: dict[Perfect, bytes] = {}
        self._compact = CompactRange()
        for leaf in leaves:
            self.append(leaf)

    def append(self, leaf: bytes) -> None:
        self.nodes[(0, len(self.leaves))] = leaf
        self.leaves.append(leaf)
        for level, index, h in self._compact.append(leaf):
            self.nodes[(level, index)] = h

    @property
    def size(self) -> int:
        return len(self.leaves)

    def root(self, size: int | None = None) -> bytes:
        size = self.size if size is None else size
        if not 0 <= size <= self.size:
            raise ProofError(f"no tree of size {size}; the tree has {self.size} leaves")
        return fold_range(0, size, self.nodes) if size else EMPTY_ROOT

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        size = self.size if size is None else size
        if size > self.size:
            raise ProofError(f"no tree of size {size}; the tree has {self.size} leaves")
        return [fold_range(s, e, self.nodes) for s, e in inclusion_ranges(index, size)]

    def consistency_proof(self, old: int, new: int | None = None) -> list[bytes]:
        new = self.size if new is None else new
        if new > self.size:
            raise ProofError(f"no tree of size {new}; the tree has {self.size} leaves")
        return [fold_range(s, e, self.nodes) for s, e in consistency_ranges(old, new)]


# ── signing checkpoints (C2SP signed notes) ──────────────────────────────────


def sign_note(text: str, name: str, public_key: bytes, sign_bytes: Callable[[bytes], bytes]) -> str:
    """``text`` (ending in a newline) as a signed note with one ed25519 signature line."""
    check_key_name(name)
    if not text.endswith("\n") or FORBIDDEN_NOTE_CHARS.search(text):
        raise NoteError("note text must end with a newline and hold no control characters")
    signature = sign_bytes(text.encode())
    blob = base64.b64encode(note_key_hash(name, public_key) + signature).decode("ascii")
    return f"{text}\n{NOTE_SIGNATURE_PREFIX}{name} {blob}\n"


def sign_checkpoint(
    checkpoint: Checkpoint, public_key: bytes, sign_bytes: Callable[[bytes], bytes]
) -> str:
    """The checkpoint as a signed note; the key name is the origin."""
    return sign_note(checkpoint.text(), checkpoint.origin, public_key, sign_bytes)
