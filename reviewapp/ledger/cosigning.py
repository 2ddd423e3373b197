"""Being witnessed: each checkpoint goes to the C2SP tlog-witness witnesses, their cosignatures
are kept with it, and verifiers hold the latest checkpoint to a k-of-n witness policy.

The witnesses are configured outside the database (REVIEWAPP_LEDGER_WITNESSES);
``LedgerWitness`` rows only remember what each one last cosigned and what went
wrong. A submission sends ``old <size>`` — the size that witness last
cosigned for us — and the consistency proof from it. A 409 names the size the
witness really has: we resync from it and try once more. A size beyond our
latest checkpoint, or a different root at a size we share, is a fork. 403, 404
and 422 are alerts (the admin's witness list, ``/healthz``), each saying what
to do; an unreachable witness (no complete answer within 20 s counts) is tried
again by the next checkpoint or the beat's catch-up, which always sends the
latest checkpoint.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import httpx
from django.conf import settings
from django.db.models import Count, DateTimeField, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from reviewapp.core import cosignature, merkle
from reviewapp.core.cosignature import ConfiguredWitness, CosignatureError, WitnessPolicy
from reviewapp.egress.addresses import address_policy
from reviewapp.egress.client import checked_client, exchange_deadline

from . import services
from .keys import trusted_keys
from .models import LedgerCheckpoint, LedgerCosignature, LedgerWitness

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0
# The whole exchange, answer included: a witness trickling bytes never holds a worker longer.
ANSWER_DEADLINE_SECONDS = 20.0
MAX_ANSWER_BYTES = 64 * 1024
# How far ahead of ours a witness's clock may run: a cosignature timestamped later is refused.
MAX_COSIGNATURE_AHEAD_SECONDS = 300
USER_AGENT = "reviewapp-ledger/1"


def configured_witnesses() -> list[ConfiguredWitness]:
    return [
        ConfiguredWitness(cosignature.parse_vkey(vkey), url)
        for vkey, url in settings.REVIEWAPP_LEDGER_WITNESSES
    ]


def witness_policy() -> WitnessPolicy | None:
    """The k-of-n policy verifiers enforce, or None when REVIEWAPP_LEDGER_WITNESS_QUORUM is 0."""
    quorum = settings.REVIEWAPP_LEDGER_WITNESS_QUORUM
    if not quorum:
        return None
    return WitnessPolicy(tuple(w.key for w in configured_witnesses()), quorum)


def witness_rows() -> list[LedgerWitness]:
    """The state row of every configured witness, created on first use."""
    return [
        LedgerWitness.objects.get_or_create(vkey=w.key.text(), defaults={"name": w.key.name})[0]
        for w in configured_witnesses()
    ]


def witness_report() -> list[dict]:
    """What is known of each configured witness (for /healthz), without writing anything."""
    rows = {
        row.vkey: row
        for row in LedgerWitness.objects.filter(
            vkey__in=[w.key.text() for w in configured_witnesses()]
        )
    }
    report = []
    for witness in configured_witnesses():
        row = rows.get(witness.key.text()) or LedgerWitness(name=witness.key.name)
        report.append(
            {
                "name": row.name,
                "known_size": row.known_size,
                "last_cosigned_at": row.last_cosigned_at and row.last_cosigned_at.isoformat(),
                "alert": row.alert or None,
                "unreachable": row.unreachable or None,
                "unreachable_since": row.unreachable_since and row.unreachable_since.isoformat(),
            }
        )
    return report


# ── verifying against the policy ─────────────────────────────────────────────


def checkpoint_policy_problem(checkpoint: LedgerCheckpoint, policy: WitnessPolicy) -> str | None:
    """Why the checkpoint's stored cosignatures do not meet the policy, or None.

    Every line is re-verified against the configured keys, and the log's own
    signature against the trust anchors: a row is never taken on trust.
    """
    note = services.checkpoint_note_with_cosignatures(checkpoint)
    try:
        merkle.open_checkpoint(note, trusted_keys().values())
        result = cosignature.note_policy_check(policy, note)
    except merkle.NoteError as exc:
        return str(exc)
    return result.problem()


def latest_checkpoint_policy_problem() -> str | None:
    """The witness policy's verdict on the latest checkpoint (None: met, no policy, none signed)."""
    policy = witness_policy()
    checkpoint = services.latest_checkpoint()
    if policy is None or checkpoint is None:
        return None
    problem = checkpoint_policy_problem(checkpoint, policy)
    return problem and f"checkpoint {checkpoint.tree_size}: {problem}"


