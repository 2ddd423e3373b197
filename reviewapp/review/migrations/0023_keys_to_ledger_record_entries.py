"""The signing keys move to the ledger (ledger 0008); review reads the ledger's entries.

State only: no table changes. ``RecordEntry`` is the ledger's table seen with
its ids as relations to decisions and evidence (unmanaged).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0008_keys_and_record_ids"),
        ("review", "0022_decisions_signed_alone"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="SigningKey")],
            database_operations=[],
        ),
        migrations.CreateModel(
            name="RecordEntry",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("leaf_index", models.BigIntegerField(null=True, unique=True)),
                ("kind", models.CharField(max_length=8)),
                ("entry", models.TextField()),
                ("leaf_hash", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField()),
                ("sequenced_at", models.DateTimeField(null=True)),
                ("decision", models.OneToOneField(null=True, on_delete=django.db.models.deletion.PROTECT, related_name="ledger_entry", to="review.decision")),
                ("evidence", models.OneToOneField(null=True, on_delete=django.db.models.deletion.PROTECT, related_name="ledger_entry", to="review.evidence")),
            ],
            options={"db_table": "ledger_entry", "managed": False},
        ),
    ]
