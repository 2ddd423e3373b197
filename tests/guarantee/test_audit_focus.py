"""Audits where they teach the most: the flat rate's budget, spent nearest the target."""

import pytest
from django.utils import timezone

from reviewapp.core.guarantee.configuration import configuration_key
from reviewapp.guarantee.models import PatternDay, PatternEvidence
from reviewapp.review.models import Escalation
from reviewapp.review.services import audits
from reviewapp.review.services.proposals import panel_snapshot
from tests.review.helpers import evaluate_in_process, submit

from .builders import CONTENT, MAJORITY, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db


def decided(panel, pattern, automatic):
    PatternDay.objects.create(
        panel=panel,
        configuration=configuration_key(panel_snapshot(panel)),
        pattern=pattern,
        day=timezone.now().date(),
        automatic=automatic,
    )


def focused_panel(verdicts, focus):
    panel = guaranteed(voting_panel(verdicts, audit_rate=10), audit_focus=focus)
    decided(panel, UNANIMOUS, 900)
    decided(panel, MAJORITY, 100)
    evidence(panel, UNANIMOUS, labels=2000, agreed=2000)  # far above the target
    evidence(panel, MAJORITY, labels=250, agreed=248)  # just above it
    return panel


def factor(panel, pattern):
    return PatternEvidence.objects.get(panel=panel, pattern=pattern).audit_factor


def test_the_pattern_nearest_the_target_is_audited_more_within_the_same_budget():
    panel = focused_panel(["pass", "fail", "pass"], "nearest")
    near, far = factor(panel, MAJORITY), factor(panel, UNANIMOUS)
    assert near > 1 > far
    assert 100 * near + 900 * far == pytest.approx(1000)


def test_a_decision_of_the_nearest_pattern_is_drawn_at_its_focused_rate(monkeypatch):
    panel = focused_panel(["pass", "fail", "pass"], "nearest")
    # A draw of 0.15: past the flat 10 %, inside the focused rate.
    monkeypatch.setattr(audits.AUDIT_RANDOM, "random", lambda: 0.15)
    assert 10 * factor(panel, MAJORITY) > 15
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.decision.basis == "system"
    assert proposal.escalations.get().reasons == [Escalation.Reason.AUDIT]


def test_with_flat_audits_the_same_draw_audits_nothing(monkeypatch):
    panel = focused_panel(["pass", "fail", "pass"], "flat")
    assert factor(panel, MAJORITY) is None
    monkeypatch.setattr(audits.AUDIT_RANDOM, "random", lambda: 0.15)
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.decision.basis == "system" and not proposal.escalations.exists()
