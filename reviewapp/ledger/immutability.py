"""Database triggers that refuse UPDATE, DELETE and TRUNCATE on signed records and the ledger.

Signed records: decisions, evidence, reviewers' reviews and audit verdicts; and the
record of lost access that keeps personal tokens dead (reviewapp/review/access_loss.py).

No code path edits or deletes a signed record; these triggers make the
database say so too, so a stray ``.update()``, a raw ``UPDATE``, a
``TRUNCATE`` or an admin delete fails instead of silently rewriting history.
A database owner can still drop or disable a trigger — that is what the
ledger's signed checkpoints, the witness log outside the database and
``verify_ledger`` are for; the trigger only stops the honest mistake and
forces tampering to be deliberate.

Two tables allow one change each: a signing key may be retired (its
``retired_at`` set once, nothing else), and a ledger entry may be given its
index by the sequencer (``leaf_index`` set once, from NULL, nothing else), so
no entry is ever sequenced twice or moved. (Until the ledger ordered decisions
alone, the decision chain head, now dropped, could only advance.)

- PostgreSQL: a ``BEFORE UPDATE OR DELETE … FOR EACH ROW`` trigger per table,
  raising SQLSTATE 23001 (restrict_violation, an IntegrityError in Django),
  and a statement-level ``BEFORE TRUNCATE`` trigger, which refuses unless the
  transaction set ``reviewapp.allow_truncate`` to ``on`` (``SET LOCAL``).
  Only this app's ``flush`` command (which overrides Django's, and which the
  test suite's between-test flush calls) sets it, for its own transaction.
- SQLite: ``BEFORE UPDATE`` triggers, and ``BEFORE DELETE`` triggers that
  abort unless the SQL function ``reviewapp_deletes_allowed()`` answers 1.
  That function exists only on the app's own connections (registered on
  ``connection_created``) and answers 1 only inside ``flush`` (SQLite has no
  TRUNCATE: Django flushes with ``DELETE FROM``). From any other client,
  e.g. the ``sqlite3`` shell, the function does not exist and every DELETE
  fails; no row of any table can open the guard.

SQLite rebuilds a table (and drops its triggers) whenever a migration alters
it, so ``install`` is idempotent and runs again after every ``migrate`` and
``flush`` (``post_migrate``, see ``apps.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

# What migration 0005 protects: reviews and audit verdicts joined in 0006.
TABLES_BEFORE_REVIEWS = (
    "review_decision",
    "review_evidence",
    "ledger_entry",
    "ledger_node",
    "ledger_checkpoint",
    "ledger_cosignature",
    "ledger_lock",
    "review_signingkey",
    "review_chainhead",
)
# A reviewer's signed review and audit verdict are as final as the decision they lead to;
# the record of lost access keeps personal tokens dead (reviewapp/review/access_loss.py).
# The chain head and the ledger's lock row went with the sequencer (ledger 0007).
GONE_TABLES = ("review_chainhead", "ledger_lock")
PROTECTED_TABLES = (
    *(t for t in TABLES_BEFORE_REVIEWS if t not in GONE_TABLES),
    "review_review",
    "review_decisionaudit",
    "review_accessloss",
)
# What migrations 0003 and 0004 protect: they run before ledger_cosignature exists (0005).
TABLES_BEFORE_COSIGNATURES = tuple(t for t in TABLES_BEFORE_REVIEWS if t != "ledger_cosignature")
# The one UPDATE each of these tables allows, as a condition on OLD and NEW
# (written so that it means the same in PostgreSQL and SQLite).
ALLOWED_UPDATE = {
    # Retiring a key: retired_at goes from NULL to a time; nothing else changes.
    "review_signingkey": (
        "OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL AND NEW.id = OLD.id "
        "AND NEW.key_id = OLD.key_id AND NEW.public_key = OLD.public_key "
        "AND NEW.created_at = OLD.created_at"
    ),
    # Sequencing an entry: its leaf index goes from NULL to a number; nothing else changes.
    "ledger_entry": (
        "OLD.leaf_index IS NULL AND NEW.leaf_index IS NOT NULL AND NEW.id = OLD.id "
        "AND NEW.kind = OLD.kind AND NEW.entry = OLD.entry AND NEW.leaf_hash = OLD.leaf_hash "
        "AND NEW.created_at = OLD.created_at "
        "AND (NEW.decision_id = OLD.decision_id "
        "OR (NEW.decision_id IS NULL AND OLD.decision_id IS NULL)) "
        "AND (NEW.evidence_id = OLD.evidence_id "
        "OR (NEW.evidence_id IS NULL AND OLD.evidence_id IS NULL))"
    ),
    # Historical (migrations 0003-0005): advancing the chain head by one stored decision.
    "review_chainhead": (
        "NEW.id = OLD.id AND NEW.singleton = OLD.singleton AND EXISTS ("
        "SELECT 1 FROM review_decision d "
        "WHERE d.hash = NEW.last_hash AND d.prev_hash = OLD.last_hash)"
    ),
}
TRIGGER_PREFIX = "reviewapp_append_only"
TRUNCATE_TRIGGER = f"{TRIGGER_PREFIX}_truncate"
PG_FUNCTION = "reviewapp_refuse_change"
PG_TRUNCATE_FUNCTION = "reviewapp_refuse_truncate"
PG_ALLOW_TRUNCATE = "reviewapp.allow_truncate"
SQLITE_DELETES_ALLOWED = "reviewapp_deletes_allowed"
# Dropped by migration 0004: one UPDATE of it used to open every DELETE.
OLD_SQLITE_GUARD_TABLE = "ledger_sqlite_guard"
MIGRATION = ("ledger", "0004_guarded_keys_chain_head_truncate")

_PG_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'reviewapp: % on % refused: signed records and the ledger are append-only',
        TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$
"""

