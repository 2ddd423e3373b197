"""Issue 42: personal tokens stay dead. The database records every loss of the right to
review, append-only, whatever made it (reviewapp/review/access_loss.py), and a token
remembers the last one when it is issued."""

from django.db import migrations, models

from reviewapp.ledger import immutability
from reviewapp.review import access_loss


def install(apps, schema_editor):
    def execute(sql):
        schema_editor.execute(sql, params=None)

    vendor = schema_editor.connection.vendor
    immutability.install(vendor, execute, (access_loss.LOSS_TABLE,))
    access_loss.install(vendor, execute)


def uninstall(apps, schema_editor):
    def execute(sql):
        schema_editor.execute(sql, params=None)

    vendor = schema_editor.connection.vendor
    access_loss.uninstall(vendor, execute)
    immutability.uninstall(vendor, execute, (access_loss.LOSS_TABLE,), functions=False)


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0020_sweeps_and_internal_error_kind'),
        # Its triggers call the ledger's refusal function, which ledger 0005 and 0006
        # drop and re-create: after them, whatever else a fresh database migrates first.
        ('ledger', '0006_reviews_append_only'),
        ('auth', '0012_alter_user_first_name_max_length'),
    ]

    operations = [
        migrations.CreateModel(
            name='AccessLoss',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('user_id', models.IntegerField(db_index=True)),
                ('lost_at', models.DateTimeField()),
                ('reason', models.CharField(max_length=100)),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddField(
            model_name='apiclient',
            name='access_epoch',
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(install, uninstall),
    ]
