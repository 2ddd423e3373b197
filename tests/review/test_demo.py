import pytest
from django.contrib.auth import get_user_model

from reviewapp.review.demo import load_demo
from reviewapp.review.models import Decision, Escalation, LensFailure, Panel, Proposal
from tests.conftest import wait_for

CREDENTIALS = {"reviewer": ("rev", "pw-rev-123"), "admin": ("adm", "pw-adm-123")}


@pytest.mark.django_db
def test_loading_the_demo_twice_adds_nothing_the_second_time():
    first = load_demo(credentials=CREDENTIALS)
    counts = (Proposal.objects.count(), Panel.objects.count(), get_user_model().objects.count())
    second = load_demo(credentials=CREDENTIALS)
    assert first["proposals_created"] >= 40
    assert second["proposals_created"] == 0
    assert counts == (
        Proposal.objects.count(),
        Panel.objects.count(),
        get_user_model().objects.count(),
    )


@pytest.mark.django_db
def test_the_demo_has_three_panels_of_distinct_lenses():
    load_demo(credentials=CREDENTIALS)
    shapes = {p.name: (p.need, p.panel_lenses.count()) for p in Panel.objects.all()}
    assert shapes == {"regulatory": (3, 3), "support-answers": (2, 3), "house-style": (1, 1)}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_real_worker_drains_the_demo_through_every_route(worker):
    load_demo(credentials=CREDENTIALS)
    total = Proposal.objects.count()
    wait_for(
        lambda: Proposal.objects.filter(status__in=["decided", "escalated"]).count() == total,
        timeout=240,
        interval=1,
        message=f"the demo did not drain:\n{worker.log()}",
    )
    reasons = {r for e in Escalation.objects.all() for r in e.reasons}
    assert reasons == {"no_quorum", "inconclusive", "lens_failed", "sign_off"}
    assert Decision.objects.filter(outcome="approved").exists()
    assert Decision.objects.filter(
        outcome="rejected", proposal__evidence__verdict="fail"
    ).exists(), "a checker rejection"
    assert Decision.objects.filter(
        outcome="rejected", proposal__tally__outcome="reached_fail"
    ).exists(), "a panel rejection"
    assert LensFailure.objects.exists()
