"""The sequencer: entries are stored without an index and given one, once, afterwards.

The ledger's lock row goes (the sequencer takes an advisory lock), and the
entry's trigger is re-installed to allow exactly that one UPDATE
(reviewapp/ledger/immutability.py); the chain head's guard function goes with
its table (review 0022).
"""

from django.db import migrations, models

from reviewapp.ledger import immutability


def reinstall_entry_trigger(apps, schema_editor):
    def execute(sql):
        schema_editor.execute(sql, params=None)

    vendor = schema_editor.connection.vendor
    immutability.uninstall(vendor, execute, ("ledger_entry",), functions=False)
    # Every table: SQLite dropped review_decision's triggers when review 0022 rebuilt it.
    immutability.install(vendor, execute)
    if vendor == "postgresql":
        execute("DROP FUNCTION IF EXISTS reviewapp_guard_review_chainhead()")


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0006_reviews_append_only'),
        ('review', '0022_decisions_signed_alone'),
    ]

    operations = [
        migrations.DeleteModel(
            name='LedgerLock',
        ),
        migrations.AddField(
            model_name='ledgerentry',
            name='sequenced_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='ledgerentry',
            name='leaf_index',
            field=models.BigIntegerField(blank=True, help_text='null until the sequencer sets it, once', null=True, unique=True),
        ),
        migrations.AddIndex(
            model_name='ledgerentry',
            index=models.Index(condition=models.Q(('leaf_index__isnull', True)), fields=['id'], name='ledger_entry_unsequenced'),
        ),
        migrations.RunPython(reinstall_entry_trigger, migrations.RunPython.noop),
    ]
