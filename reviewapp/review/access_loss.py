"""Database triggers that record every loss of the right to review, however it is made.

A personal token lives only while its person may review (`access.may_sign_decisions`:
an active account in the reviewers group, or a superuser). That is asked at every use;
but a token must also stay dead once access was lost, even if access comes back, and a
loss made without Django's signals (a bulk `update(is_active=False)`, a row deleted from
`auth_user_groups`, the group deleted and re-created, raw SQL) used to leave no trace.

So the database itself records each loss, in the append-only `review_accessloss`
(protected like the ledger, reviewapp/ledger/immutability.py), and revokes the person's
tokens in the same statement (so the pages show them revoked). A token remembers the
person's last loss when it was issued (`ApiClient.access_epoch`), and works only while no
later loss exists (`ApiClient.objects.live()`): clearing `revoked_at` in SQL brings
nothing back, and undoing a loss means dropping a trigger, which `verify_ledger` reports.

A loss is recorded only for a person who holds personal tokens (others have nothing to
keep dead), when, after the change:

- `auth_user`: an account that could review no longer can (deactivated, or a superuser
  outside the reviewers group demoted);
- `auth_user_groups`: a membership of the reviewers group (or of a group already gone)
  is deleted or moved, and its person can no longer review;
- `auth_group`: the reviewers group is renamed or deleted, for each member who can no
  longer review.

PostgreSQL also refuses TRUNCATE of those tables outside the app's own `flush`, as it does
for the ledger's. SQLite rebuilds a table (dropping its triggers) when a migration alters
it: `install` is idempotent and runs again after every `migrate` (`apps.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from reviewapp.ledger import immutability

from .groups import REVIEWERS_GROUP

LOSS_TABLE = "review_accessloss"
PREFIX = "reviewapp_access"
WATCHED_TABLES = ("auth_user", "auth_user_groups", "auth_group")
# The migration that creates the table and first installs them.
MIGRATION = ("review", "0021_access_losses")

_MEMBER = (
    "EXISTS (SELECT 1 FROM auth_user_groups ug JOIN auth_group g ON g.id = ug.group_id "
    f"WHERE ug.user_id = {{user}} AND g.name = '{REVIEWERS_GROUP}')"
)


def _may_review(user: str) -> str:
    """SQL: whether the auth_user row `user` (e.g. NEW) may review now."""
    return f"({user}.is_active AND ({user}.is_superuser OR {_MEMBER.format(user=f'{user}.id')}))"


def _may_review_id(user_id: str) -> str:
    """SQL: whether the user with id `user_id` may review now (false if the row is gone)."""
    return f"EXISTS (SELECT 1 FROM auth_user u WHERE u.id = {user_id} AND {_may_review('u')})"


def _holds_tokens(user_id: str) -> str:
    return f"EXISTS (SELECT 1 FROM review_apiclient t WHERE t.user_id = {user_id})"


def _reviewers_or_gone(group_id: str) -> str:
    return (
        f"NOT EXISTS (SELECT 1 FROM auth_group g WHERE g.id = {group_id} "
        f"AND g.name <> '{REVIEWERS_GROUP}')"
    )


# ── PostgreSQL ───────────────────────────────────────────────────────────────

_PG_RECORD = f"""
CREATE OR REPLACE FUNCTION {PREFIX}_lost(uid bigint, why text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- The person's row locked: a token being issued to them meanwhile commits first
    -- (and its holding is seen here), or waits and finds them unable to review.
    PERFORM 1 FROM auth_user WHERE id = uid FOR UPDATE;
    IF {_holds_tokens("uid")} AND NOT {_may_review_id("uid")} THEN
        INSERT INTO {LOSS_TABLE} (user_id, lost_at, reason) VALUES (uid, now(), why);
        UPDATE review_apiclient SET revoked_at = now()
            WHERE user_id = uid AND revoked_at IS NULL;
    END IF;
END;
$$
"""

_PG_TRIGGERS = {
    "auth_user": (
        "AFTER UPDATE",
        f"""
    IF {_may_review("OLD")} THEN
        PERFORM {PREFIX}_lost(NEW.id, 'account deactivated or no longer a superuser');
    END IF;""",
    ),
    "auth_user_groups": (
        "AFTER UPDATE OR DELETE",
        f"""
    IF {_reviewers_or_gone("OLD.group_id")} THEN
        PERFORM {PREFIX}_lost(OLD.user_id, 'left the {REVIEWERS_GROUP} group');
    END IF;""",
    ),
    "auth_group": (
        "AFTER UPDATE OR DELETE",
        f"""
    IF OLD.name = '{REVIEWERS_GROUP}' AND (TG_OP = 'DELETE' OR NEW.name <> OLD.name) THEN
        PERFORM {PREFIX}_lost(ug.user_id, 'the {REVIEWERS_GROUP} group was renamed or deleted')
            FROM auth_user_groups ug WHERE ug.group_id = OLD.id;
    END IF;""",
    ),
}


def _pg_install(execute: Callable[[str], None]) -> None:
    execute(_PG_RECORD)
    for table, (when, body) in _PG_TRIGGERS.items():
        function = f"{PREFIX}_{table}"
        execute(
            f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN{body}\n    RETURN NULL;\nEND;\n$$"
        )
        execute(f'DROP TRIGGER IF EXISTS {PREFIX} ON "{table}"')
        execute(
            f'CREATE TRIGGER {PREFIX} {when} ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION {function}()"
        )
        # Row triggers do not see a TRUNCATE: refused, as the ledger's are, outside flush.
        execute(f'DROP TRIGGER IF EXISTS {PREFIX}_truncate ON "{table}"')
        execute(
            f'CREATE TRIGGER {PREFIX}_truncate BEFORE TRUNCATE ON "{table}" '
            f"FOR EACH STATEMENT EXECUTE FUNCTION {immutability.PG_TRUNCATE_FUNCTION}()"
        )


def _pg_uninstall(execute: Callable[[str], None]) -> None:
    for table in WATCHED_TABLES:
        execute(f'DROP TRIGGER IF EXISTS {PREFIX} ON "{table}"')
        execute(f'DROP TRIGGER IF EXISTS {PREFIX}_truncate ON "{table}"')
        execute(f"DROP FUNCTION IF EXISTS {PREFIX}_{table}()")
    execute(f"DROP FUNCTION IF EXISTS {PREFIX}_lost(bigint, text)")


# ── SQLite ───────────────────────────────────────────────────────────────────

_SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')"


def _sqlite_record(user_id: str, why: str) -> str:
    return (
        f"INSERT INTO {LOSS_TABLE} (user_id, lost_at, reason) "
        f"VALUES ({user_id}, {_SQLITE_NOW}, '{why}'); "
        f"UPDATE review_apiclient SET revoked_at = {_SQLITE_NOW} "
        f"WHERE user_id = {user_id} AND revoked_at IS NULL;"
    )


def _sqlite_triggers() -> dict[str, str]:
    lost = f"NOT {_may_review_id('{user}')} AND {_holds_tokens('{user}')}"
    groups_lost = f"{_reviewers_or_gone('OLD.group_id')} AND {lost.format(user='OLD.user_id')}"
    members_lost = (
        f"SELECT ug.user_id FROM auth_user_groups ug WHERE ug.group_id = OLD.id "
        f"AND {lost.format(user='ug.user_id')}"
    )
    user_why = "account deactivated or no longer a superuser"
    group_why = f"the {REVIEWERS_GROUP} group was renamed or deleted"
    rename = f"OLD.name = '{REVIEWERS_GROUP}' AND NEW.name <> OLD.name"
    return {
        # (SQLite's triggers are one statement list each; the group's members are many rows.)
        "user_update": f"AFTER UPDATE ON auth_user WHEN {_may_review('OLD')} AND "
        f"{lost.format(user='NEW.id')} BEGIN {_sqlite_record('NEW.id', user_why)} END",
        "groups_update": f"AFTER UPDATE ON auth_user_groups WHEN {groups_lost} BEGIN "
        f"{_sqlite_record('OLD.user_id', f'left the {REVIEWERS_GROUP} group')} END",
        "groups_delete": f"AFTER DELETE ON auth_user_groups WHEN {groups_lost} BEGIN "
        f"{_sqlite_record('OLD.user_id', f'left the {REVIEWERS_GROUP} group')} END",
        "group_update": f"AFTER UPDATE ON auth_group WHEN {rename} BEGIN "
        f"{_sqlite_record_many(members_lost, group_why)} END",
        "group_delete": f"AFTER DELETE ON auth_group WHEN OLD.name = '{REVIEWERS_GROUP}' BEGIN "
        f"{_sqlite_record_many(members_lost, group_why)} END",
    }


def _sqlite_record_many(users: str, why: str) -> str:
    # `users` still selects the same people after the INSERT: it reads only the auth tables.
    return (
        f"INSERT INTO {LOSS_TABLE} (user_id, lost_at, reason) "
        f"SELECT user_id, {_SQLITE_NOW}, '{why}' FROM ({users}); "
        f"UPDATE review_apiclient SET revoked_at = {_SQLITE_NOW} "
        f"WHERE revoked_at IS NULL AND user_id IN ({users});"
    )


def _sqlite_install(execute: Callable[[str], None]) -> None:
    for name, body in _sqlite_triggers().items():
        execute(f"CREATE TRIGGER IF NOT EXISTS {PREFIX}_{name} {body}")


def _sqlite_uninstall(execute: Callable[[str], None]) -> None:
    for name in _sqlite_triggers():
        execute(f"DROP TRIGGER IF EXISTS {PREFIX}_{name}")


def install(vendor: str, execute: Callable[[str], None]) -> None:
    """Create (or re-create) the triggers. Idempotent."""
    if vendor == "postgresql":
        _pg_install(execute)
    elif vendor == "sqlite":
        _sqlite_install(execute)
    else:
        raise NotImplementedError(f"no access-loss triggers for the {vendor} backend")


def uninstall(vendor: str, execute: Callable[[str], None]) -> None:
    if vendor == "postgresql":
        _pg_uninstall(execute)
    elif vendor == "sqlite":
        _sqlite_uninstall(execute)


def reinstall_after_migrate(sender, using="default", **kwargs) -> None:
    """post_migrate: put back triggers a SQLite table rebuild dropped (once installed)."""
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    connection = connections[using]
    if connection.vendor != "sqlite":
        return  # PostgreSQL keeps a table's triggers when a migration alters it
    if MIGRATION not in MigrationRecorder(connection).applied_migrations():
        return
    with connection.cursor() as cursor:
        install(connection.vendor, cursor.execute)
