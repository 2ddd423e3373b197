"""Checking ed25519 signatures over RFC 8785 canonical JSON: the half that needs no private key.

What is signed is stored as the exact bytes that were signed, never a
structure to re-encode later: verifying needs nothing but those bytes, the
signature and a public key. The server signs with ``reviewapp.core.signing``,
which takes these functions from here, so signer and verifier agree on the
canonical form and on key ids by construction.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import rfc8785
from nacl.exceptions import CryptoError
from nacl.signing import VerifyKey

PUBLIC_KEY_BYTES = 32
KEY_ID_PREFIX = "ed25519:"
MAX_SAFE_INTEGER = 2**53 - 1

BYTES_LIKE = (bytes, bytearray, memoryview)


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
    if not isinstance(public_key, BYTES_LIKE) or len(public_key) != PUBLIC_KEY_BYTES:
        raise ValueError(f"an ed25519 public key is {PUBLIC_KEY_BYTES} bytes")
    return KEY_ID_PREFIX + sha256_hex(bytes(public_key))[:16]


def verify(payload_bytes: bytes, signature: bytes, public_key: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s signature over ``payload_bytes``.

    False, never an exception, for anything that is not a valid signature:
    wrong key, tampered bytes, malformed key or signature, wrong types. A
    verifier that can raise is one a caller may catch and carry on past.
    """
    if not all(isinstance(v, BYTES_LIKE) for v in (payload_bytes, signature, public_key)):
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
