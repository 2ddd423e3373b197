"""Reviews and audit verdicts join the append-only tables (reviewapp/ledger/immutability.py).

A review edited in place used to be decided on (issue 42): now the database
refuses to change or delete one, as it does a decision.
"""

from django.db import migrations

from reviewapp.ledger import immutability

TABLES = ("review_review", "review_decisionaudit")


def install(apps, schema_editor):
    immutability.install(
        schema_editor.connection.vendor, lambda sql: schema_editor.execute(sql, params=None), TABLES
    )


def uninstall(apps, schema_editor):
    immutability.uninstall(
        schema_editor.connection.vendor,
        lambda sql: schema_editor.execute(sql, params=None),
        TABLES,
        functions=False,  # the other tables' triggers still call them
    )


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0005_witnesses"),
        ("review", "0016_reviews_per_escalation"),
    ]

    operations = [migrations.RunPython(install, uninstall)]
