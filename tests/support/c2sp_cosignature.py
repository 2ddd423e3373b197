"""C2SP tlog-cosignature (v1, Ed25519) transcribed from the specification, for the tests.

Independent of reviewapp.core: nothing here imports the code under test, so
the tests check the server's and the witness's cosignatures against a
separate reading of the text (https://c2sp.org/tlog-cosignature,
https://c2sp.org/signed-note):

    key ID    = SHA-256(<name> || "\\n" || 0x04 || 32-byte Ed25519 public key)[:4]
    line      = "— " <name> " " base64(key ID || u64 big-endian timestamp || signature)
    message   = "cosignature/v1\\n" "time " <decimal timestamp> "\\n" <checkpoint note body>
"""

import base64
import hashlib

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

EM_DASH_SPACE = "\u2014 "


def witness_key_id(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\x0a" + b"\x04" + public_key).digest()[:4]


def vkey(name: str, public_key: bytes) -> str:
    """A signed-note verifier key string with signature type 0x04."""
    encoded = base64.standard_b64encode(b"\x04" + public_key).decode("ascii")
    return name + "+" + witness_key_id(name, public_key).hex() + "+" + encoded


def message(body: str, timestamp: int) -> bytes:
    return ("cosignature/v1\n" + "time " + str(timestamp) + "\n" + body).encode("utf-8")


def note_body(note: str) -> str:
    """The note text: up to and including the newline before the last blank line."""
    cut = note.rindex("\n\n")
    return note[: cut + 1]


def cosign(seed: bytes, name: str, body: str, timestamp: int) -> str:
    key = SigningKey(seed)
    signature = key.sign(message(body, timestamp)).signature
    raw = witness_key_id(name, bytes(key.verify_key)) + timestamp.to_bytes(8, "big") + signature
    return EM_DASH_SPACE + name + " " + base64.standard_b64encode(raw).decode("ascii")


def verify_line(line: str, name: str, public_key: bytes, body: str) -> int | None:
    """The line's timestamp when it is a valid cosignature of ``body`` by the key, else None."""
    if not line.startswith(EM_DASH_SPACE):
        return None
    line_name, _, encoded = line[len(EM_DASH_SPACE) :].partition(" ")
    if line_name != name:
        return None
    raw = base64.standard_b64decode(encoded)
    if len(raw) != 4 + 8 + 64 or raw[:4] != witness_key_id(name, public_key):
        return None
    timestamp = int.from_bytes(raw[4:12], "big")
    try:
        VerifyKey(public_key).verify(message(body, timestamp), raw[12:])
    except BadSignatureError:
        return None
    return timestamp
