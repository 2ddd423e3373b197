"""Settings, read from the environment.

Every value comes from an environment variable (or `.env`), and a value that
cannot be used stops the process at start-up with a message naming the
variable: a typo must never silently fall back to a default in production.
This module only reads and checks values; what needs the machine (directories
made, a user or a key file looked up) is reviewapp/startup.py's.
"""

import ipaddress
import re
from importlib.util import find_spec
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from environs import Env, EnvError

from reviewapp.core.cosignature import CosignatureError, parse_witnesses
from reviewapp.core.merkle import MAX_NOTE_SIGNATURES

BASE_DIR = Path(__file__).resolve().parent.parent

env = Env()
env.read_env(BASE_DIR / ".env", recurse=False)


def _read(reader, name, **kwargs):
    try:
        return reader(name, **kwargs)
    except EnvError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from exc


DEBUG = _read(env.bool, "DEBUG", default=False)
# Made when Django is set up (reviewapp.startup.prepare_var_dir).
VAR_DIR = Path(_read(env.str, "REVIEWAPP_VAR_DIR", default=str(BASE_DIR / "var"))).resolve()

SECRET_KEY = _read(env.str, "SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it to a long random string "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))'), "
            "or set DEBUG=true for local development."
        )
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"
elif not DEBUG and (
    re.search(r"change-?me|dev-only-insecure", SECRET_KEY, re.IGNORECASE)
    or SECRET_KEY.startswith("django-insecure-")
    # Django's own measure of a weak key (check --deploy, security.W009): here it stops the start.
    or len(SECRET_KEY) < 50
    or len(set(SECRET_KEY)) < 5
):
    raise ImproperlyConfigured(
        "SECRET_KEY is a placeholder or too weak for production (it needs 50 or more "
        "characters, at least 5 of them different, and no 'change-me'). Set it to a long "
        "random string: python -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )

ALLOWED_HOSTS = _read(
    env.list, "ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS = _read(env.list, "CSRF_TRUSTED_ORIGINS", default=[])


def parse_database_url(url: str) -> dict:
    """Turn DATABASE_URL into a Django DATABASES entry, or say what is wrong."""
    try:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"DATABASE_URL {url!r} is not a usable database URL ({exc}). "
            "Use postgres://USER:PASSWORD@HOST:5432/NAME or sqlite:////absolute/path.sqlite3."
        ) from exc
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"DATABASE_URL {url!r} names no database.")
    return config


