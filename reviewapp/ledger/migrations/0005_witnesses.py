"""Witness cosignatures (insert-only, so every trigger is reinstalled) and witness state."""

import django.db.models.deletion
from django.db import migrations, models

from reviewapp.ledger import immutability


def reinstall(apps, schema_editor):
    def execute(sql):
        schema_editor.execute(sql, params=None)

    tables = immutability.TABLES_BEFORE_REVIEWS
    # Keep the shared functions: review's access-loss table (review 0021) may already use
    # them (install re-creates them anyway).
    immutability.uninstall(schema_editor.connection.vendor, execute, tables, functions=False)
    immutability.install(schema_editor.connection.vendor, execute, tables)


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0004_guarded_keys_chain_head_truncate"),
    ]

    operations = [
        migrations.CreateModel(
            name="LedgerWitness",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("vkey", models.CharField(max_length=300, unique=True)),
                ("name", models.CharField(max_length=200)),
                (
                    "known_size",
                    models.BigIntegerField(
                        default=0, help_text="the tree size the witness last cosigned for this log"
                    ),
                ),
                (
                    "alert",
                    models.TextField(
                        blank=True,
                        help_text="set when the witness refused a checkpoint; what to do about it",
                    ),
                ),
                ("alert_at", models.DateTimeField(blank=True, null=True)),
                (
                    "unreachable",
                    models.TextField(blank=True, help_text="the last failure to reach it"),
                ),
                ("unreachable_since", models.DateTimeField(blank=True, null=True)),
                ("last_cosigned_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "verbose_name_plural": "ledger witnesses",
                "db_table": "ledger_witness",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="LedgerCosignature",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("witness", models.CharField(help_text="the witness's key name", max_length=200)),
                ("key_id", models.CharField(help_text="hex, the signed-note key ID", max_length=8)),
                (
                    "timestamp",
                    models.BigIntegerField(help_text="POSIX seconds, when the witness cosigned"),
                ),
                (
                    "line",
                    models.TextField(
                        help_text="the note signature line, verbatim, without its newline"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "checkpoint",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="cosignatures",
                        to="ledger.ledgercheckpoint",
                    ),
                ),
            ],
            options={
                "db_table": "ledger_cosignature",
                "ordering": ["witness", "id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("checkpoint", "witness", "key_id"), name="ledger_cosignature_once"
                    )
                ],
            },
        ),
        migrations.RunPython(reinstall, migrations.RunPython.noop),
    ]
