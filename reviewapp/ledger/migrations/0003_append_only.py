"""The database refuses UPDATE and DELETE on decisions, evidence and the ledger.

See reviewapp/ledger/immutability.py for the SQL per backend and why SQLite's
DELETE trigger has a guard that only `flush` opens.
"""

from django.db import migrations

from reviewapp.ledger import immutability


def install(apps, schema_editor):
    immutability.install(
        schema_editor.connection.vendor,
        lambda sql: schema_editor.execute(sql, params=None),
        immutability.TABLES_BEFORE_COSIGNATURES,
    )


def uninstall(apps, schema_editor):
    immutability.uninstall(
        schema_editor.connection.vendor,
        lambda sql: schema_editor.execute(sql, params=None),
        immutability.TABLES_BEFORE_COSIGNATURES,
    )


class Migration(migrations.Migration):
    dependencies = [("ledger", "0002_backfill")]

    operations = [migrations.RunPython(install, uninstall)]