DATABASES = {
    "default": parse_database_url(
        _read(env.str, "DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'reviewapp.sqlite3'}")
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write concurrently; WAL plus a busy
    # timeout lets them take turns instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and _read(
    env.bool, "DATABASE_PREPARED_STATEMENTS", default=True
):
    # Server-side parameters let psycopg prepare the statements the pipeline
    # repeats for every proposal: PostgreSQL then stops re-planning them,
    # which measured 40 % less database CPU per proposal. Turn off behind a
    # transaction-mode pooler (PgBouncer < 1.21), which cannot keep them.
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 2}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Its search fields (the inbox's search vector); inert on SQLite.
    "django.contrib.postgres",
    "reviewapp.review",
    "reviewapp.audit",
    "reviewapp.ledger",
    "reviewapp.insights",
    "reviewapp.webhooks",
    "reviewapp.calibration",
    "reviewapp.replay",
    "reviewapp.guarantee",
    "reviewapp.notifications",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # request.htmx: what htmx's request headers say (django-htmx).
    "django_htmx.middleware.HtmxMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "reviewapp.web.headers.PermissionsPolicyMiddleware",
    "reviewapp.web.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "reviewapp.urls"
WSGI_APPLICATION = "reviewapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # `csp_nonce`: Django admin's own templates put it on their scripts.
                "django.template.context_processors.csp",
            ],
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "inbox"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# django-ninja's bundled Swagger UI (static/ninja/...), served as our own files
# for /api/docs (reviewapp/api/docs.py). Found without importing ninja: as an
# installed app it would load pydantic and django.test into every worker.
STATICFILES_DIRS = [BASE_DIR / "static", Path(find_spec("ninja").origin).parent / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"  # made with VAR_DIR: whitenoise warns when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# Security headers; `check --deploy` must pass with DEBUG off.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy: only our own scripts, styles and fonts; no inline
# script or style (templates carry none; htmx is told not to inject its
# indicator style nor to eval). The nonce is added only on pages that use it
# (Django admin's own templates); a nonce never admits a `style=` attribute.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.NONE],
}
# Browser features no page here uses, switched off for every page.
PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), "
    "microphone=(), payment=(), usb=()"
)
SECURE_REFERRER_POLICY = "same-origin"
SECURE_SSL_REDIRECT = _read(env.bool, "SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = _read(env.bool, "SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = _read(env.bool, "CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = _read(env.int, "SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = _read(env.bool, "SECURE_HSTS_PRELOAD", default=not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Celery ---------------------------------------------------------------
# With no broker configured the app uses kombu's filesystem transport under
# VAR_DIR, so the one-command run needs no server. A redis:// URL switches.
CELERY_BROKER_URL = _read(env.str, "CELERY_BROKER_URL", default="filesystem://")
if not CELERY_BROKER_URL.startswith(("filesystem://", "redis://", "rediss://")):
    raise ImproperlyConfigured(
        f"CELERY_BROKER_URL {CELERY_BROKER_URL!r} is not supported: use redis://HOST:6379/0, "
        "or leave it unset for the embedded filesystem broker."
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport, with files that appear whole or not at all:
    # its own lets a consumer read a message still being written, and the
    # worker dies of a JSONDecodeError (reviewapp/embedded_broker.py).
    # Its channels make these folders.
    CELERY_BROKER_TRANSPORT = "reviewapp.embedded_broker:Transport"
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "control_folder": str(_broker_dir / "control"),
        "processed_folder": str(_broker_dir / "processed"),
        "staging_folder": str(_broker_dir / "staging"),
        "store_processed": False,
        # The filesystem transport polls; kombu's 1 s default makes a queue of
        # a few hundred messages take minutes to drain.
        "polling_interval": 0.05,
    }
CELERY_TASK_TIME_LIMIT = _read(env.int, "CELERY_TASK_TIME_LIMIT", default=300)
CELERY_TASK_SOFT_TIME_LIMIT = _read(env.int, "CELERY_TASK_SOFT_TIME_LIMIT", default=240)
if CELERY_TASK_SOFT_TIME_LIMIT >= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured("CELERY_TASK_SOFT_TIME_LIMIT must be below CELERY_TASK_TIME_LIMIT.")
CELERY_WORKER_CONCURRENCY = _read(env.int, "CELERY_WORKER_CONCURRENCY", default=2)
# Celery's Django fixup closes database connections after this many tasks
# (every task when unset); reviewapp.celery recycles them per CONN_MAX_AGE instead.
CELERY_DB_REUSE_MAX = 1000

# --- reviewapp ------------------------------------------------------------
# The server's ed25519 signing key: a base64 seed in the environment, or a
# file. In DEBUG a key is generated once into VAR_DIR with mode 0600.
REVIEWAPP_SIGNING_KEY = _read(env.str, "REVIEWAPP_SIGNING_KEY", default="")
REVIEWAPP_SIGNING_KEY_FILE = _read(
    env.path, "REVIEWAPP_SIGNING_KEY_FILE", default=VAR_DIR / "signing.key"
)
REVIEWAPP_SIGNING_KEY_AUTOCREATE = _read(
    env.bool, "REVIEWAPP_SIGNING_KEY_AUTOCREATE", default=DEBUG
)
# The keys verifiers trust (the ledger's trust anchors), kept outside the
# database: comma-separated base64 ed25519 public keys and/or paths of files
# holding them (`manage.py ledger_keys` output, or GET /api/keys JSON).
# REVIEWAPP_TRUST_OWN_KEY (default: DEBUG) also trusts this host's own key
# files, so `make run` and the tests need no anchors configured.
# Each is read when a server or worker starts (reviewapp.startup), and at every verification.
REVIEWAPP_TRUSTED_KEYS = _read(env.list, "REVIEWAPP_TRUSTED_KEYS", default=[])
REVIEWAPP_TRUST_OWN_KEY = _read(env.bool, "REVIEWAPP_TRUST_OWN_KEY", default=DEBUG)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": _read(env.str, "LOG_LEVEL", default="INFO")},
    # The embedded broker's URL names no host by design: kombu's warning about it is noise.
    "loggers": {"kombu.connection": {"level": "ERROR"}},
}

# A worker running as root runs command checkers as this user (docs/operators.md,
# "Security"); a worker refuses to start when it is root or no user of the machine
# (reviewapp.startup).
REVIEWAPP_CHECKER_USER = _read(env.str, "REVIEWAPP_CHECKER_USER", default="nobody")
# Further paths a command checker must not see; the data directory, .env, the
# signing key, the SQLite file and the witness log are always hidden.
REVIEWAPP_CHECKER_HIDE = _read(env.list, "REVIEWAPP_CHECKER_HIDE", default=[])
# Paths a command checker may read (its scripts, its data) even where they lie in
# a scratch directory the sandbox empties (/tmp, /run); the checkout always is.
REVIEWAPP_CHECKER_READABLE = _read(env.list, "REVIEWAPP_CHECKER_READABLE", default=[])

REVIEWAPP_CLAIM_TTL_MINUTES = _read(env.int, "REVIEWAPP_CLAIM_TTL_MINUTES", default=30)
# How often an open inbox, and a proposal's progress while it runs, refresh themselves.
REVIEWAPP_INBOX_POLL_SECONDS = _read(env.int, "REVIEWAPP_INBOX_POLL_SECONDS", default=5)
REVIEWAPP_PROGRESS_POLL_SECONDS = _read(env.int, "REVIEWAPP_PROGRESS_POLL_SECONDS", default=2)
for _name in ("REVIEWAPP_INBOX_POLL_SECONDS", "REVIEWAPP_PROGRESS_POLL_SECONDS"):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be 1 or more (seconds).")
# A proposal still queued or evaluating this long after its last change is re-enqueued.
REVIEWAPP_STUCK_AFTER_SECONDS = _read(env.int, "REVIEWAPP_STUCK_AFTER_SECONDS", default=120)
REVIEWAPP_SWEEP_EVERY_SECONDS = _read(env.float, "REVIEWAPP_SWEEP_EVERY_SECONDS", default=30.0)
REVIEWAPP_LLM_TRANSPORT_ATTEMPTS = _read(env.int, "REVIEWAPP_LLM_TRANSPORT_ATTEMPTS", default=4)
# LLM lenses are judged on an event loop in each worker process
# (reviewapp/review/evaluation/llm_loop/): at most this many proposals are on one
# process's loop, on one database connection of its own.
REVIEWAPP_LLM_PROPOSALS_PER_PROCESS = _read(
    env.int, "REVIEWAPP_LLM_PROPOSALS_PER_PROCESS", default=200
)
# All of one lens's calls, retries and re-asks: past this it is a lens failure.
REVIEWAPP_LLM_LENS_TIME_LIMIT = _read(
    env.float, "REVIEWAPP_LLM_LENS_TIME_LIMIT", default=float(CELERY_TASK_SOFT_TIME_LIMIT)
)
# Runs of the final step that failed (or never finished) before it escalates.
REVIEWAPP_FINAL_STEP_ATTEMPTS = _read(env.int, "REVIEWAPP_FINAL_STEP_ATTEMPTS", default=3)
# Times the sweeper re-sends a proposal whose lenses have not all answered; at the next,
# those lenses are recorded as failed (saying so) and the proposal is decided or escalated.
REVIEWAPP_SWEEP_ATTEMPTS = _read(env.int, "REVIEWAPP_SWEEP_ATTEMPTS", default=5)
# GET /mcp streams one token may hold open in one web process (each holds a socket).
REVIEWAPP_MCP_STREAMS_PER_TOKEN = _read(env.int, "REVIEWAPP_MCP_STREAMS_PER_TOKEN", default=4)
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
REVIEWAPP_LLM_ALLOWED_NETWORKS = _read(env.list, "REVIEWAPP_LLM_ALLOWED_NETWORKS", default=[])
for _network in REVIEWAPP_LLM_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"REVIEWAPP_LLM_ALLOWED_NETWORKS: {_exc}") from None
# The environment variables an LLM lens may name as its API key: names, or
# prefixes ending in "*" (review/evaluation/llm_keys.py says why there is a list at all).
REVIEWAPP_LLM_KEY_ENV_ALLOW = _read(
    env.list, "REVIEWAPP_LLM_KEY_ENV_ALLOW", default=["LLM_API_KEY*"]
)
for _entry in REVIEWAPP_LLM_KEY_ENV_ALLOW:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\*?", _entry):
        raise ImproperlyConfigured(
            f"REVIEWAPP_LLM_KEY_ENV_ALLOW: {_entry!r} is neither a variable name nor a prefix "
            "ending in '*' (e.g. LLM_API_KEY*)"
        )
REVIEWAPP_API_MAX_BODY_BYTES = _read(
    env.int, "REVIEWAPP_API_MAX_BODY_BYTES", default=2 * 1024 * 1024
)
REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = _read(
    env.int, "REVIEWAPP_API_RATE_LIMIT_PER_MINUTE", default=600
)
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-proposals": {
        "task": "reviewapp.review.tasks.sweep_stuck_proposals",
        "schedule": REVIEWAPP_SWEEP_EVERY_SECONDS,
    },
}