def latest_cosigned_checkpoint() -> LedgerCheckpoint | None:
    """The newest checkpoint the witnesses vouch for: meeting the policy, or (no quorum set)
    cosigned by at least one configured witness. None without witnesses, or before any."""
    witnesses = configured_witnesses()
    if not witnesses:
        return None
    policy = witness_policy() or WitnessPolicy(tuple(w.key for w in witnesses), 1)
    candidates = (
        LedgerCheckpoint.objects.annotate(cosigned=Count("cosignatures"))
        .filter(cosigned__gte=policy.quorum)
        .order_by("-tree_size", "-id")
    )
    for checkpoint in candidates[:20]:
        if checkpoint_policy_problem(checkpoint, policy) is None:
            return checkpoint
    return None


def cosigned_checkpoint_covering(position: int) -> tuple[LedgerCheckpoint | None, str | None]:
    """The newest checkpoint past ``position`` meeting the policy, or why there is none.

    (None, None) when no policy is configured.
    """
    policy = witness_policy()
    if policy is None:
        return None, None
    candidates = (
        LedgerCheckpoint.objects.filter(tree_size__gt=position)
        .annotate(cosigned=Count("cosignatures"))
        .filter(cosigned__gte=policy.quorum)
        .order_by("-tree_size", "-id")
    )
    for checkpoint in candidates[:20]:
        if checkpoint_policy_problem(checkpoint, policy) is None:
            return checkpoint, None
    latest = services.latest_checkpoint()
    if latest is None or latest.tree_size <= position:
        return None, "not yet covered by a checkpoint"
    problem = checkpoint_policy_problem(latest, policy) or "no cosigned checkpoint covers it"
    return None, f"checkpoint {latest.tree_size}: {problem}"


# ── submitting ───────────────────────────────────────────────────────────────

_clients: dict = {}


def witness_client() -> httpx.Client:
    """One client per worker process and address policy: connections to witnesses are kept
    alive (as tlog-witness asks), and only addresses the webhook policy allows are reached."""
    policy = address_policy()
    client = _clients.get(policy)
    if client is None:
        client = _clients[policy] = checked_client(
            policy,
            connect=CONNECT_TIMEOUT_SECONDS,
            read=READ_TIMEOUT_SECONDS,
            user_agent=USER_AGENT,
        )
    return client


def _post(url: str, body: bytes) -> tuple[int, str, str]:
    """(status, content type, the start of the answer). Raises httpx.HTTPError."""
    # Raw bytes, never inflated: a few compressed bytes could inflate to gigabytes.
    headers = {"Content-Type": "text/plain", "Accept-Encoding": "identity"}
    with (
        exchange_deadline(ANSWER_DEADLINE_SECONDS),
        witness_client().stream(
            "POST", f"{url}/add-checkpoint", content=body, headers=headers
        ) as reply,
    ):
        answer = b""
        for chunk in reply.iter_raw():
            answer += chunk
            if len(answer) > MAX_ANSWER_BYTES:
                break
        content_type = reply.headers.get("Content-Type", "").split(";")[0].strip()
        return reply.status_code, content_type, answer[:MAX_ANSWER_BYTES].decode("utf-8", "replace")


def _alert(row: LedgerWitness, text: str) -> str:
    log.error("ledger witness %s: %s", row.name, text)
    LedgerWitness.objects.filter(pk=row.pk).update(alert=text, alert_at=timezone.now())
    return "alert"


def _unreachable(row: LedgerWitness, text: str) -> str:
    log.warning("ledger witness %s unreachable: %s", row.name, text)
    LedgerWitness.objects.filter(pk=row.pk).update(
        unreachable=text[:500],
        # The first failure in a row, kept until the witness answers again.
        unreachable_since=Coalesce(
            "unreachable_since", Value(timezone.now(), output_field=DateTimeField())
        ),
    )
    return "unreachable"


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text[:200] + ("…" if len(text) > 200 else "")


