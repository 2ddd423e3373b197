"""Settings for the test suite: the app's own settings plus test-only defaults.

Environment variables still win, so CI points the same suite at PostgreSQL
and Redis with DATABASE_URL and CELERY_BROKER_URL.
"""

import os
from pathlib import Path

_var = Path(__file__).resolve().parent.parent / "var" / "test"
# pytest-xdist's worker ("gw0", "gw1", ...), inherited by the processes a test starts.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
# Long enough for the production rule (tests run with DEBUG off, as pytest-django does).
os.environ.setdefault("SECRET_KEY", "tests-only-not-a-secret-" + "0123456789" * 3)
# One directory per test run (SQLite file, embedded broker, keys), inherited by
# the worker processes a run starts, so parallel runs never share state.
os.environ.setdefault("REVIEWAPP_VAR_DIR", str(_var / f"run-{os.getpid()}"))
if XDIST_WORKER and Path(os.environ["REVIEWAPP_VAR_DIR"]).name != XDIST_WORKER:
    # xdist's workers inherit the controller's directory (or the one given): each takes a
    # folder of its own in it, for its SQLite file, embedded broker, keys and beat schedule.
    os.environ["REVIEWAPP_VAR_DIR"] = str(Path(os.environ["REVIEWAPP_VAR_DIR"]) / XDIST_WORKER)
os.environ.setdefault("REVIEWAPP_SIGNING_KEY_AUTOCREATE", "true")
# Trust this run's own generated key (pytest-django runs tests with DEBUG off).
os.environ.setdefault("REVIEWAPP_TRUST_OWN_KEY", "true")
# No witness log by default: one file per run would outlive each test's database;
# the witness tests point REVIEWAPP_LEDGER_WITNESS_FILE at their own tmp_path.
os.environ.setdefault("REVIEWAPP_LEDGER_WITNESS_FILE", "")
# ...so verify_ledger only warns about it (tests/ledger/test_witness.py turns the rule on).
os.environ.setdefault("REVIEWAPP_LEDGER_REQUIRE_WITNESS", "false")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("SESSION_COOKIE_SECURE", "false")
os.environ.setdefault("CSRF_COOKIE_SECURE", "false")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")
# Test receivers listen on loopback over http://, as under DEBUG.
os.environ.setdefault("REVIEWAPP_WEBHOOK_ALLOW_LOCAL", "true")

from reviewapp.settings import *  # noqa: E402,F403
from reviewapp.settings import (  # noqa: E402
    CACHES,
    CELERY_BROKER_TRANSPORT_OPTIONS,
    CELERY_BROKER_URL,
    DATABASES,
    VAR_DIR,
)

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # On disk, not in memory, so a real worker process can share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}

# On a shared Redis (CI's /15, a developer's own db) each xdist worker keeps keys of its
# own: rate-limit counts, endpoint limits and the cache under one prefix, the broker's
# queues under another, so a worker never counts, reads or purges another's. The
# processes a test starts read these settings too, with PYTEST_XDIST_WORKER inherited.
if XDIST_WORKER:
    REVIEWAPP_REDIS_KEY_PREFIX = f"reviewapp-{XDIST_WORKER}"
    if "KEY_PREFIX" in CACHES["default"]:
        CACHES["default"]["KEY_PREFIX"] = REVIEWAPP_REDIS_KEY_PREFIX
# kombu prefixes every key, queue and pub/sub channel with it: a purge, a /healthz ping
# and a worker's consumption stay within this xdist worker's queues (the embedded broker
# already lives in the worker's own VAR_DIR).
BROKER_KEY_PREFIX = f"{XDIST_WORKER}:" if XDIST_WORKER else ""
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) and BROKER_KEY_PREFIX:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        **CELERY_BROKER_TRANSPORT_OPTIONS,
        "global_keyprefix": BROKER_KEY_PREFIX,
    }

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# Each static file found when it is asked for, not every file scanned and stat'ed when the
# middleware starts: each test client and live server builds its middleware, and the scan
# of the admin's and the app's ~150 files was a tenth of a request test's time.
WHITENOISE_AUTOREFRESH = True
