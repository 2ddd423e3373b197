"""Migration 0005 recovers what a lens said of the cites it had dropped as "verified"."""

import importlib
import json

import pytest
from django.apps import apps

from reviewapp.review.models import Claim
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db

migration = importlib.import_module("reviewapp.review.migrations.0005_claim_dropped_assessment")


def _dropped(raw_response: str, cite: str) -> Claim:
    from reviewapp.review.models import Judgement

    lens = LensFactory()
    proposal = submit(PanelFactory(lenses=[lens], need=1), "Some content.")
    judgement = Judgement.objects.create(
        proposal=proposal,
        lens=lens,
        lens_name=lens.name,
        lens_version=1,
        verdict="fail",
        raw_response=raw_response,
    )
    return Claim.objects.create(
        judgement=judgement,
        position=0,
        cite=cite,
        assessment="verified",
        anchor_kind="unresolved",
        dropped=True,
    )


def test_the_assessment_in_the_kept_answer_replaces_the_stored_verified():
    raw = json.dumps(
        {
            "verdict": "fail",
            "claims": [{"cite": "Made up.", "assessment": "refuted", "note": "No."}],
        }
    )
    claim = _dropped(raw, "Made up.")
    migration.recover_assessments(apps, None)
    claim.refresh_from_db()
    assert (claim.assessment, claim.note) == ("refuted", "No.")


def test_without_a_kept_answer_the_assessment_becomes_not_recorded():
    claim = _dropped("", "Made up.")
    migration.recover_assessments(apps, None)
    claim.refresh_from_db()
    assert claim.assessment == ""
