"""LLM lenses ask for their judgement in a response format of their own.

New lenses default to strict structured output; existing ones keep the JSON
object mode they were sending, so an endpoint that worked keeps working.
"""

from django.db import migrations, models


def keep_json_object(apps, schema_editor):
    apps.get_model("review", "Lens").objects.update(response_format="json_object")


class Migration(migrations.Migration):
    dependencies = [("review", "0005_claim_dropped_assessment")]

    operations = [
        migrations.AddField(
            model_name="lens",
            name="response_format",
            field=models.CharField(
                choices=[
                    ("json_schema", "JSON schema (strict structured output)"),
                    ("json_object", "JSON object"),
                    ("text", "Plain text (no response_format sent)"),
                ],
                default="json_schema",
                help_text=(
                    "How the judgement is asked for. Choose JSON object or plain text for a "
                    "server that refuses structured output; the answer is checked the same way "
                    "in every mode."
                ),
                max_length=20,
            ),
        ),
        migrations.RunPython(keep_json_object, migrations.RunPython.noop),
    ]
