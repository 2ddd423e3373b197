"""Checking one message as it arrives: a signed decision (ed25519) and the reviews it
names, a Standard Webhooks delivery."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from .ledger import carried_fields_problem, check_entry, content_problem
from .signing import key_id_for, sha256_hex

WEBHOOK_TOLERANCE_SECONDS = 300
_SECRET_PREFIX = "whsec_"


class VerificationError(Exception):
    """The signature, the key or the bytes do not check out; the message says which."""


def verify_decision(
    decision: Any, public_keys: Mapping[str, str], *, content: str | bytes | None = None
) -> dict:
    """Verify a decision by itself: its signed bytes, its signature, a key you trust, and
    every field it carries. Returns the signed payload as a dict.

    `decision` is a `Decision`, a decision dict from the API, or the `decision`
    part of a `proposal.decided` webhook (each has `payload`, `signature`,
    `key_id`). `public_keys` maps key ids to base64 public keys you obtained
    and trust (e.g. `Client.keys()` once, pinned). A public key that travels
    with the decision is never used (and must be the trusted one).

    Each field the object carries that restates the signed bytes — outcome,
    basis, decided_by, rationale, proposal, hash, prev_hash, claims, tags,
    wrong_reason, public_key, and its reviews (each verified and named by the
    decision, see `verify_decision_reviews`) — must say what was signed, or
    `VerificationError` names the field. (`id` and `ledger_index` are not
    signed.) With `content`, the text you are about to act on, its SHA-256 must
    be the one the decision signed: an approval is bound to what was approved.

    The checks are the offline verifier's for a decision from the API
    (`check_entry`, `carried_fields_problem`): the same code, one record at a time.
    """
    obj = _decision_fields(decision)
    payload, signature_b64, key_id = obj.get("payload"), obj.get("signature"), obj.get("key_id")
    keys = _review_keys(obj.get("reviews"), public_keys)
    keys[key_id] = _trusted_key(key_id, public_keys, "decision")
    checked, facts = check_entry("decision", payload, signature_b64, key_id, keys)
    if checked.problem:
        raise VerificationError(checked.problem)
    problem = carried_fields_problem(obj, checked, facts, keys, reviews_required=False)
    if problem:
        raise VerificationError(problem)
    signed = json.loads(payload)
    problem = None if content is None else content_problem(signed, content)
    if problem:
        raise VerificationError(problem)
    return signed


def verify_decision_reviews(decision: Any, public_keys: Mapping[str, str]) -> list[dict]:
    """Verify a decision and every review it rests on; returns the reviews' signed payloads.

    A decision on an escalation that needed several reviews names each one
    (reviewer, outcome, SHA-256 of its signed bytes) inside its own signed
    payload; `decision["reviews"]` (as the API gives it) carries the reviews
    themselves. Each review must verify with a key you trust, be named by the
    decision with the same reviewer and outcome, and be about the same
    proposal and escalation; every review the decision names must be there.
    """
    obj = _decision_fields(decision)
    obj.setdefault("reviews", [])  # here, reviews the decision names are required
    verify_decision(obj, public_keys)
    bodies = {sha256_hex(r["payload"].encode()): json.loads(r["payload"]) for r in obj["reviews"]}
    named = json.loads(obj["payload"]).get("reviews") or []
    return [bodies[n["review_sha256"]] for n in named]


def _decision_fields(decision: Any) -> dict:
    """The fields a decision object carries, as a dict (a dataclass's defaults for what the
    server did not send or that are null — no prev_hash, no public_key — count as not
    carried)."""
    if isinstance(decision, Mapping):
        return dict(decision)
    if dataclasses.is_dataclass(decision) and not isinstance(decision, type):
        fields = dataclasses.asdict(decision)
        if fields.get("prev_hash") is None:
            fields.pop("prev_hash", None)
        if fields.get("public_key") is None:
            fields.pop("public_key", None)
        return fields
    get = _getter(decision)
    return {k: get(k) for k in ("payload", "signature", "key_id") if get(k) is not None}


def _review_keys(reviews: Any, public_keys: Mapping[str, str]) -> dict[str, bytes]:
    """The trusted keys (as bytes) of the reviews given, for those you hold a key for."""
    ids = {r.get("key_id") for r in reviews or [] if isinstance(r, Mapping)}
    return {i: _trusted_key(i, public_keys, "review") for i in ids if i in public_keys}


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