REFUSALS = {
    400: "{name} found our request malformed (HTTP 400: {answer}): a bug in this server or the "
    "witness; report it with this message.",
    403: "{name} does not trust the key this log signs with (HTTP 403): give its operator the "
    "output of `manage.py ledger_keys --vkey` (after a key rotation, the new key's line too).",
    404: "{name} does not witness the origin {origin} (HTTP 404): its operator must add this "
    "log — a line of `manage.py ledger_keys --vkey` — to its configuration.",
    422: "{name} refused the consistency proof from size {old} to {size} (HTTP 422): its record "
    "of this log at size {old} is not this database's — a fork or a rolled-back ledger. Run "
    "verify_ledger and compare with the witness's operator; do not reset the witness to "
    "silence this.",
}


def _cosigned(checkpoint: LedgerCheckpoint, key: cosignature.VerifierKey) -> bool:
    return LedgerCosignature.objects.filter(
        checkpoint=checkpoint, witness=key.name, key_id=key.key_id.hex()
    ).exists()


def witness_submit(*, checkpoint_id: int, witness_id: int) -> str:
    """Submit one checkpoint to one witness and store its cosignature. Idempotent.

    Returns what happened: ``cosigned``, ``already`` (cosigned before),
    ``superseded`` (the witness holds a later checkpoint), ``unreachable``,
    ``alert`` or ``gone`` (the checkpoint, the row or the configuration is).
    """
    checkpoint = LedgerCheckpoint.objects.filter(pk=checkpoint_id).first()
    row = LedgerWitness.objects.filter(pk=witness_id).first()
    configured = row and next((w for w in configured_witnesses() if w.key.text() == row.vkey), None)
    if checkpoint is None or configured is None:
        return "gone"
    key = configured.key
    for attempt in (1, 2):
        if checkpoint.tree_size < row.known_size:
            return "superseded"
        if _cosigned(checkpoint, key):
            return "already"
        old = row.known_size
        try:
            proof = services.consistency_proof(old, checkpoint.tree_size)
        except (merkle.ProofError, LookupError) as exc:
            return _alert(row, f"no consistency proof from size {old} ({exc}): run verify_ledger")
        body = cosignature.add_checkpoint_body(old, proof, checkpoint.note)
        try:
            status, content_type, answer = _post(configured.url, body)
        except httpx.TimeoutException as exc:
            return _unreachable(
                row,
                f"no answer within {ANSWER_DEADLINE_SECONDS:g} s, or a wait for its next byte "
                f"over {READ_TIMEOUT_SECONDS:g} s ({type(exc).__name__})",
            )
        except httpx.HTTPError as exc:
            return _unreachable(row, f"{type(exc).__name__}: {exc}")
        if status == 200:
            return _store(row, key, checkpoint, answer)
        if status == 409 and content_type == cosignature.SIZE_CONTENT_TYPE:
            try:
                size = cosignature.parse_size_body(answer)
            except CosignatureError as exc:
                return _alert(row, f"{row.name} answered 409 with a malformed size: {exc}")
            # Checkpoints are submitted once committed, so the witness's can be no later than
            # our latest: one beyond it was never signed here.
            ours = services.integrated_size()
            if size > ours:
                return _alert(
                    row,
                    f"{row.name} has cosigned size {size} of this log, but this database's "
                    f"latest checkpoint is of size {ours} (HTTP 409): entries or checkpoints "
                    "were removed, or another ledger signs under this origin. Run verify_ledger "
                    "with the witness log; do not reset the witness to silence this.",
                )
            if size == old == checkpoint.tree_size:
                return _alert(
                    row,
                    f"{row.name} cosigned another root for size {size} (HTTP 409): this ledger "
                    "forked. Run verify_ledger; do not reset the witness to silence this.",
                )
            if size == old:
                return _alert(
                    row,
                    f"{row.name} answered 409 naming size {size}, the old size we sent: a "
                    "witness answers 409 only when it holds another size. Report it to its "
                    "operator.",
                )
            # The witness's own record wins: a resync may move our idea of it either way.
            LedgerWitness.objects.filter(pk=row.pk).update(known_size=size)
            row.known_size = size
            log.info("ledger witness %s resynced at size %s (attempt %s)", row.name, size, attempt)
            continue
        if status in REFUSALS:
            text = REFUSALS[status].format(
                name=row.name,
                origin=checkpoint.origin,
                old=old,
                size=checkpoint.tree_size,
                answer=_excerpt(answer),
            )
            return _alert(row, text)
        return _unreachable(row, f"HTTP {status}: {_excerpt(answer)}")
    # 409 twice: a submission that raced ours may have settled it; else the witness keeps
    # moving, which must show rather than pass for a witness that is fine.
    if checkpoint.tree_size < row.known_size:
        return "superseded"
    if _cosigned(checkpoint, key):
        return "already"
    return _unreachable(
        row, f"answered 409 twice, the second time naming size {row.known_size}; tried again later"
    )


