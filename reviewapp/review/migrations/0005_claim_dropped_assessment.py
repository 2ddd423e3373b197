"""Dropped cites were stored as "verified" whatever the lens said; recover what it said.

An LLM lens's last answer is kept in `raw_response` and names every cite it
dropped with its assessment; an external lens's answer is not kept, so there
the assessment is left blank ("not recorded") rather than guessed.
"""

import json

from django.db import migrations, models

ASSESSMENTS = ("verified", "contested", "refuted")


def _said(raw_response: str, cite: str) -> tuple[str, str]:
    start, end = raw_response.find("{"), raw_response.rfind("}")
    try:
        answer = json.loads(raw_response[start : end + 1]) if start >= 0 else {}
    except ValueError:
        return "", ""
    claims = answer.get("claims") if isinstance(answer, dict) else None
    for claim in claims if isinstance(claims, list) else []:
        if isinstance(claim, dict) and claim.get("cite") == cite:
            assessment = claim.get("assessment", "verified")
            if assessment in ASSESSMENTS:
                note = claim.get("note")
                return assessment, note if isinstance(note, str) else ""
    return "", ""


def recover_assessments(apps, schema_editor):
    Claim = apps.get_model("review", "Claim")
    changed = []
    for claim in Claim.objects.filter(dropped=True).select_related("judgement").iterator():
        claim.assessment, said_note = _said(claim.judgement.raw_response, claim.cite)
        claim.note = claim.note or said_note
        changed.append(claim)
    Claim.objects.bulk_update(changed, ["assessment", "note"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0004_external_lens_clients_and_visibility"),
    ]

    operations = [
        migrations.AlterField(
            model_name="claim",
            name="assessment",
            field=models.CharField(
                blank=True,
                choices=[
                    ("verified", "Verified"),
                    ("contested", "Contested"),
                    ("refuted", "Refuted"),
                ],
                max_length=10,
            ),
        ),
        migrations.RunPython(recover_assessments, migrations.RunPython.noop),
    ]