# --- Review deadlines (reviewapp/review/services/deadlines.py) ----------------
# How often the scheduler looks for escalations whose panel's deadline has come: a
# deadline is acted on within about this, plus the time its batch waits for a worker.
REVIEWAPP_DEADLINE_SWEEP_SECONDS = _read(
    env.float, "REVIEWAPP_DEADLINE_SWEEP_SECONDS", default=10.0
)
# Escalations handed to one worker task at a time.
REVIEWAPP_DEADLINE_BATCH = _read(env.int, "REVIEWAPP_DEADLINE_BATCH", default=50)
# How long a worker holds the deadlines it was handed; past it, a sweep takes them again.
REVIEWAPP_DEADLINE_LEASE_SECONDS = _read(
    env.float, "REVIEWAPP_DEADLINE_LEASE_SECONDS", default=120.0
)
# A deadline this late and not acted on makes /healthz "degraded".
REVIEWAPP_DEADLINE_LATE_SECONDS = _read(env.float, "REVIEWAPP_DEADLINE_LATE_SECONDS", default=60.0)
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

# Shared between web processes (rate limits, claim notices): Redis when the
# broker is Redis, otherwise a file cache under VAR_DIR that every local
# process sees.
CACHE_URL = _read(env.str, "CACHE_URL", default="")
# What every key reviewapp writes to Redis starts with (the cache, the LLM endpoints'
# limits); the tests give each of their processes its own (tests/settings.py).
REVIEWAPP_REDIS_KEY_PREFIX = "reviewapp"
if CACHE_URL or CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL or CELERY_BROKER_URL,
            "KEY_PREFIX": REVIEWAPP_REDIS_KEY_PREFIX,
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# The ledger's checkpoint origin line (C2SP tlog-checkpoint) and how often one is signed
# (only when the ledger grew: the witnesses are asked nothing while nothing is appended).
# The interval bounds how long a new decision is in no signed checkpoint, where a database
# owner could delete it without a trace (README, "What the checkpoint interval bounds").
REVIEWAPP_LEDGER_ORIGIN = _read(
    env.str, "REVIEWAPP_LEDGER_ORIGIN", default="reviewapp.local/ledger"
)
REVIEWAPP_LEDGER_CHECKPOINT_EVERY_SECONDS = _read(
    env.float, "REVIEWAPP_LEDGER_CHECKPOINT_EVERY_SECONDS", default=30.0
)
# Every checkpoint the server signs is also appended to a witness log outside
# the database (a file; empty turns it off) and/or POSTed to a witness URL, so
# `verify_ledger` notices history rewritten together with its checkpoints.
REVIEWAPP_LEDGER_WITNESS_FILE = _read(
    env.str, "REVIEWAPP_LEDGER_WITNESS_FILE", default=str(VAR_DIR / "ledger-witness.jsonl")
)
# verify_ledger fails, rather than warns, when checkpoints were signed and no
# witness log is there to check them against (on by default in production).
REVIEWAPP_LEDGER_REQUIRE_WITNESS = _read(
    env.bool, "REVIEWAPP_LEDGER_REQUIRE_WITNESS", default=not DEBUG
)
_witness_url = _read(
    env.url, "REVIEWAPP_LEDGER_WITNESS_URL", default=None, schemes={"http", "https"}
)
REVIEWAPP_LEDGER_WITNESS_URL = _witness_url.geturl() if _witness_url else ""
# C2SP tlog-witness witnesses that cosign every checkpoint: one per line, `<vkey> <url>`
# (reviewapp/ledger/cosigning.py). Kept as (vkey, url) pairs; a bad line stops the start.
try:
    REVIEWAPP_LEDGER_WITNESSES = [
        (witness.key.text(), witness.url)
        for witness in parse_witnesses(_read(env.str, "REVIEWAPP_LEDGER_WITNESSES", default=""))
    ]