_PG_TRUNCATE_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {PG_TRUNCATE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('{PG_ALLOW_TRUNCATE}', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'reviewapp: TRUNCATE on % refused: signed records and the ledger are '
        'append-only', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$
"""


def _pg_guard_function(table: str) -> tuple[str, str]:
    name = f"reviewapp_guard_{table}"
    return (
        name,
        f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND ({ALLOWED_UPDATE[table]}) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'reviewapp: % on % refused: signed records and the ledger are append-only',
        TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$
""",
    )


def refusal_message(operation: str, table: str) -> str:
    return (
        f"reviewapp: {operation} on {table} refused: signed records and the ledger are append-only"
    )


def _pg_install(execute: Callable[[str], None], tables: Iterable[str]) -> None:
    execute(_PG_FUNCTION_SQL)
    execute(_PG_TRUNCATE_FUNCTION_SQL)
    for table in tables:
        function = PG_FUNCTION
        if table in ALLOWED_UPDATE:
            function, sql = _pg_guard_function(table)
            execute(sql)
        execute(f'DROP TRIGGER IF EXISTS {TRIGGER_PREFIX} ON "{table}"')
        execute(
            f'CREATE TRIGGER {TRIGGER_PREFIX} BEFORE UPDATE OR DELETE ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION {function}()"
        )
        execute(f'DROP TRIGGER IF EXISTS {TRUNCATE_TRIGGER} ON "{table}"')
        execute(
            f'CREATE TRIGGER {TRUNCATE_TRIGGER} BEFORE TRUNCATE ON "{table}" '
            f"FOR EACH STATEMENT EXECUTE FUNCTION {PG_TRUNCATE_FUNCTION}()"
        )


def _pg_uninstall(execute: Callable[[str], None], tables: Iterable[str], functions: bool) -> None:
    for table in tables:
        execute(f'DROP TRIGGER IF EXISTS {TRIGGER_PREFIX} ON "{table}"')
        execute(f'DROP TRIGGER IF EXISTS {TRUNCATE_TRIGGER} ON "{table}"')
        if table in ALLOWED_UPDATE:
            execute(f"DROP FUNCTION IF EXISTS {_pg_guard_function(table)[0]}()")
    if functions:
        execute(f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()")
        execute(f"DROP FUNCTION IF EXISTS {PG_TRUNCATE_FUNCTION}()")


def _sqlite_install(execute: Callable[[str], None], tables: Iterable[str]) -> None:
    for table in tables:
        when = f"WHEN NOT ({ALLOWED_UPDATE[table]}) " if table in ALLOWED_UPDATE else ""
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}_update_{table} "
            f'BEFORE UPDATE ON "{table}" {when}'
            f"BEGIN SELECT RAISE(ABORT, '{refusal_message('UPDATE', table)}'); END"
        )
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}_delete_{table} "
            f'BEFORE DELETE ON "{table}" '
            f"WHEN {SQLITE_DELETES_ALLOWED}() IS NOT 1 "
            f"BEGIN SELECT RAISE(ABORT, '{refusal_message('DELETE', table)}'); END"
        )


