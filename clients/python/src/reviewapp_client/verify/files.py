"""Reading the verifier's inputs: JSON lines, checkpoints, witness logs, proofs, public keys."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cosignature import CosignatureError, VerifierKey, parse_vkey
from .ledger import Failure, loads


@dataclass(frozen=True)
class BadLine:
    """A line that cannot be used, carried in order so it is reported in order."""

    problem: str


def json_lines(numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, Any]]:
    """(line number, object) per non-blank numbered line; a line that is not JSON: a BadLine."""
    for number, line in numbered:
        if not line.strip():
            continue
        try:
            yield number, loads(line)
        except ValueError as exc:
            yield number, BadLine(f"not JSON ({exc})")


def read_witness_file(path: str) -> list[tuple[str, str]]:
    """A witness log: one ``{"tree_size", "checkpoint"}`` JSON line per signed checkpoint."""
    notes = []
    with open(path, encoding="utf-8") as handle:
        for number, obj in json_lines(enumerate(handle, 1)):
            where = f"witness log {path} line {number}"
            if not isinstance(obj, dict) or not isinstance(obj.get("checkpoint"), str):
                raise Failure(where, "not a checkpoint line")
            notes.append((where, obj["checkpoint"]))
    return notes


def read_checkpoint_file(path: str) -> str:
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        try:
            text = loads(text)["checkpoint"]
        except (ValueError, KeyError, TypeError) as exc:
            raise Failure(path, "not a checkpoint: JSON without a 'checkpoint' field") from exc
    return text


def _decode_key(text: str, source: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{source} is not a base64 public key") from exc
    if len(key) != 32:
        raise ValueError(f"{source} is not a 32-byte ed25519 public key")
    return key


def load_public_keys(value: str) -> list[bytes]:
    """Keys from ``--public-key``: base64 text, or a file holding keys.

    A file may hold one base64 key per line (anything after the key on a line,
    and lines starting with ``#``, are ignored: ``manage.py ledger_keys``
    writes ``KEY key_id``), or JSON: ``{"public_key": ...}`` or a list of
    those (``GET /api/keys``).
    """
    path = Path(value)
    if not path.is_file():
        try:
            return [_decode_key(value, repr(value))]
        except ValueError:
            raise ValueError(f"{value!r} is neither a base64 public key nor a file") from None
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith(("{", "[")):
        try:
            data = loads(text)
        except ValueError as exc:
            raise ValueError(f"{value} is not valid JSON ({exc})") from exc
        if isinstance(data, dict) and "detail" in data and "public_key" not in data:
            raise ValueError(
                f"{value} holds an API error ({data['detail']!r}), not keys: save the answer "
                "of GET /api/keys (public, no token needed) or the output of manage.py "
                "ledger_keys"
            )
        try:
            items = data if isinstance(data, list) else [data]
            return [_decode_key(item["public_key"], f"{value}") for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{value} is JSON without public_key fields ({exc})") from exc
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            keys.append(_decode_key(line.split()[0], f"{value} line {number}"))
    if not keys:
        raise ValueError(f"{value} holds no public key")
    return keys


def load_witness_keys(value: str) -> list[VerifierKey]:
    """Keys from ``--witness-key``: a witness's verifier key, or a file holding them.

    A vkey is ``<name>+<key id>+<base64(0x04 ‖ Ed25519 key)>`` (C2SP signed
    note). A file holds one per line; lines starting with ``#`` are skipped and
    anything after the key on a line is ignored, so the server's
    ``REVIEWAPP_LEDGER_WITNESSES`` (``<vkey> <url>`` lines) can be given as it is.
    """
    path = Path(value)
    if not path.is_file():
        if "+" not in value:
            raise ValueError(f"{value!r} is neither a witness verifier key nor a file")
        try:
            return [parse_vkey(value)]
        except CosignatureError as exc:
            raise ValueError(f"--witness-key {exc}") from None
    keys = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                keys.append(parse_vkey(line.split()[0]))
            except CosignatureError as exc:
                raise ValueError(f"{value} line {number}: {exc}") from None
    if not keys:
        raise ValueError(f"{value} holds no witness verifier key")
    return keys


def read_proofs(path: str) -> dict[str, tuple[str, dict]]:
    proofs = {}
    with open(path, encoding="utf-8") as handle:
        for number, obj in json_lines(enumerate(handle, 1)):
            if isinstance(obj, BadLine):
                raise Failure(f"{path} line {number}", obj.problem)
            if not isinstance(obj, dict) or not isinstance(obj.get("leaf_hash"), str):
                raise Failure(f"{path} line {number}", "not an inclusion proof")
            proofs[obj["leaf_hash"]] = (f"{path} line {number}", obj)
    return proofs
