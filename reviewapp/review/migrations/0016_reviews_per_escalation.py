"""Reviews per escalation (issue 30): reviews, per-reviewer claims, personal tokens.

The new status `reconcile` is in the inbox, so the inbox's partial indexes
hold it too: `inbox_open` (both databases, in the operations) and, on
PostgreSQL, 0011's GIN index and per-reason indexes, rebuilt here with the
new condition, plus one for each reason added since 0011: `audit` (0015
added the reason without its index) and `reviewers_disagree`.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db.models import Q
import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

OLD_OPEN = Q(status__in=["open", "claimed"])
NEW_OPEN = Q(status__in=["open", "claimed", "reconcile"])
OLD_REASONS = ("no_quorum", "inconclusive", "lens_failed", "sign_off", "final_step_failed")
NEW_REASONS = (*OLD_REASONS, "audit", "reviewers_disagree")


def _indexes(open_q, reasons):
    return [
        GinIndex(
            fields=["search", "reasons"],
            opclasses=["tsvector_ops", "jsonb_path_ops"],
            condition=open_q,
            name="inbox_search",
        ),
        *(
            models.Index(
                fields=["-created_at", "-id"],
                condition=open_q & Q(reasons__contains=[code]),
                name=f"inbox_{code}",
            )
            for code in reasons
        ),
    ]


def _swap(old, new):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        Escalation = apps.get_model("review", "Escalation")
        for index in old:
            schema_editor.remove_index(Escalation, index)
        for index in new:
            schema_editor.add_index(Escalation, index)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0015_decision_audits'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Review',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reviewer_name', models.CharField(max_length=150)),
                ('outcome', models.CharField(choices=[('approved', 'Approved'), ('rejected', 'Rejected')], max_length=10)),
                ('rationale', models.TextField()),
                ('annotations', models.JSONField(blank=True, default=dict)),
                ('payload', models.TextField()),
                ('signature', models.CharField(max_length=200)),
                ('key_id', models.CharField(max_length=64)),
                ('hash', models.CharField(max_length=64, unique=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.CreateModel(
            name='ReviewClaim',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('claimed_at', models.DateTimeField()),
            ],
        ),
        migrations.RemoveIndex(
            model_name='escalation',
            name='inbox_open',
        ),
        migrations.AddField(
            model_name='apiclient',
            name='user',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='escalation',
            name='reviews_needed',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name='panel',
            name='reviews_needed',
            field=models.PositiveSmallIntegerField(default=1, help_text='Independent human reviews an escalation needs (1 to 5). Agreeing reviews decide it; disagreeing ones go to a reconciler. Audits always take one verdict.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(5)]),
        ),
        migrations.AlterField(
            model_name='escalation',
            name='status',
            field=models.CharField(choices=[('open', 'Open'), ('claimed', 'Claimed'), ('reconcile', 'Reconcile'), ('resolved', 'Resolved')], db_index=True, default='open', max_length=10),
        ),
        migrations.AddIndex(
            model_name='escalation',
            index=models.Index(condition=models.Q(('status__in', ['open', 'claimed', 'reconcile'])), fields=['-created_at', '-id'], name='inbox_open'),
        ),
        migrations.AddField(
            model_name='review',
            name='escalation',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reviews', to='review.escalation'),
        ),
        migrations.AddField(
            model_name='review',
            name='reviewer',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reviews', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='reviewclaim',
            name='escalation',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='review_claims', to='review.escalation'),
        ),
        migrations.AddField(
            model_name='reviewclaim',
            name='user',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='review_claims', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='review',
            constraint=models.UniqueConstraint(fields=('escalation', 'reviewer'), name='one_review_per_reviewer'),
        ),
        migrations.AddConstraint(
            model_name='reviewclaim',
            constraint=models.UniqueConstraint(fields=('escalation', 'user'), name='one_claim_per_reviewer'),
        ),
        migrations.RunPython(
            _swap(_indexes(OLD_OPEN, OLD_REASONS), _indexes(NEW_OPEN, NEW_REASONS)),
            _swap(_indexes(NEW_OPEN, NEW_REASONS), _indexes(OLD_OPEN, OLD_REASONS)),
            elidable=False,
        ),
    ]
