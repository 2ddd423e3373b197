"""The review pipeline: keys, checkers, claims, refreshes, LLM lenses, sweeps, deadlines."""

import ipaddress
import re

from django.core.exceptions import ImproperlyConfigured

from reviewapp.settings.broker import CELERY_BEAT_SCHEDULE, CELERY_TASK_SOFT_TIME_LIMIT
from reviewapp.settings.environment import DEBUG, VAR_DIR, env, read

# The server's ed25519 signing key: a base64 seed in the environment, or a
# file. In DEBUG a key is generated once into VAR_DIR with mode 0600.
REVIEWAPP_SIGNING_KEY = read(env.str, "REVIEWAPP_SIGNING_KEY", default="")
REVIEWAPP_SIGNING_KEY_FILE = read(
    env.path, "REVIEWAPP_SIGNING_KEY_FILE", default=VAR_DIR / "signing.key"
)
REVIEWAPP_SIGNING_KEY_AUTOCREATE = read(env.bool, "REVIEWAPP_SIGNING_KEY_AUTOCREATE", default=DEBUG)
# The keys verifiers trust (the ledger's trust anchors), kept outside the
# database: comma-separated base64 ed25519 public keys and/or paths of files
# holding them (`manage.py ledger_keys` output, or GET /api/keys JSON).
# REVIEWAPP_TRUST_OWN_KEY (default: DEBUG) also trusts this host's own key
# files, so `make run` and the tests need no anchors configured.
# Each is read when a server or worker starts (reviewapp.startup), and at every verification.
REVIEWAPP_TRUSTED_KEYS = read(env.list, "REVIEWAPP_TRUSTED_KEYS", default=[])
REVIEWAPP_TRUST_OWN_KEY = read(env.bool, "REVIEWAPP_TRUST_OWN_KEY", default=DEBUG)

# A worker running as root runs command checkers as this user (docs/operators.md,
# "Security"); a worker refuses to start when it is root or no user of the machine
# (reviewapp.startup).
REVIEWAPP_CHECKER_USER = read(env.str, "REVIEWAPP_CHECKER_USER", default="nobody")
# Further paths a command checker must not see; the data directory, .env, the
# signing key, the SQLite file and the witness log are always hidden.
REVIEWAPP_CHECKER_HIDE = read(env.list, "REVIEWAPP_CHECKER_HIDE", default=[])
# Paths a command checker may read (its scripts, its data) even where they lie in
# a scratch directory the sandbox empties (/tmp, /run); the checkout always is.
REVIEWAPP_CHECKER_READABLE = read(env.list, "REVIEWAPP_CHECKER_READABLE", default=[])

