from django.db import migrations, models

# Failures recorded before kinds existed, classified by the text their raisers
# wrote (first match wins; the prefixes are stable). A text none matches was an
# API key variable the server refused to read: the one raiser with no fixed prefix.
_KINDS_BY_TEXT = [
    ("before the panel's external deadline", "deadline"),
    ("answered 429", "rate_limited"),
    ("HTTP 429", "rate_limited"),
    ("time limit", "timeout"),
    ("malformed judgement", "invalid_answer"),
    ("the model refused to judge", "invalid_answer"),
    ("the model's answer was cut off", "invalid_answer"),
    ("the model answered only in its reasoning", "invalid_answer"),
    ("refused the requested response format", "invalid_answer"),
    ("permanent transport error", "http_error"),
    ("transport budget exhausted", "transport_error"),
    ("transient transport error", "transport_error"),
    ("could not evaluate", "undecidable"),
]


def classify(apps, schema_editor):
    LensFailure = apps.get_model("review", "LensFailure")
    unclassified = LensFailure.objects.filter(kind="")
    for text, kind in _KINDS_BY_TEXT:
        unclassified.filter(error__contains=text).update(kind=kind)
    unclassified.update(kind="misconfigured")


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0012_lens_deadline_and_endpoint_control"),
    ]

    operations = [
        migrations.AddField(
            model_name="lensfailure",
            name="kind",
            field=models.CharField(default="", max_length=20),
            preserve_default=False,
        ),
        migrations.RunPython(classify, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="lensfailure",
            name="kind",
            field=models.CharField(
                choices=[
                    ("timeout", "timeout"),
                    ("rate_limited", "rate limited"),
                    ("transport_error", "transport error"),
                    ("http_error", "http error"),
                    ("invalid_answer", "invalid answer"),
                    ("misconfigured", "misconfigured"),
                    ("undecidable", "undecidable"),
                    ("deadline", "deadline"),
                    ("deleted", "deleted"),
                ],
                max_length=20,
            ),
        ),
    ]