except CosignatureError as _exc:
    raise ImproperlyConfigured(f"REVIEWAPP_LEDGER_WITNESSES: {_exc}") from _exc
if len(REVIEWAPP_LEDGER_WITNESSES) > MAX_NOTE_SIGNATURES - 1:
    # Served with the log's own signature, in one note verifiers must accept.
    raise ImproperlyConfigured(
        f"REVIEWAPP_LEDGER_WITNESSES: at most {MAX_NOTE_SIGNATURES - 1} witnesses"
    )
# How many of them must have cosigned the latest checkpoint for verifiers to pass (0: none).
REVIEWAPP_LEDGER_WITNESS_QUORUM = _read(env.int, "REVIEWAPP_LEDGER_WITNESS_QUORUM", default=0)
if not 0 <= REVIEWAPP_LEDGER_WITNESS_QUORUM <= len(REVIEWAPP_LEDGER_WITNESSES):
    raise ImproperlyConfigured(
        f"REVIEWAPP_LEDGER_WITNESS_QUORUM is {REVIEWAPP_LEDGER_WITNESS_QUORUM}, but "
        f"REVIEWAPP_LEDGER_WITNESSES lists {len(REVIEWAPP_LEDGER_WITNESSES)} witnesses"
    )
# How often the scheduler brings witnesses that missed a checkpoint up to the latest one.
REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS = _read(
    env.float, "REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS", default=60.0
)
# The sequencer gives committed entries their indexes right after each commit; this timer
# is its backstop (an entry left by a process killed after its commit), and an entry
# waiting longer than the bound is an alert in /healthz and the admin.
REVIEWAPP_LEDGER_SEQUENCE_EVERY_SECONDS = _read(
    env.float, "REVIEWAPP_LEDGER_SEQUENCE_EVERY_SECONDS", default=5.0
)
REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS = _read(
    env.float, "REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS", default=60.0
)
# Raw ledger entries and the ledger export need an authenticated reader unless this is true.
REVIEWAPP_LEDGER_PUBLIC = _read(env.bool, "REVIEWAPP_LEDGER_PUBLIC", default=False)
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

