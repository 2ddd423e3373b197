"""benchmarks/agreement.py at a tiny size: what it loads is what the figures count."""

import pytest

from benchmarks import agreement
from reviewapp.calibration.models import HumanLabel, LensLabel
from reviewapp.guarantee.models import SHARDS, PatternDay
from reviewapp.review.models import ClaimMark, Decision, DecisionAudit, Judgement

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded():
    lenses = agreement.setup_lenses()
    browser, api = agreement.clients()
    before = agreement.query_counts(lenses[0].name, browser, api)
    agreement.load(judgements=500, decisions=20, lenses=lenses)
    agreement.load_guarantee(judgements=500, decisions=20)
    return lenses, browser, api, before


def test_the_load_writes_judgements_decisions_and_their_labels(loaded):
    assert Judgement.objects.count() == 500
    assert Decision.objects.filter(basis="reviewer").count() == 18
    assert DecisionAudit.objects.filter(decision__basis="system").count() == 2
    assert HumanLabel.objects.count() == 20
    assert HumanLabel.objects.filter(audit=True).count() == 2
    assert LensLabel.objects.count() == 20 * agreement.PER_PANEL


def test_the_answers_cost_the_same_queries_before_and_after_the_load(loaded):
    lenses, browser, api, before = loaded
    assert agreement.query_counts(lenses[0].name, browser, api) == before


def test_the_api_counts_what_the_load_decided(loaded):
    lenses, browser, api, _ = loaded
    body = api.get(f"/api/lenses/{lenses[0].name}/agreement").json()
    assert body["n"] == HumanLabel.objects.filter(lenses__lens=lenses[0]).count() > 0
    assert body["kappa"] is not None or body["kappa_undefined_reason"]


def test_the_timings_run(loaded):
    lenses, browser, api, _ = loaded
    samples = agreement.timings(lenses[0].name, browser, api, requests=2)
    assert all(len(v) == 2 for v in samples.values())


def test_the_api_counts_the_claims_the_load_marked(loaded):
    lenses, browser, api, _ = loaded
    bodies = [api.get(f"/api/lenses/{lens.name}/agreement").json() for lens in lenses]
    assert sum(b["claims_marked"] for b in bodies) == ClaimMark.objects.count() > 0
    incorrect = ClaimMark.objects.filter(mark="incorrect").count()
    assert sum(b["claims_marked"] * (b["claims_marked_incorrect"] or 0) for b in bodies) == (
        pytest.approx(incorrect)
    )


def test_the_guarantee_counts_what_the_load_wrote(loaded):
    _, _, api, _ = loaded
    body = api.get(f"/api/panels/{agreement.GUARANTEED_PANEL}/guarantee").json()
    assert len(body["patterns"]) == len(agreement.PATTERN_MIX) == 9
    assert sum(p["labels"] for p in body["patterns"]) == pytest.approx(20, abs=5)
    days = PatternDay.objects.filter(panel__name=agreement.GUARANTEED_PANEL)
    assert days.count() == 9 * SHARDS * agreement.DAYS
    assert body["overall"]["decisions"] == sum(d.automatic for d in days)