def _store(
    row: LedgerWitness,
    key: cosignature.VerifierKey,
    checkpoint: LedgerCheckpoint,
    answer: str,
) -> str:
    text, _ = merkle.parse_note(checkpoint.note)
    try:
        lines = cosignature.response_lines(answer)
    except CosignatureError as exc:
        return _alert(row, f"{row.name} answered 200 without cosignature lines: {exc}")
    valid = []
    for line in lines:
        try:
            parsed = cosignature.parse_cosignature(line)
        except CosignatureError:
            continue  # another signature type, or a key we do not know: ignored
        if (parsed.name, parsed.key_id) != (key.name, key.key_id):
            continue
        if not cosignature.verify_cosignature(text, parsed, key):
            return _alert(
                row,
                f"{row.name} answered with a cosignature that does not verify against "
                f"{key.text()}: check that key in REVIEWAPP_LEDGER_WITNESSES.",
            )
        if problem := _future_timestamp_problem(row, parsed.timestamp):
            return _alert(row, problem)
        valid.append(parsed)
    if not valid:
        return _alert(
            row,
            f"{row.name} answered 200 without a cosignature by {key.text()}: check that key in "
            "REVIEWAPP_LEDGER_WITNESSES.",
        )
    first = valid[0]
    LedgerCosignature.objects.bulk_create(
        [
            LedgerCosignature(
                checkpoint=checkpoint,
                witness=key.name,
                key_id=key.key_id.hex(),
                timestamp=first.timestamp,
                line=first.line,
            )
        ],
        ignore_conflicts=True,  # a concurrent submission stored one already
    )
    now = timezone.now()
    LedgerWitness.objects.filter(pk=row.pk).update(
        alert="", alert_at=None, unreachable="", unreachable_since=None, last_cosigned_at=now
    )
    # Only forward: an older checkpoint's late answer must not wind the record back.
    LedgerWitness.objects.filter(pk=row.pk, known_size__lt=checkpoint.tree_size).update(
        known_size=checkpoint.tree_size
    )
    return "cosigned"


def _future_timestamp_problem(row: LedgerWitness, timestamp: int) -> str | None:
    """A cosignature claims when it was made: one from later than a witness's clock can
    plausibly lead ours is refused (stored, it would pass for a cosignature made then)."""
    ahead = timestamp - time.time()
    if ahead <= MAX_COSIGNATURE_AHEAD_SECONDS:
        return None
    when = (
        datetime.fromtimestamp(timestamp, UTC).isoformat()
        if timestamp < 253402300800  # year 10000: past it no date is written
        else "beyond any date"
    )
    return (
        f"{row.name} answered with a cosignature timestamped {timestamp} ({when}), "
        f"{ahead:,.0f} s in the future by this server's clock; refused, as at most "
        f"{MAX_COSIGNATURE_AHEAD_SECONDS} s ahead is accepted: the witness's clock (or ours) "
        "is wrong, or it is not answering as a witness."
    )


def witnesses_behind() -> list[tuple[int, int]]:
    """(latest checkpoint id, witness id) for every configured witness without its cosignature."""
    latest = services.latest_checkpoint()
    if latest is None:
        return []
    signed_by = set(latest.cosignatures.values_list("witness", "key_id"))
    return [
        (latest.pk, row.pk)
        for row, witness in zip(witness_rows(), configured_witnesses(), strict=True)
        if (witness.key.name, witness.key.key_id.hex()) not in signed_by
    ]