# --- Webhooks ---------------------------------------------------------------
# The secrets that sign webhooks are derived from this key (see
# reviewapp/webhooks/models.py); changing it changes every endpoint's secret.
REVIEWAPP_WEBHOOK_SECRET_KEY = _read(env.str, "REVIEWAPP_WEBHOOK_SECRET_KEY", default=SECRET_KEY)
# http:// URLs and loopback addresses: for the one-command run and the tests only.
REVIEWAPP_WEBHOOK_ALLOW_LOCAL = _read(env.bool, "REVIEWAPP_WEBHOOK_ALLOW_LOCAL", default=DEBUG)
# Private ranges an operator allows webhooks to reach, e.g. "10.20.0.0/16,fd00:1::/64".
REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS = _read(
    env.list, "REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS", default=[]
)
for _network in REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS: {_exc}") from _exc
REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS = _read(
    env.float, "REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS", default=3.0
)
REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS = _read(
    env.float, "REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS", default=10.0
)
# Seconds before each retry (±20 % jitter): about 26 hours in all, then the delivery fails.
REVIEWAPP_WEBHOOK_RETRY_DELAYS = [
    float(d)
    for d in _read(
        env.list,
        "REVIEWAPP_WEBHOOK_RETRY_DELAYS",
        default=["5", "30", "120", "600", "1800", "3600", "7200", "14400", "28800", "36000"],
    )
]
REVIEWAPP_WEBHOOK_DISABLE_AFTER_FAILURES = _read(
    env.int, "REVIEWAPP_WEBHOOK_DISABLE_AFTER_FAILURES", default=50
)
# How long a sender holds a delivery; past it a sender that died is presumed dead.
REVIEWAPP_WEBHOOK_LEASE_SECONDS = _read(env.float, "REVIEWAPP_WEBHOOK_LEASE_SECONDS", default=60.0)
if REVIEWAPP_WEBHOOK_LEASE_SECONDS <= (
    REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS + REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS
):
    raise ImproperlyConfigured(
        "REVIEWAPP_WEBHOOK_LEASE_SECONDS must exceed the connect plus read timeouts."
    )
REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS = _read(
    env.float, "REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS", default=15.0
)
# Replays whose worker stopped mid-run are picked up again (reviewapp/replay/tasks.py).
CELERY_BEAT_SCHEDULE["replay-sweep"] = {
    "task": "reviewapp.replay.tasks.sweep_replays",
    "schedule": REVIEWAPP_SWEEP_EVERY_SECONDS,
}
CELERY_BEAT_SCHEDULE["webhook-sweep"] = {
    "task": "reviewapp.webhooks.tasks.sweep_webhook_deliveries",
    "schedule": REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS,
}

