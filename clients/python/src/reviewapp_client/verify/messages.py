"""Checking one message as it arrives: a signed decision (ed25519), a Standard Webhooks delivery."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from .ledger import check_entry
from .signing import key_id_for

WEBHOOK_TOLERANCE_SECONDS = 300
_SECRET_PREFIX = "whsec_"


class VerificationError(Exception):
    """The signature, the key or the bytes do not check out; the message says which."""


def verify_decision(decision: Any, public_keys: Mapping[str, str]) -> dict:
    """Verify a decision by itself: its signed bytes, its signature, a key you trust.

    `decision` is a `Decision`, a decision dict from the API, or the `decision`
    part of a `proposal.decided` webhook (each has `payload`, `signature`,
    `key_id`). `public_keys` maps key ids to base64 public keys you obtained
    and trust (e.g. `Client.keys()` once, pinned). A public key that travels
    with the decision is never used. Returns the signed payload as a dict.

    The checks are the offline verifier's for a decision in a ledger export
    (`check_entry`): the same code, one record at a time.
    """
    get = decision.get if isinstance(decision, Mapping) else lambda k: getattr(decision, k)
    payload, signature_b64, key_id = get("payload"), get("signature"), get("key_id")
    public_key_b64 = public_keys.get(key_id)
    if public_key_b64 is None:
        raise VerificationError(f"decision signed by {key_id!r}, which is not among your keys")
    try:
        public_key = base64.b64decode(public_key_b64, validate=True)
        named = key_id_for(public_key)
    except (binascii.Error, ValueError) as exc:
        raise VerificationError(f"the key given for {key_id!r} is not an ed25519 key") from exc
    if named != key_id:
        raise VerificationError(f"key id {key_id!r} does not name the public key given for it")
    checked, _ = check_entry("decision", payload, signature_b64, key_id, {key_id: public_key})
    if checked.problem:
        raise VerificationError(checked.problem)
    return json.loads(payload)


def verify_webhook(
    headers: Mapping[str, str],
    body: bytes | str,
    secret: str,
    *,
    tolerance: float = WEBHOOK_TOLERANCE_SECONDS,
    now: float | None = None,
) -> dict:
    """Verify a Standard Webhooks delivery and return its parsed body.

    Checks `webhook-signature` (any of its space-separated `v1,` signatures)
    over `{webhook-id}.{webhook-timestamp}.{body}` under `secret` (`whsec_…`),
    and that the timestamp is within `tolerance` seconds of now, so a captured
    delivery cannot be replayed later. Deduplicate on `webhook-id`.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    msg_id = lowered.get("webhook-id")
    timestamp = lowered.get("webhook-timestamp")
    signatures = lowered.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        raise VerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent_at = int(timestamp)
    except ValueError as exc:
        raise VerificationError("webhook-timestamp is not a number") from exc
    if abs((time.time() if now is None else now) - sent_at) > tolerance:
        raise VerificationError("webhook-timestamp is too old or in the future")
    body_bytes = body.encode() if isinstance(body, str) else body
    key = base64.b64decode(secret.removeprefix(_SECRET_PREFIX))
    expected = hmac.new(key, f"{msg_id}.{sent_at}.".encode() + body_bytes, hashlib.sha256).digest()
    for candidate in signatures.split(" "):
        version, _, value = candidate.partition(",")
        if version != "v1":
            continue
        try:
            given = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(given, expected):
            return json.loads(body_bytes)
    raise VerificationError("no webhook signature matches this secret")
