"""The bench stack's environment: settings, its own database and broker, Django set up.

Every benchmark runs the real stack on this machine: PostgreSQL (its own
database, `reviewapp_bench`, dropped and re-created per run), Redis (its own
db, /14, flushed per run), with the production settings module
(`DEBUG=false`). Nothing here touches the `reviewapp` / `test_reviewapp`
databases or Redis /15 that the test suite uses.
"""

from __future__ import annotations

import base64
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import nacl.signing

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VENV_BIN = Path(sys.executable).parent
# Overridable so two people benchmarking on one machine do not share a database.
BENCH_DB = os.environ.get("BENCH_DB", "reviewapp_bench")
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
BENCH_BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
VAR_ROOT = ROOT / "var" / "bench"

# A fixed seed: every bench process (this one, gunicorn, the worker) signs with it.
BENCH_SIGNING_SEED = base64.b64encode(b"reviewapp-benchmark-signing-key!").decode()
# The bench key's public half, anchored as production would anchor its own key.
BENCH_TRUSTED_KEY = base64.b64encode(
    bytes(nacl.signing.SigningKey(base64.b64decode(BENCH_SIGNING_SEED)).verify_key)
).decode()


def bench_env(
    name: str,
    *,
    database_url: str | None = None,
    broker_url: str = BENCH_BROKER,
    **extra: str,
) -> dict[str, str]:
    """The production settings module, pointed at the bench database and broker.

    `name` picks the var directory (var/bench/<name>): cache, beat schedule, logs.
    """
    var_dir = VAR_ROOT / name
    (var_dir / "logs").mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
        "DEBUG": "false",
        "SECRET_KEY": "benchmark-only-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": database_url or f"{PG_URL}/{BENCH_DB}",
        "CELERY_BROKER_URL": broker_url,
        "REVIEWAPP_VAR_DIR": str(var_dir),
        "REVIEWAPP_SIGNING_KEY": BENCH_SIGNING_SEED,
        "REVIEWAPP_TRUSTED_KEYS": BENCH_TRUSTED_KEY,
        # Loopback HTTP: no TLS to redirect to.
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "LOG_LEVEL": "WARNING",
        "REVIEWAPP_API_RATE_LIMIT_PER_MINUTE": str(10**9),
    }
    env.pop("CACHE_URL", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def django_setup(env: dict[str, str]) -> None:
    """Configure this process like the servers it starts, then set Django up."""
    os.environ.update(env)
    import django

    django.setup()


def reset_database(name: str = BENCH_DB, server_url: str = PG_URL) -> None:
    """Drop and re-create `name` on the server (never the shared test databases).

    With BENCH_TEMPLATE_DB, a copy of that (migrated) database, so `migrate` finds
    nothing to do: the suite runs each benchmark at a tiny size this way
    (tests/benchmarks/test_runs.py), where migrating would take longer than the run.
    """
    import psycopg

    assert name not in ("reviewapp", "test_reviewapp", "postgres"), name
    template = os.environ.get("BENCH_TEMPLATE_DB")
    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def flush_redis(url: str = BENCH_BROKER) -> None:
    import redis

    assert not url.rstrip("/").endswith("/15"), "Redis /15 belongs to the test suite"
    redis.Redis.from_url(url).flushdb()


def collectstatic() -> None:
    """DEBUG=false serves hashed static names from a manifest; build it once per var dir.

    With BENCH_STATIC_FROM (a STATIC_ROOT collected already), its files are linked in
    instead: the suite's tiny runs collect once for all the benchmarks (3 s each).
    """
    from django.conf import settings
    from django.core.management import call_command

    root = Path(settings.STATIC_ROOT)
    if (root / "staticfiles.json").exists():
        return
    collected = os.environ.get("BENCH_STATIC_FROM")
    if collected:
        shutil.copytree(collected, root, copy_function=_link_or_copy, dirs_exist_ok=True)
    else:
        call_command("collectstatic", interactive=False, verbosity=0)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def fresh_stack(name: str, **env_extra: str) -> dict[str, str]:
    """A clean bench database (migrated) and broker db, the static manifest a DEBUG=false
    server refuses to start without; Django set up in this process."""
    env = bench_env(name, **env_extra)
    reset_database()
    flush_redis(env["CELERY_BROKER_URL"])
    django_setup(env)
    migrate()
    collectstatic()
    return env


def env_from_args(pairs: Iterable[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = value
    return out
