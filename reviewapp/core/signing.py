"""Ed25519 signatures over RFC 8785 canonical JSON.

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
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785
from nacl.exceptions import CryptoError
from nacl.signing import SigningKey, VerifyKey

SEED_BYTES = 32
PUBLIC_KEY_BYTES = 32
KEY_ID_PREFIX = "ed25519:"

# Group/other permission bits: any of them on a seed file means someone other
# than the owner can read or replace the private key.
_NOT_OWNER_BITS = 0o077

_BytesLike = (bytes, bytearray, memoryview)


class KeyFileError(Exception):
    """A seed file is unsafe to use or does not hold a seed."""


MAX_SAFE_INTEGER = 2**53 - 1


def canonical_json(obj: Any) -> bytes:
    """Encode ``obj`` as RFC 8785 (JCS) canonical JSON.

    Key order, whitespace and number formatting are fixed by the RFC, so equal
    values always give equal bytes. Raises ``rfc8785.CanonicalizationError``
    (a ``ValueError``) for values JSON cannot represent exactly: NaN, infinities,
    integers beyond 2**53 that are no double's spelling, non-string keys,
    non-JSON types.

    RFC 8785 numbers are IEEE doubles, and the encoder writes an integer-valued
    double of 2**53 or more as plain digits (1e20 as ``100000000000000000000``);
    reading that back gives a Python int, which is taken as the double it spells,
    so re-encoding decoded output always gives the same bytes.
    """
    return rfc8785.dumps(_big_integers_as_doubles(obj))


def integer_as_double(value: int) -> float | None:
    """The double an integer literal beyond 2**53 stands for, or None if it is none's.

    It is one when it equals the double exactly, or when it is how RFC 8785 (and
    JavaScript) writes that double (2**60 is written ``1152921504606847000``).
    Anything else would change value on the way in, so it is refused, not rounded.
    """
    try:
        double = float(value)
    except OverflowError:
        return None
    if int(double) == value or rfc8785.dumps(double) == str(value).encode("ascii"):
        return double
    return None


def _big_integers_as_doubles(obj: Any) -> Any:
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        if abs(obj) > MAX_SAFE_INTEGER:
            double = integer_as_double(obj)
            return obj if double is None else double
        return obj
    if isinstance(obj, dict):
        return {key: _big_integers_as_doubles(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [_big_integers_as_doubles(value) for value in obj]
    return obj


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def key_id_for(public_key: bytes) -> str:
    """Name a public key: ``"ed25519:"`` + the first 16 hex digits of its SHA-256.

    Derived, not assigned, so anyone holding the public key recomputes the same
    id and an id can never be re-pointed at a different key. 64 bits is plenty
    to tell a handful of host keys apart; it is a label, not a security claim —
    verification always uses the full public key.
    """
    if not isinstance(public_key, _BytesLike) or len(public_key) != PUBLIC_KEY_BYTES:
        raise ValueError(f"an ed25519 public key is {PUBLIC_KEY_BYTES} bytes")
    return KEY_ID_PREFIX + sha256_hex(bytes(public_key))[:16]


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
        if not isinstance(seed, _BytesLike) or len(seed) != SEED_BYTES:
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


def verify(payload_bytes: bytes, signature: bytes, public_key: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s signature over ``payload_bytes``.

    False, never an exception, for anything that is not a valid signature:
    wrong key, tampered bytes, malformed key or signature, wrong types. A
    verifier that can raise is one a caller may catch and carry on past.
    """
    if not all(isinstance(v, _BytesLike) for v in (payload_bytes, signature, public_key)):
        return False
    try:
        VerifyKey(bytes(public_key)).verify(bytes(payload_bytes), bytes(signature))
    except (CryptoError, ValueError, TypeError):
        return False
    return True


def verify_b64(payload_bytes: bytes, signature_b64: str, public_key_b64: str) -> bool:
    """``verify`` with the signature and public key given as base64 text."""
    try:
        signature = base64.b64decode(signature_b64, validate=True)
        public_key = base64.b64decode(public_key_b64, validate=True)
    except (binascii.Error, ValueError, TypeError):
        return False
    return verify(payload_bytes, signature, public_key)
