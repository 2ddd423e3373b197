"""Issue 42: a proposal counts the sweeper's re-sends (REVIEWAPP_SWEEP_ATTEMPTS bounds them),
a lens call's unexpected error is a failure of its own kind, and the key's field says what
it holds."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0019_below_guarantee_reason'),
    ]

    operations = [
        migrations.AddField(
            model_name='proposal',
            name='sweeps',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AlterField(
            model_name='lens',
            name='api_key_env',
            field=models.CharField(blank=True, help_text='Name of the environment variable holding the API key (never the key itself).', max_length=100, verbose_name='API key variable'),
        ),
        migrations.AlterField(
            model_name='lensfailure',
            name='kind',
            field=models.CharField(choices=[('timeout', 'timeout'), ('rate_limited', 'rate limited'), ('transport_error', 'transport error'), ('http_error', 'http error'), ('invalid_answer', 'invalid answer'), ('misconfigured', 'misconfigured'), ('undecidable', 'undecidable'), ('deadline', 'deadline'), ('deleted', 'deleted'), ('internal_error', 'internal error')], max_length=20),
        ),
    ]
