"""The test database, built from migrations once and copied after that.

Building it from the migrations takes about 11 s, in every test process: each
xdist worker, each run. The first process to need it migrates as before and
keeps a copy, a *template*, named by what the schema is made of: every
migration file and the reviewapp modules they import (the immutability
triggers' and the search vector's SQL live there), with Django's version and
the database's vendor. The others wait for it, then copy it and run `migrate`
on the copy, which finds nothing to apply (a migration the template lacks would
be applied there) but still sends post_migrate, as Django does on every start.

SQLite: a file under var/test/templates. PostgreSQL: a database beside the
test database, `<test database>_tmpl_<key>` (less xdist's `_gw<n>`), copied with
CREATE DATABASE … TEMPLATE; older templates of the same name are dropped.

The tests that start the one-command run's processes (rundev, a worker on the embedded
broker) in a var directory of their own copy the SQLite template there too
(`migrated_sqlite`), on either database: when the suite runs on PostgreSQL, the first
of them builds it with `manage.py migrate`.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing, contextmanager
from importlib.util import find_spec
from pathlib import Path

import django
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "var" / "test" / "templates"


def _schema_sources() -> list[Path]:
    """The migration files, and the reviewapp modules they import."""
    migrations = sorted(ROOT.glob("reviewapp/**/migrations/*.py"))
    imported: set[Path] = set()
    for path in migrations:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if not name.startswith("reviewapp."):
                    continue
                try:
                    spec = find_spec(name)
                except (ImportError, ValueError):
                    continue  # a name imported from a module, not a module
                if spec is not None and spec.origin and spec.origin.endswith(".py"):
                    imported.add(Path(spec.origin))
    return migrations + sorted(imported - set(migrations))


def schema_key(vendor: str = "") -> str:
    """The key of the schema on `vendor`'s database (by default, the suite's own)."""
    digest = hashlib.sha256(f"{django.__version__} {vendor or connection.vendor}\n".encode())
    for path in _schema_sources():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@contextmanager
def _lock(key: str):
    """One process at a time builds or copies the template (xdist workers, other runs)."""
    TEMPLATES.mkdir(parents=True, exist_ok=True)
    with open(TEMPLATES / f"{key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def set_up(setup_databases):
    """``setup_databases(keepdb=…)``'s result, the database copied from the template if
    there is one; else built by it from the migrations and kept as the template."""
    key = schema_key()
    # Before setup_databases: it points the connection at the test database.
    name = connection.creation._get_test_db_name()
    with _lock(key):
        copied = _copy_template(key, name)
        if not copied:
            config = setup_databases(keepdb=False)
            _keep_template(key, name)
    if copied:
        # The copy stands in for the created database; migrate runs on it as on any start.
        config = setup_databases(keepdb=True)
    return config


def _copy_template(key: str, name: str) -> bool:
    if connection.vendor == "sqlite":
        template = TEMPLATES / f"sqlite-{key}.sqlite3"
        if not template.exists():
            return False
        target = Path(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        for leftover in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
            leftover.unlink(missing_ok=True)
        shutil.copyfile(template, target)
        return True
    if connection.vendor == "postgresql":
        template = _pg_template_name(key, name)
        quote = connection.ops.quote_name
        with connection.creation._nodb_cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template])
            if cursor.fetchone() is None:
                return False
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)} WITH (FORCE)")
            cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
        return True
    return False


def migrated_sqlite(target: Path) -> None:
    """A migrated SQLite database at `target` (none there before), for processes a test
    starts with nothing configured: their own `migrate` then finds nothing to apply
    (about 11 s saved), and still sends post_migrate."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sqlite_template(), target)


def sqlite_template() -> Path:
    """The migrated SQLite template (to copy, never to open), built first if need be."""
    key = schema_key("sqlite")
    template = TEMPLATES / f"sqlite-{key}.sqlite3"
    with _lock(key):
        if not template.exists():
            _build_sqlite_template(template)
    return template


def manage_py_environment(var_dir: str, **settings: str) -> dict[str, str]:
    """The environment of a `manage.py` run on its own: nothing of the suite's stack or
    var directory (its database, broker, cache, REVIEWAPP_*), the project's settings,
    ``var_dir`` and ``settings``."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")
        and not key.startswith("REVIEWAPP_")
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="reviewapp.settings", REVIEWAPP_VAR_DIR=var_dir, **settings
    )
    return environment


def _build_sqlite_template(template: Path) -> None:
    """`manage.py migrate` on a scratch SQLite database, kept as the template: the suite
    runs on PostgreSQL, so its own set-up made none."""
    with tempfile.TemporaryDirectory(dir=TEMPLATES) as scratch:
        environment = manage_py_environment(scratch, DEBUG="true")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT, env=environment, check=True, timeout=180,
        )  # fmt: skip
        partial = template.with_suffix(".partial")
        with closing(sqlite3.connect(Path(scratch) / "reviewapp.sqlite3")) as source:
            with closing(sqlite3.connect(partial)) as copy:
                source.backup(copy)
        partial.replace(template)
    for old in TEMPLATES.glob("sqlite-*.sqlite3"):
        if old != template:
            old.unlink(missing_ok=True)


def _keep_template(key: str, name: str) -> None:
    if connection.vendor == "sqlite":
        template = TEMPLATES / f"sqlite-{key}.sqlite3"
        partial = template.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        # SQLite's backup API: a consistent copy, the WAL's pages included.
        with closing(sqlite3.connect(name)) as source:
            with closing(sqlite3.connect(partial)) as copy:
                source.backup(copy)
        partial.replace(template)
        for old in TEMPLATES.glob("sqlite-*.sqlite3"):
            if old != template:
                old.unlink(missing_ok=True)
        return
    if connection.vendor == "postgresql":
        template = _pg_template_name(key, name)
        # CREATE DATABASE … TEMPLATE copies a database nobody is connected to.
        connection.close()
        with connection.creation._nodb_cursor() as cursor:
            prefix = _pg_template_name("", name)
            cursor.execute(
                "SELECT datname FROM pg_database WHERE starts_with(datname, %s) AND datname <> %s",
                [prefix, template],
            )
            for (old,) in cursor.fetchall():
                cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(old)}")
            quote = connection.ops.quote_name
            cursor.execute(f"CREATE DATABASE {quote(template)} TEMPLATE {quote(name)}")


def _pg_template_name(key: str, name: str) -> str:
    # Shared by the run's xdist workers (test_<name>_gw0, _gw1, …): one migrates, all copy.
    # Another run's test database has another name, and templates of its own.
    return f"{re.sub(r'_gw[0-9]+$', '', name)}_tmpl_{key}"


def close_other_sessions() -> None:
    """End what is still connected to the test database before it is dropped: a live
    server's request threads keep their connections (CONN_MAX_AGE) until collected."""
    if connection.vendor != "postgresql":
        return
    name = connection.settings_dict["NAME"]
    connection.close()
    with connection._nodb_cursor() as cursor:  # Django's own way to the `postgres` database
        # First no new session: one that reconnected after its end (a thread's
        # connection) made DROP DATABASE fail ("being accessed by other users").
        cursor.execute(f"ALTER DATABASE {connection.ops.quote_name(name)} ALLOW_CONNECTIONS false")
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
        )
