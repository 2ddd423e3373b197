"""The escalation reason `below_guarantee` (issue 45): assignment rules may name it, and on
PostgreSQL the inbox gets its per-reason index, like 0011's and 0016's."""

from django.db import migrations, models
from django.db.models import Q

OPEN = Q(status__in=["open", "claimed", "reconcile"])
INDEX = models.Index(
    fields=["-created_at", "-id"],
    condition=OPEN & Q(reasons__contains=["below_guarantee"]),
    name="inbox_below_guarantee",
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("review", "Escalation"), INDEX)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("review", "Escalation"), INDEX)


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0018_review_deadlines_and_withdrawals'),
    ]

    operations = [
        migrations.AlterField(
            model_name='assignmentrule',
            name='reason',
            field=models.CharField(blank=True, choices=[('no_quorum', 'No quorum'), ('inconclusive', 'Inconclusive checker'), ('lens_failed', 'Lens failed'), ('sign_off', 'Sign-off'), ('final_step_failed', 'Final step kept failing'), ('reviewers_disagree', 'Reviewers disagree'), ('audit', 'Audit of an automatic decision'), ('below_guarantee', "Below the panel's guarantee")], help_text='Empty: any reason.', max_length=20),
        ),
        migrations.RunPython(create, drop),
    ]
