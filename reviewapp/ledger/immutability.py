"""Database triggers that refuse UPDATE and DELETE on decisions, evidence and the ledger.

No code path edits or deletes a signed record; these triggers make the
database say so too, so a stray ``.update()``, a raw ``UPDATE`` or an admin
delete fails instead of silently rewriting history. A database owner can
still drop or disable a trigger — that is what the ledger's signed
checkpoints and ``verify_ledger`` are for; the trigger only stops the honest
mistake and forces tampering to be deliberate.

- PostgreSQL: one ``BEFORE UPDATE OR DELETE … FOR EACH ROW`` trigger per
  table, raising SQLSTATE 23001 (restrict_violation, an IntegrityError in
  Django). ``TRUNCATE`` fires no row trigger, so ``manage.py flush`` and the
  test suite's between-test flush keep working.
- SQLite: a ``BEFORE UPDATE`` trigger that always aborts and a
  ``BEFORE DELETE`` trigger that aborts unless the one-row table
  ``ledger_sqlite_guard`` says deletes are allowed. Only this app's ``flush``
  command (which overrides Django's) opens the guard, inside the flush's
  transaction, because SQLite has no TRUNCATE: Django flushes with
  ``DELETE FROM``.

SQLite rebuilds a table (and drops its triggers) whenever a migration alters
it, so ``install`` is idempotent and runs again after every ``migrate`` and
``flush`` (``post_migrate``, see ``apps.py``).
"""

from __future__ import annotations

from collections.abc import Callable

PROTECTED_TABLES = (
    "review_decision",
    "review_evidence",
    "ledger_entry",
    "ledger_node",
    "ledger_checkpoint",
    "ledger_lock",
)
SQLITE_GUARD_TABLE = "ledger_sqlite_guard"
TRIGGER_PREFIX = "reviewapp_append_only"
PG_FUNCTION = "reviewapp_refuse_change"
MIGRATION = ("ledger", "0003_append_only")

_PG_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'reviewapp: % on % refused: signed records and the ledger are append-only',
        TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$
"""


def refusal_message(operation: str, table: str) -> str:
    return (
        f"reviewapp: {operation} on {table} refused: signed records and the ledger are append-only"
    )


def _pg_install(execute: Callable[[str], None]) -> None:
    execute(_PG_FUNCTION_SQL)
    for table in PROTECTED_TABLES:
        execute(f'DROP TRIGGER IF EXISTS {TRIGGER_PREFIX} ON "{table}"')
        execute(
            f'CREATE TRIGGER {TRIGGER_PREFIX} BEFORE UPDATE OR DELETE ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()"
        )


def _pg_uninstall(execute: Callable[[str], None]) -> None:
    for table in PROTECTED_TABLES:
        execute(f'DROP TRIGGER IF EXISTS {TRIGGER_PREFIX} ON "{table}"')
    execute(f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()")


def _sqlite_install(execute: Callable[[str], None]) -> None:
    execute(
        f'CREATE TABLE IF NOT EXISTS "{SQLITE_GUARD_TABLE}" '
        "(id INTEGER PRIMARY KEY CHECK (id = 1), allow_delete INTEGER NOT NULL DEFAULT 0)"
    )
    execute(f'INSERT OR IGNORE INTO "{SQLITE_GUARD_TABLE}" (id, allow_delete) VALUES (1, 0)')
    for table in PROTECTED_TABLES:
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}_update_{table} "
            f'BEFORE UPDATE ON "{table}" '
            f"BEGIN SELECT RAISE(ABORT, '{refusal_message('UPDATE', table)}'); END"
        )
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}_delete_{table} "
            f'BEFORE DELETE ON "{table}" '
            f'WHEN (SELECT allow_delete FROM "{SQLITE_GUARD_TABLE}" WHERE id = 1) IS NOT 1 '
            f"BEGIN SELECT RAISE(ABORT, '{refusal_message('DELETE', table)}'); END"
        )


def _sqlite_uninstall(execute: Callable[[str], None]) -> None:
    for table in PROTECTED_TABLES:
        execute(f"DROP TRIGGER IF EXISTS {TRIGGER_PREFIX}_update_{table}")
        execute(f"DROP TRIGGER IF EXISTS {TRIGGER_PREFIX}_delete_{table}")
    execute(f'DROP TABLE IF EXISTS "{SQLITE_GUARD_TABLE}"')


def install(vendor: str, execute: Callable[[str], None]) -> None:
    """Create (or re-create) the append-only triggers. Idempotent."""
    if vendor == "postgresql":
        _pg_install(execute)
    elif vendor == "sqlite":
        _sqlite_install(execute)
    else:
        raise NotImplementedError(f"no append-only triggers for the {vendor} backend")


def uninstall(vendor: str, execute: Callable[[str], None]) -> None:
    if vendor == "postgresql":
        _pg_uninstall(execute)
    elif vendor == "sqlite":
        _sqlite_uninstall(execute)


def installed_triggers(connection) -> set[str]:
    """Names of the append-only triggers present, as ``table:operation`` pairs."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.relname, t.tgenabled FROM pg_trigger t "
                "JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname = %s",
                [TRIGGER_PREFIX],
            )
            found = set()
            for table, enabled in cursor.fetchall():
                if enabled != "D":
                    found |= {f"{table}:update", f"{table}:delete"}
            return found
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE %s",
                [f"{TRIGGER_PREFIX}_%"],
            )
            found = set()
            for (name,) in cursor.fetchall():
                operation, _, table = name[len(TRIGGER_PREFIX) + 1 :].partition("_")
                found.add(f"{table}:{operation}")
            return found
    return set()


def missing_triggers(connection) -> list[str]:
    """Protected ``table:operation`` pairs with no active trigger (empty when all is well)."""
    present = installed_triggers(connection)
    return [
        f"{table}:{op}"
        for table in PROTECTED_TABLES
        for op in ("update", "delete")
        if f"{table}:{op}" not in present
    ]


def reinstall_after_migrate(sender, using="default", **kwargs) -> None:
    """post_migrate: put back triggers a SQLite table rebuild dropped (only once 0003 ran)."""
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    connection = connections[using]
    if connection.vendor not in ("postgresql", "sqlite"):
        return
    if MIGRATION not in MigrationRecorder(connection).applied_migrations():
        return
    existing = set(connection.introspection.table_names())
    if not set(PROTECTED_TABLES) <= existing:
        return
    if not missing_triggers(connection) and (
        connection.vendor != "sqlite" or SQLITE_GUARD_TABLE in existing
    ):
        return
    with connection.cursor() as cursor:
        install(connection.vendor, cursor.execute)


class SqliteDeletesAllowed:
    """Open the SQLite delete guard for the enclosing transaction (flush only)."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.active = (
            connection.vendor == "sqlite"
            and SQLITE_GUARD_TABLE in connection.introspection.table_names()
        )

    def __enter__(self):
        if self.active:
            with self.connection.cursor() as cursor:
                cursor.execute(f'UPDATE "{SQLITE_GUARD_TABLE}" SET allow_delete = 1 WHERE id = 1')
        return self

    def __exit__(self, *exc):
        if self.active:
            with self.connection.cursor() as cursor:
                cursor.execute(f'UPDATE "{SQLITE_GUARD_TABLE}" SET allow_delete = 0 WHERE id = 1')
        return False