# --- Notifications (reviewapp/notifications/) ---------------------------------
# Where messages link to: the address people open the desk at.
_public_url = _read(env.url, "REVIEWAPP_PUBLIC_URL", default=None, schemes={"http", "https"})
REVIEWAPP_PUBLIC_URL = _public_url.geturl().rstrip("/") if _public_url else "http://localhost:8000"
# Email goes through Django's default mailer (MAILERS, Django 6.1): SMTP when EMAIL_HOST
# is set; otherwise each message is written to a file under EMAIL_FILE_PATH (the
# one-command run). EMAIL_BACKEND names another Django backend
# (django.core.mail.backends.console.EmailBackend prints them).
_email_host = _read(env.str, "EMAIL_HOST", default="")
_email_backend = _read(
    env.str,
    "EMAIL_BACKEND",
    default="django.core.mail.backends.smtp.EmailBackend"
    if _email_host
    else "django.core.mail.backends.filebased.EmailBackend",
)
EMAIL_TIMEOUT_SECONDS = _read(env.float, "EMAIL_TIMEOUT", default=10.0)
if _email_backend.endswith(".smtp.EmailBackend"):
    _email_options = {
        "host": _email_host or "localhost",
        "port": _read(env.int, "EMAIL_PORT", default=587),
        "username": _read(env.str, "EMAIL_HOST_USER", default=""),
        "password": _read(env.str, "EMAIL_HOST_PASSWORD", default=""),
        "use_tls": _read(env.bool, "EMAIL_USE_TLS", default=bool(_email_host)),
        "use_ssl": _read(env.bool, "EMAIL_USE_SSL", default=False),
        "timeout": EMAIL_TIMEOUT_SECONDS,
    }
    if _email_options["use_tls"] and _email_options["use_ssl"]:
        raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both.")
elif _email_backend.endswith(".filebased.EmailBackend"):
    _email_options = {"file_path": _read(env.str, "EMAIL_FILE_PATH", default=str(VAR_DIR / "mail"))}
else:
    _email_options = {}
MAILERS = {"default": {"BACKEND": _email_backend, "OPTIONS": _email_options}}
DEFAULT_FROM_EMAIL = _read(env.str, "DEFAULT_FROM_EMAIL", default="reviewapp <reviewapp@localhost>")
# A person who asked to hear at once gets at most one message in this many seconds
# (what arrives meanwhile goes together: a burst is one message).
REVIEWAPP_NOTIFY_GAP_SECONDS = _read(env.float, "REVIEWAPP_NOTIFY_GAP_SECONDS", default=60.0)
# How often the scheduler composes digests that are due and re-sends what is pending.
REVIEWAPP_NOTIFY_SWEEP_SECONDS = _read(env.float, "REVIEWAPP_NOTIFY_SWEEP_SECONDS", default=20.0)
# How long a sender holds a message; past it a sender that died is presumed dead.
REVIEWAPP_NOTIFY_LEASE_SECONDS = _read(env.float, "REVIEWAPP_NOTIFY_LEASE_SECONDS", default=60.0)
REVIEWAPP_NOTIFY_MAX_DIGEST_MINUTES = 7 * 24 * 60
# Seconds before each retry (±20 % jitter): about 6 hours in all, then the message fails.
REVIEWAPP_NOTIFY_RETRY_DELAYS = [
    float(d)
    for d in _read(
        env.list,
        "REVIEWAPP_NOTIFY_RETRY_DELAYS",
        default=["10", "60", "300", "900", "1800", "3600", "7200", "7200"],
    )
]
for _name in (
    "REVIEWAPP_NOTIFY_GAP_SECONDS",
    "REVIEWAPP_NOTIFY_SWEEP_SECONDS",
    "REVIEWAPP_NOTIFY_LEASE_SECONDS",
    "EMAIL_TIMEOUT_SECONDS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be positive.")
if REVIEWAPP_NOTIFY_LEASE_SECONDS <= EMAIL_TIMEOUT_SECONDS:
    raise ImproperlyConfigured("REVIEWAPP_NOTIFY_LEASE_SECONDS must exceed EMAIL_TIMEOUT.")
CELERY_BEAT_SCHEDULE["notifications-sweep"] = {
    "task": "reviewapp.notifications.tasks.sweep_notifications",
    "schedule": REVIEWAPP_NOTIFY_SWEEP_SECONDS,
}
