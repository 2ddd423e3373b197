"""Signing keys and the chain head join the append-only tables; TRUNCATE is refused.

Re-installs every trigger (see reviewapp/ledger/immutability.py): signing
keys may only be retired, the chain head may only advance, PostgreSQL gets
BEFORE TRUNCATE triggers, and SQLite's delete guard becomes a function only
the app's own connections have (the old guard table, which one UPDATE
opened, is dropped).
"""

from django.db import migrations

from reviewapp.ledger import immutability


def reinstall(apps, schema_editor):
    def execute(sql):
        schema_editor.execute(sql, params=None)

    tables = immutability.TABLES_BEFORE_COSIGNATURES
    immutability.uninstall(schema_editor.connection.vendor, execute, tables)
    immutability.install(schema_editor.connection.vendor, execute, tables)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0003_append_only")]

    operations = [migrations.RunPython(reinstall, migrations.RunPython.noop)]
