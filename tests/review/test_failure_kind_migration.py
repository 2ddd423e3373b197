"""Migration 0013 gives each lens failure recorded before kinds the kind its text names."""

import importlib

import pytest
from django.apps import apps

from reviewapp.review.models import LensFailure
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db

migration = importlib.import_module("reviewapp.review.migrations.0013_lensfailure_kind")


def _unclassified(error: str) -> LensFailure:
    lens = LensFactory()
    proposal = submit(PanelFactory(lenses=[lens], need=1), "Some content.")
    return LensFailure.objects.create(
        proposal=proposal, lens=lens, lens_name=lens.name, lens_version=1, error=error, kind=""
    )


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ("no judgement arrived before the panel's external deadline", "deadline"),
        (
            "the provider at http://llm:8000 answered 429 for 2 minutes (after 9 transport calls)",
            "rate_limited",
        ),
        ("time limit of 120s reached after 120.0s (after 3 transport calls)", "timeout"),
        (
            "the worker's time limit was reached before this lens answered (after 0 transport "
            "calls)",
            "timeout",
        ),
        (
            "malformed judgement after repair: no JSON object (after 2 transport calls)",
            "invalid_answer",
        ),
        ("the model refused to judge: no (after 1 transport calls)", "invalid_answer"),
        ("permanent transport error: HTTP 401: b'' (after 1 transport calls)", "http_error"),
        ("transport budget exhausted: HTTP 503: b'' (after 4 transport calls)", "transport_error"),
        ("could not evaluate: clause 2 (after 0 transport calls)", "undecidable"),
        (
            "no recorded response for lens 'x' and this content (after 0 transport calls)",
            "misconfigured",
        ),
        (
            "MY_KEY is not a variable lenses may read: ... (after 0 transport calls)",
            "misconfigured",
        ),
    ],
)
def test_a_failure_recorded_before_kinds_gets_the_kind_its_text_names(error, kind):
    failure = _unclassified(error)

    migration.classify(apps, None)

    failure.refresh_from_db()
    assert failure.kind == kind


def test_a_failure_that_has_a_kind_keeps_it():
    failure = _unclassified("time limit of 1s reached")
    LensFailure.objects.filter(pk=failure.pk).update(kind="rate_limited")

    migration.classify(apps, None)

    failure.refresh_from_db()
    assert failure.kind == "rate_limited"
