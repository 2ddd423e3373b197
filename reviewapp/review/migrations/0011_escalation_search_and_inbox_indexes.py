"""The inbox at scale: open escalations carry their proposal's search vector; bounded indexes.

Both databases: `inbox_open` (open and claimed escalations, newest first)
replaces `escalation_inbox`, whose leading status column could not give the
two open statuses in age order. PostgreSQL also gets, kept out of the model's
Meta like 0008's index (SQLite has neither GIN nor JSON containment):

- `Escalation.search` filled for the escalations open now (new ones get it
  when they are created, see reviewapp.review.search), and a GIN index over
  it and the reasons, holding open escalations only;
- one `inbox_open`-like index per reason, so the inbox counts and lists an
  escalation reason by reading that reason's rows alone.
"""

import django.contrib.postgres.search
from django.contrib.postgres.indexes import GinIndex
from django.db import migrations, models
from django.db.models import OuterRef, Q, Subquery

OPEN = Q(status__in=["open", "claimed"])
# Escalation.Reason's codes, as of this migration: a new reason needs its index.
REASONS = ("no_quorum", "inconclusive", "lens_failed", "sign_off", "final_step_failed")


def _indexes():
    return [
        GinIndex(
            fields=["search", "reasons"],
            opclasses=["tsvector_ops", "jsonb_path_ops"],
            condition=OPEN,
            name="inbox_search",
        ),
        *(
            models.Index(
                fields=["-created_at", "-id"],
                condition=OPEN & Q(reasons__contains=[code]),
                name=f"inbox_{code}",
            )
            for code in REASONS
        ),
    ]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from reviewapp.review.search import proposal_search_vector

    Escalation = apps.get_model("review", "Escalation")
    Proposal = apps.get_model("review", "Proposal")
    Escalation.objects.filter(OPEN).update(
        search=Subquery(
            Proposal.objects.filter(pk=OuterRef("proposal_id")).values(v=proposal_search_vector())
        )
    )
    for index in _indexes():
        schema_editor.add_index(Escalation, index)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    Escalation = apps.get_model("review", "Escalation")
    for index in _indexes():
        schema_editor.remove_index(Escalation, index)


class Migration(migrations.Migration):
    dependencies = [("review", "0010_endpoint_concurrency_default_1024")]

    operations = [
        migrations.RemoveIndex(model_name="escalation", name="escalation_inbox"),
        migrations.AddField(
            model_name="escalation",
            name="search",
            field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="escalation",
            index=models.Index(
                condition=models.Q(("status__in", ["open", "claimed"])),
                fields=["-created_at", "-id"],
                name="inbox_open",
            ),
        ),
        migrations.RunPython(create, drop, elidable=False),
    ]