REVIEWAPP_CLAIM_TTL_MINUTES = read(env.int, "REVIEWAPP_CLAIM_TTL_MINUTES", default=30)
# How often an open inbox, and a proposal's progress while it runs, refresh themselves.
REVIEWAPP_INBOX_POLL_SECONDS = read(env.int, "REVIEWAPP_INBOX_POLL_SECONDS", default=5)
REVIEWAPP_PROGRESS_POLL_SECONDS = read(env.int, "REVIEWAPP_PROGRESS_POLL_SECONDS", default=2)
for _name in ("REVIEWAPP_INBOX_POLL_SECONDS", "REVIEWAPP_PROGRESS_POLL_SECONDS"):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be 1 or more (seconds).")
# A proposal still queued or evaluating this long after its last change is re-enqueued.
REVIEWAPP_STUCK_AFTER_SECONDS = read(env.int, "REVIEWAPP_STUCK_AFTER_SECONDS", default=120)
REVIEWAPP_SWEEP_EVERY_SECONDS = read(env.float, "REVIEWAPP_SWEEP_EVERY_SECONDS", default=30.0)
REVIEWAPP_LLM_TRANSPORT_ATTEMPTS = read(env.int, "REVIEWAPP_LLM_TRANSPORT_ATTEMPTS", default=4)
# LLM lenses are judged on an event loop in each worker process
# (reviewapp/review/evaluation/llm_loop/): at most this many proposals are on one
# process's loop, on one database connection of its own.
REVIEWAPP_LLM_PROPOSALS_PER_PROCESS = read(
    env.int, "REVIEWAPP_LLM_PROPOSALS_PER_PROCESS", default=200
)
# All of one lens's calls, retries and re-asks: past this it is a lens failure.
REVIEWAPP_LLM_LENS_TIME_LIMIT = read(
    env.float, "REVIEWAPP_LLM_LENS_TIME_LIMIT", default=float(CELERY_TASK_SOFT_TIME_LIMIT)
)
# Runs of the final step that failed (or never finished) before it escalates.
REVIEWAPP_FINAL_STEP_ATTEMPTS = read(env.int, "REVIEWAPP_FINAL_STEP_ATTEMPTS", default=3)
# Times the sweeper re-sends a proposal whose lenses have not all answered; at the next,
# those lenses are recorded as failed (saying so) and the proposal is decided or escalated.
REVIEWAPP_SWEEP_ATTEMPTS = read(env.int, "REVIEWAPP_SWEEP_ATTEMPTS", default=5)
# GET /mcp streams one token may hold open in one web process (each holds a socket).
REVIEWAPP_MCP_STREAMS_PER_TOKEN = read(env.int, "REVIEWAPP_MCP_STREAMS_PER_TOKEN", default=4)
for _name in (
    "REVIEWAPP_LLM_PROPOSALS_PER_PROCESS",
    "REVIEWAPP_LLM_LENS_TIME_LIMIT",
    "REVIEWAPP_FINAL_STEP_ATTEMPTS",
    "REVIEWAPP_SWEEP_ATTEMPTS",
    "REVIEWAPP_MCP_STREAMS_PER_TOKEN",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be positive.")
# Networks an LLM endpoint may be in besides public, private and loopback ones (e.g. the
# shared address space 100.64.0.0/10); link-local and metadata addresses never are.
REVIEWAPP_LLM_ALLOWED_NETWORKS = read(env.list, "REVIEWAPP_LLM_ALLOWED_NETWORKS", default=[])
for _network in REVIEWAPP_LLM_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"REVIEWAPP_LLM_ALLOWED_NETWORKS: {_exc}") from None
# The environment variables an LLM lens may name as its API key: names, or
# prefixes ending in "*" (review/evaluation/llm_keys.py says why there is a list at all).
REVIEWAPP_LLM_KEY_ENV_ALLOW = read(
    env.list, "REVIEWAPP_LLM_KEY_ENV_ALLOW", default=["LLM_API_KEY*"]
)
for _entry in REVIEWAPP_LLM_KEY_ENV_ALLOW:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\*?", _entry):
        raise ImproperlyConfigured(
            f"REVIEWAPP_LLM_KEY_ENV_ALLOW: {_entry!r} is neither a variable name nor a prefix "
            "ending in '*' (e.g. LLM_API_KEY*)"
        )
REVIEWAPP_API_MAX_BODY_BYTES = read(
    env.int, "REVIEWAPP_API_MAX_BODY_BYTES", default=2 * 1024 * 1024
)
REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = read(
    env.int, "REVIEWAPP_API_RATE_LIMIT_PER_MINUTE", default=600
)
CELERY_BEAT_SCHEDULE["sweep-stuck-proposals"] = {
    "task": "reviewapp.review.tasks.sweep_stuck_proposals",
    "schedule": REVIEWAPP_SWEEP_EVERY_SECONDS,
}

# --- Review deadlines (reviewapp/review/services/deadlines.py) ----------------
# How often the scheduler looks for escalations whose panel's deadline has come: a
# deadline is acted on within about this, plus the time its batch waits for a worker.
REVIEWAPP_DEADLINE_SWEEP_SECONDS = read(env.float, "REVIEWAPP_DEADLINE_SWEEP_SECONDS", default=10.0)
# Escalations handed to one worker task at a time.
REVIEWAPP_DEADLINE_BATCH = read(env.int, "REVIEWAPP_DEADLINE_BATCH", default=50)
# How long a worker holds the deadlines it was handed; past it, a sweep takes them again.
REVIEWAPP_DEADLINE_LEASE_SECONDS = read(
    env.float, "REVIEWAPP_DEADLINE_LEASE_SECONDS", default=120.0
)
# A deadline this late and not acted on makes /healthz "degraded".
REVIEWAPP_DEADLINE_LATE_SECONDS = read(env.float, "REVIEWAPP_DEADLINE_LATE_SECONDS", default=60.0)
for _name in (
    "REVIEWAPP_DEADLINE_SWEEP_SECONDS",
    "REVIEWAPP_DEADLINE_BATCH",
    "REVIEWAPP_DEADLINE_LEASE_SECONDS",
    "REVIEWAPP_DEADLINE_LATE_SECONDS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be positive.")
CELERY_BEAT_SCHEDULE["deadlines-sweep"] = {
    "task": "reviewapp.review.tasks.deadlines_sweep",
    "schedule": REVIEWAPP_DEADLINE_SWEEP_SECONDS,
}
