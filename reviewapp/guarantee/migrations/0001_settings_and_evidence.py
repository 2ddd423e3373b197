# The guarantee (issue 45): a panel's settings, and the evidence per vote pattern.

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('review', '0017_assignment_and_priority'),
    ]

    operations = [
        migrations.CreateModel(
            name='PanelGuarantee',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('target', models.FloatField(blank=True, help_text='The share of automatic decisions that must match what a reviewer would decide, from 0.5 to 0.999 (e.g. 0.95). Empty: the guarantee is off and the panel routes by its quorum alone.', null=True, validators=[django.core.validators.MinValueValidator(0.5), django.core.validators.MaxValueValidator(0.999)])),
                ('confidence', models.FloatField(default=0.95, help_text='How sure the promise is, from 0.5 to 0.999 (e.g. 0.95). Higher needs more agreeing labels before a pattern is trusted.', validators=[django.core.validators.MinValueValidator(0.5), django.core.validators.MaxValueValidator(0.999)])),
                ('audit_focus', models.CharField(choices=[('flat', "Flat: every automatic decision alike, at the panel's audit rate"), ('nearest', 'Where the bounds are nearest the target (same budget)')], default='flat', help_text="How the panel's audit rate is spent on trusted patterns.", max_length=10)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('panel', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='guarantee', to='review.panel')),
            ],
            options={
                'constraints': [models.CheckConstraint(condition=models.Q(('target__isnull', True), models.Q(('target__gte', 0.5), ('target__lte', 0.999)), _connector='OR'), name='guarantee_target_range'), models.CheckConstraint(condition=models.Q(('confidence__gte', 0.5), ('confidence__lte', 0.999)), name='guarantee_confidence_range')],
            },
        ),
        migrations.CreateModel(
            name='PatternDay',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('configuration', models.CharField(max_length=32)),
                ('pattern', models.CharField(max_length=40)),
                ('day', models.DateField()),
                ('shard', models.PositiveSmallIntegerField(default=0)),
                ('automatic', models.PositiveIntegerField(default=0)),
                ('held', models.PositiveIntegerField(default=0)),
                ('panel', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='review.panel')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('panel', 'configuration', 'pattern', 'day', 'shard'), name='pattern_day_once')],
            },
        ),
        migrations.CreateModel(
            name='PatternEvidence',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('configuration', models.CharField(max_length=32)),
                ('pattern', models.CharField(max_length=40)),
                ('need', models.PositiveSmallIntegerField()),
                ('labels', models.PositiveIntegerField(default=0)),
                ('agreed', models.PositiveIntegerField(default=0)),
                ('audited', models.PositiveIntegerField(default=0)),
                ('lower_bound', models.FloatField(default=0.0)),
                ('clears', models.BooleanField(default=False)),
                ('trusted', models.BooleanField(default=False)),
                ('labels_to_trust', models.PositiveIntegerField(blank=True, null=True)),
                ('waits_on', models.CharField(blank=True, max_length=40)),
                ('audit_factor', models.FloatField(blank=True, null=True)),
                ('changed_at', models.DateTimeField(blank=True, null=True)),
                ('panel', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='review.panel')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('panel', 'configuration', 'pattern'), name='pattern_evidence_once'), models.CheckConstraint(condition=models.Q(('agreed__lte', models.F('labels'))), name='guarantee_agreed_of_labels')],
            },
        ),
    ]
