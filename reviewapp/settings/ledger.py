"""The ledger: checkpoints, the witness log and the witnesses that cosign."""

from django.core.exceptions import ImproperlyConfigured

from reviewapp.core.cosignature import CosignatureError, parse_witnesses
from reviewapp.core.merkle import MAX_NOTE_SIGNATURES
from reviewapp.settings.broker import CELERY_BEAT_SCHEDULE
from reviewapp.settings.environment import DEBUG, VAR_DIR, env, read

# The ledger's checkpoint origin line (C2SP tlog-checkpoint) and how often one is signed
# (only when the ledger grew: the witnesses are asked nothing while nothing is appended).
# The interval bounds how long a new decision is in no signed checkpoint, where a database
# owner could delete it without a trace (README, "What the checkpoint interval bounds").
REVIEWAPP_LEDGER_ORIGIN = read(env.str, "REVIEWAPP_LEDGER_ORIGIN", default="reviewapp.local/ledger")
REVIEWAPP_LEDGER_CHECKPOINT_EVERY_SECONDS = read(
    env.float, "REVIEWAPP_LEDGER_CHECKPOINT_EVERY_SECONDS", default=30.0
)
# Every checkpoint the server signs is also appended to a witness log outside
# the database (a file; empty turns it off) and/or POSTed to a witness URL, so
# `verify_ledger` notices history rewritten together with its checkpoints.
REVIEWAPP_LEDGER_WITNESS_FILE = read(
    env.str, "REVIEWAPP_LEDGER_WITNESS_FILE", default=str(VAR_DIR / "ledger-witness.jsonl")
)
# verify_ledger fails, rather than warns, when checkpoints were signed and no
# witness log is there to check them against (on by default in production).
REVIEWAPP_LEDGER_REQUIRE_WITNESS = read(
    env.bool, "REVIEWAPP_LEDGER_REQUIRE_WITNESS", default=not DEBUG
)
_witness_url = read(
    env.url, "REVIEWAPP_LEDGER_WITNESS_URL", default=None, schemes={"http", "https"}
)
REVIEWAPP_LEDGER_WITNESS_URL = _witness_url.geturl() if _witness_url else ""
# C2SP tlog-witness witnesses that cosign every checkpoint: one per line, `<vkey> <url>`
# (reviewapp/ledger/cosigning.py). Kept as (vkey, url) pairs; a bad line stops the start.
try:
    REVIEWAPP_LEDGER_WITNESSES = [
        (witness.key.text(), witness.url)
        for witness in parse_witnesses(read(env.str, "REVIEWAPP_LEDGER_WITNESSES", default=""))
    ]
except CosignatureError as _exc:
    raise ImproperlyConfigured(f"REVIEWAPP_LEDGER_WITNESSES: {_exc}") from _exc
if len(REVIEWAPP_LEDGER_WITNESSES) > MAX_NOTE_SIGNATURES - 1:
    # Served with the log's own signature, in one note verifiers must accept.
    raise ImproperlyConfigured(
        f"REVIEWAPP_LEDGER_WITNESSES: at most {MAX_NOTE_SIGNATURES - 1} witnesses"
    )
# How many of them must have cosigned the latest checkpoint for verifiers to pass (0: none).
REVIEWAPP_LEDGER_WITNESS_QUORUM = read(env.int, "REVIEWAPP_LEDGER_WITNESS_QUORUM", default=0)
if not 0 <= REVIEWAPP_LEDGER_WITNESS_QUORUM <= len(REVIEWAPP_LEDGER_WITNESSES):
    raise ImproperlyConfigured(
        f"REVIEWAPP_LEDGER_WITNESS_QUORUM is {REVIEWAPP_LEDGER_WITNESS_QUORUM}, but "
        f"REVIEWAPP_LEDGER_WITNESSES lists {len(REVIEWAPP_LEDGER_WITNESSES)} witnesses"
    )
# How often the scheduler brings witnesses that missed a checkpoint up to the latest one.
REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS = read(
    env.float, "REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS", default=60.0
)
# Raw ledger entries and the ledger export need an authenticated reader unless this is true.
# The sequencer gives committed entries their indexes right after each commit; this timer
# is its backstop (an entry left by a process killed after its commit), and an entry
# waiting longer than the bound is an alert in /healthz and the admin.
REVIEWAPP_LEDGER_SEQUENCE_EVERY_SECONDS = read(
    env.float, "REVIEWAPP_LEDGER_SEQUENCE_EVERY_SECONDS", default=5.0
)
REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS = read(
    env.float, "REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS", default=60.0
)
REVIEWAPP_LEDGER_PUBLIC = read(env.bool, "REVIEWAPP_LEDGER_PUBLIC", default=False)
CELERY_BEAT_SCHEDULE["ledger-checkpoint"] = {
    "task": "reviewapp.ledger.tasks.ledger_checkpoint",
    "schedule": REVIEWAPP_LEDGER_CHECKPOINT_EVERY_SECONDS,
}
CELERY_BEAT_SCHEDULE["ledger-sequence"] = {
    "task": "reviewapp.ledger.tasks.ledger_sequence",
    "schedule": REVIEWAPP_LEDGER_SEQUENCE_EVERY_SECONDS,
}
CELERY_BEAT_SCHEDULE["ledger-witness-catch-up"] = {
    "task": "reviewapp.ledger.tasks.ledger_witness_catch_up",
    "schedule": REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS,
}