def _sqlite_uninstall(execute: Callable[[str], None], tables: Iterable[str]) -> None:
    for table in tables:
        execute(f"DROP TRIGGER IF EXISTS {TRIGGER_PREFIX}_update_{table}")
        execute(f"DROP TRIGGER IF EXISTS {TRIGGER_PREFIX}_delete_{table}")
    execute(f'DROP TABLE IF EXISTS "{OLD_SQLITE_GUARD_TABLE}"')


def install(
    vendor: str, execute: Callable[[str], None], tables: Iterable[str] = PROTECTED_TABLES
) -> None:
    """Create (or re-create) the append-only triggers. Idempotent."""
    if vendor == "postgresql":
        _pg_install(execute, tables)
    elif vendor == "sqlite":
        _sqlite_install(execute, tables)
    else:
        raise NotImplementedError(f"no append-only triggers for the {vendor} backend")


def uninstall(
    vendor: str,
    execute: Callable[[str], None],
    tables: Iterable[str] = PROTECTED_TABLES,
    *,
    functions: bool = True,
) -> None:
    """Drop the triggers of ``tables``; ``functions=False`` keeps the PostgreSQL functions
    that other tables' triggers still call."""
    if vendor == "postgresql":
        _pg_uninstall(execute, tables, functions)
    elif vendor == "sqlite":
        _sqlite_uninstall(execute, tables)


def installed_triggers(connection) -> set[str]:
    """Names of the append-only triggers present, as ``table:operation`` pairs."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.relname, t.tgname, t.tgenabled FROM pg_trigger t "
                "JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname IN (%s, %s)",
                [TRIGGER_PREFIX, TRUNCATE_TRIGGER],
            )
            found = set()
            for table, name, enabled in cursor.fetchall():
                if enabled == "D":
                    continue
                if name == TRUNCATE_TRIGGER:
                    found.add(f"{table}:truncate")
                else:
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
    operations = ("update", "delete")
    if connection.vendor == "postgresql":
        operations += ("truncate",)
    return [
        f"{table}:{op}"
        for table in PROTECTED_TABLES
        for op in operations
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
    if not missing_triggers(connection):
        return
    with connection.cursor() as cursor:
        install(connection.vendor, cursor.execute)


def register_sqlite_function(sender, connection, **kwargs) -> None:
    """connection_created: give the app's SQLite connections the delete-guard function."""
    if connection.vendor != "sqlite":
        return
    connection.connection.create_function(
        SQLITE_DELETES_ALLOWED,
        0,
        lambda: 1 if getattr(connection, "_reviewapp_deletes_allowed", False) else 0,
        deterministic=False,
    )


class FlushAllowed:
    """Let the enclosing transaction empty the protected tables (``flush`` only).

    PostgreSQL: ``SET LOCAL reviewapp.allow_truncate = on``, which the
    transaction's end resets. SQLite: this connection's
    ``reviewapp_deletes_allowed()`` answers 1 until the block ends.
    """

    def __init__(self, connection) -> None:
        self.connection = connection

    def __enter__(self):
        if self.connection.vendor == "postgresql":
            with self.connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL {PG_ALLOW_TRUNCATE} = 'on'")
        elif self.connection.vendor == "sqlite":
            self.connection._reviewapp_deletes_allowed = True
        return self

    def __exit__(self, *exc):
        if self.connection.vendor == "sqlite":
            self.connection._reviewapp_deletes_allowed = False
        return False
