"""Decisions are signed alone (payload v2): the chain head goes, and prev_hash is null from now on.

Decisions signed before keep their prev_hash, and their chain is still verified.
After the ledger's trigger migrations (which install, then re-install, the head's).
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0021_access_losses'),
        ('ledger', '0006_reviews_append_only'),
    ]

    operations = [
        migrations.DeleteModel(
            name='ChainHead',
        ),
        migrations.AlterField(
            model_name='decision',
            name='prev_hash',
            field=models.CharField(blank=True, max_length=64, null=True, unique=True),
        ),
    ]
