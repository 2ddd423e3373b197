"""The ledger knows nothing of review: it takes the signing keys, and records rows by id.

State only: the tables, their columns, constraints and append-only triggers
stay as they are. ``SigningKey`` keeps its table (review_signingkey) and its
permissions (its content type moves with it); an entry's decision and evidence
become plain ids, still held to existing rows by the database's foreign keys.
Review reads the same table with relations (review 0023, ``RecordEntry``).
"""

from django.db import migrations, models


def move_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label="review", model="signingkey"
    ).update(app_label="ledger")


def move_content_type_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label="ledger", model="signingkey"
    ).update(app_label="review")


ROW_CHECK = "ledger_entry_kind_matches_row"


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("ledger", "0007_sequencer"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SigningKey",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("key_id", models.CharField(max_length=64, unique=True)),
                        ("public_key", models.CharField(help_text="base64", max_length=64)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("retired_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={"db_table": "review_signingkey", "ordering": ["-created_at"]},
                ),
                migrations.RemoveConstraint(model_name="ledgerentry", name=ROW_CHECK),
                migrations.RemoveField(model_name="ledgerentry", name="decision"),
                migrations.RemoveField(model_name="ledgerentry", name="evidence"),
                migrations.AddField(
                    model_name="ledgerentry",
                    name="decision_id",
                    field=models.BigIntegerField(blank=True, null=True, unique=True),
                ),
                migrations.AddField(
                    model_name="ledgerentry",
                    name="evidence_id",
                    field=models.BigIntegerField(blank=True, null=True, unique=True),
                ),
                migrations.AddConstraint(
                    model_name="ledgerentry",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("decision_id__isnull", False), ("evidence_id__isnull", True), ("kind", "decision")),
                            models.Q(("decision_id__isnull", True), ("evidence_id__isnull", False), ("kind", "evidence")),
                            _connector="OR",
                        ),
                        name=ROW_CHECK,
                    ),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
