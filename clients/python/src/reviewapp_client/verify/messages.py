"""Checking one message as it arrives: a signed decision (ed25519) and the reviews it
names, a Standard Webhooks delivery."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from . import merkle
from .ledger import check_entry, loads
from .signing import key_id_for, sha256_hex, verify

REVIEW_TYPE = "reviewapp.review/v1"

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
    get = _getter(decision)
    payload, signature_b64, key_id = get("payload"), get("signature"), get("key_id")
    public_key = _trusted_key(key_id, public_keys, "decision")
    checked, _ = check_entry("decision", payload, signature_b64, key_id, {key_id: public_key})
    if checked.problem:
        raise VerificationError(checked.problem)
    return json.loads(payload)


def verify_decision_reviews(decision: Any, public_keys: Mapping[str, str]) -> list[dict]:
    """Verify a decision and every review it rests on; returns the reviews' signed payloads.

    A decision on an escalation that needed several reviews names each one
    (reviewer, outcome, SHA-256 of its signed bytes) inside its own signed
    payload; `decision["reviews"]` (as the API gives it) carries the reviews
    themselves. Each review must verify with a key you trust, be named by the
    decision with the same reviewer and outcome, and be about the same
    proposal and escalation; every review the decision names must be there.
    """
    signed = verify_decision(decision, public_keys)
    named = signed.get("reviews")
    given = _getter(decision)("reviews") or []
    if named is None:
        if given:
            raise VerificationError("reviews given for a decision that names none")
        return []
    if not isinstance(named, list) or not all(isinstance(n, dict) for n in named):
        raise VerificationError("the decision's reviews list is malformed")
    by_hash = {n.get("review_sha256"): n for n in named}
    found: dict[str, dict] = {}
    for review in given:
        get = _getter(review)
        payload, signature_b64, key_id = get("payload"), get("signature"), get("key_id")
        digest = sha256_hex(payload.encode())
        entry = by_hash.get(digest)
        if entry is None:
            raise VerificationError(f"review {digest} is not named by the decision")
        body = _verified_review(payload, signature_b64, key_id, public_keys)
        if (body.get("reviewer"), body.get("outcome")) != (
            entry.get("reviewer"),
            entry.get("outcome"),
        ):
            raise VerificationError(f"review {digest} says another reviewer or outcome")
        if body.get("proposal") != signed.get("proposal") or (body.get("escalation") or {}).get(
            "id"
        ) != (signed.get("escalation") or {}).get("id"):
            raise VerificationError(f"review {digest} is about another proposal or escalation")
        found[digest] = body
    missing = [h for h in by_hash if h not in found]
    if missing:
        raise VerificationError(f"the decision names reviews not given: {', '.join(missing)}")
    return [found[n["review_sha256"]] for n in named]


def _verified_review(
    payload: str, signature_b64: str, key_id: str, keys: Mapping[str, str]
) -> dict:
    public_key = _trusted_key(key_id, keys, "review")
    payload_bytes = payload.encode()
    try:
        signature = base64.b64decode(signature_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise VerificationError("a review's signature is not base64") from exc
    if not verify(payload_bytes, signature, public_key):
        raise VerificationError(f"a review's signature does not verify with key {key_id}")
    body = loads(payload_bytes)
    if not isinstance(body, dict) or merkle.jcs(body) != payload_bytes:
        raise VerificationError("a review's signed bytes are not a canonical JSON object")
    if body.get("type") != REVIEW_TYPE:
        raise VerificationError(f"a review whose payload is not a {REVIEW_TYPE}")
    return body


def _getter(obj: Any):
    return obj.get if isinstance(obj, Mapping) else lambda k: getattr(obj, k, None)


def _trusted_key(key_id: str, public_keys: Mapping[str, str], what: str) -> bytes:
    """The public key for `key_id` from the keys you trust, never one that travels along."""
    public_key_b64 = public_keys.get(key_id)
    if public_key_b64 is None:
        raise VerificationError(f"{what} signed by {key_id!r}, which is not among your keys")
    try:
        public_key = base64.b64decode(public_key_b64, validate=True)
        named = key_id_for(public_key)
    except (binascii.Error, ValueError) as exc:
        raise VerificationError(f"the key given for {key_id!r} is not an ed25519 key") from exc
    if named != key_id:
        raise VerificationError(f"key id {key_id!r} does not name the public key given for it")
    return public_key


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
