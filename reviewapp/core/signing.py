"""Ed25519 signatures over RFC 8785 canonical JSON: the server's private key and signing.

What gets stored next to a signature is the exact byte string that was signed
(``SignedPayload.payload_bytes``), never a structure to be re-encoded later:
verifying then needs nothing but those bytes, the signature and a public key,
and no future change to an encoder can invalidate an old signature.

Ed25519 is deterministic, so the same payload and key always give the same
signature; replaying a check can therefore compare evidence byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

# Checking a signature needs no private key, so that half lives with the offline
# verifier (one implementation for the server and for auditors); re-exported here.
from reviewapp_client.verify.signing import (
    BYTES_LIKE,
    MAX_SAFE_INTEGER,
    canonical_json,
    integer_as_double,
    key_id_for,
    sha256_hex,
    verify,
    verify_b64,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "KeyFileError",
    "SignedPayload",
    "Signer",
    "canonical_json",
    "integer_as_double",
    "key_id_for",
    "sha256_hex",
    "verify",
    "verify_b64",
]

SEED_BYTES = 32

# Group/other permission bits: any of them on a seed file means someone other
# than the owner can read or replace the private key.
_NOT_OWNER_BITS = 0o077


class KeyFileError(Exception):
    """A seed file is unsafe to use or does not hold a seed."""


@dataclass(frozen=True)
class SignedPayload:
    """The exact bytes that were signed, their signature, and who signed them."""

    payload_bytes: bytes
    signature: bytes
    key_id: str

    @property
    def signature_b64(self) -> str:
        return base64.b64encode(self.signature).decode("ascii")


class Signer:
    """An ed25519 private key.

    The seed is reachable only through ``to_file``: it is not an attribute,
    not in ``repr()``, and a Signer refuses to be pickled, so it cannot leak
    into a log line, a task payload or a database row by accident.
    """

    __slots__ = ("_signing_key",)

    def __init__(self, signing_key: SigningKey) -> None:
        self._signing_key = signing_key

    @classmethod
    def generate(cls) -> Signer:
        return cls(SigningKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> Signer:
        if not isinstance(seed, BYTES_LIKE) or len(seed) != SEED_BYTES:
            raise ValueError(f"an ed25519 seed is {SEED_BYTES} bytes")
        return cls(SigningKey(bytes(seed)))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Signer:
        """Load a seed written by ``to_file``.

        Refuses (``KeyFileError``) a file that is not a regular file or whose
        mode grants anything to group or others: a key others could read is
        already compromised, and one they could write could be swapped. The
        mode is checked on the opened descriptor, so the file checked is the
        file read.
        """
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise KeyFileError(f"{path} is not a regular file")
            mode = stat.S_IMODE(info.st_mode)
            if mode & _NOT_OWNER_BITS:
                raise KeyFileError(
                    f"refusing to read signing key {path}: mode {mode:04o} lets group or "
                    f"others access it; run `chmod 600 {path}`"
                )
            text = handle.read()
        try:
            seed = base64.b64decode(text.strip(), validate=True)
        except binascii.Error as exc:
            raise KeyFileError(f"{path} does not hold a base64 seed") from exc
        if len(seed) != SEED_BYTES:
            raise KeyFileError(f"{path} holds {len(seed)} bytes, not a {SEED_BYTES}-byte seed")
        return cls(SigningKey(seed))

    def to_file(self, path: str | os.PathLike[str]) -> Path:
        """Write the seed, base64, to a new file readable only by its owner.

        The file is created with mode 0600 in one step (never briefly wider),
        and an existing file is never overwritten: replacing a key file would
        silently destroy the only copy of a key that past signatures rely on.
        """
        path = Path(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            # The umask can only narrow the creation mode; this pins it exactly.
            os.fchmod(handle.fileno(), 0o600)
            handle.write(base64.b64encode(bytes(self._signing_key)) + b"\n")
        return path

    @property
    def public_key(self) -> bytes:
        return bytes(self._signing_key.verify_key)

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(self.public_key).decode("ascii")

    @property
    def key_id(self) -> str:
        return key_id_for(self.public_key)

    def sign_bytes(self, data: bytes) -> bytes:
        """The raw 64-byte ed25519 signature of ``data``."""
        return self._signing_key.sign(bytes(data)).signature

    def sign(self, payload: Any) -> SignedPayload:
        """Canonicalise ``payload`` and sign exactly those bytes."""
        payload_bytes = canonical_json(payload)
        return SignedPayload(payload_bytes, self.sign_bytes(payload_bytes), self.key_id)

    def __repr__(self) -> str:
        return f"Signer(key_id={self.key_id!r})"

    def __reduce__(self):
        raise TypeError("a Signer cannot be serialised; persist its seed with to_file()")
