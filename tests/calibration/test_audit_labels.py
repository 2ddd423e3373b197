"""An audit verdict on an automatic decision is a human label, written with the verdict."""

import random
import re

import pytest

from reviewapp.calibration.models import HumanLabel, LensLabel
from reviewapp.calibration.queries import Window, panel_audits
from reviewapp.review.models import Decision
from reviewapp.review.services import audits
from reviewapp.review.services.escalations import escalation_claim, escalation_decide
from reviewapp.review.services.proposals import proposal_submit
from tests.api.conftest import api_with
from tests.factories import ReviewerFactory
from tests.review.test_audits import audit_of
from tests.webhooks.helpers import one_lens_panel, run_pipeline

pytestmark = pytest.mark.django_db

CONTENT = "The refund is issued within 14 days."


@pytest.fixture
def audited(monkeypatch):
    """An automatic approval (its one lens passed) whose panel audits every decision."""
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    panel = one_lens_panel(CONTENT, audit_rate=100)
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT)
    run_pipeline(proposal)
    assert proposal.decision.basis == Decision.Basis.SYSTEM
    assert proposal.decision.outcome == Decision.Outcome.APPROVED
    return proposal


def _verdict(proposal, outcome: str):
    reviewer = ReviewerFactory()
    escalation = audit_of(proposal)
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    return escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Checked the figures.",
        user=reviewer,
        decided_by_name=reviewer.get_username(),
    )


def _lens_name(proposal) -> str:
    return proposal.judgements.get().lens.name


def test_an_automatic_decision_is_no_human_label_until_it_is_audited(audited):
    assert not HumanLabel.objects.exists()


def test_an_audit_verdict_labels_the_proposal_and_its_lens(audited):
    audit = _verdict(audited, "rejected")
    label = HumanLabel.objects.get(proposal=audited)
    assert (label.audit, label.approved, label.machine_approved) == (True, False, True)
    assert (label.decision_id, label.decided_at) == (audit.decision_id, audit.created_at)
    [lens_label] = LensLabel.objects.filter(proposal=audited)
    assert (lens_label.passed, lens_label.approved, lens_label.audit) == (True, False, True)


def test_a_disagreeing_audit_moves_the_lens_agreement_as_an_audit(audited):
    api = api_with("read:all")
    path = f"/api/lenses/{_lens_name(audited)}/agreement"
    assert api.get(path).json()["n_by_kind"] == {"escalation": 0, "audit": 0}
    _verdict(audited, "rejected")
    body = api.get(path).json()
    assert body["n_by_kind"] == {"escalation": 0, "audit": 1}
    assert (body["agreement"], body["true_pass_rate"]) == (0.0, None)


def test_a_disagreeing_audit_counts_as_overturned_for_its_panel(audited, client):
    _verdict(audited, "rejected")
    [row] = panel_audits(Window())
    assert (row.panel_id, row.audits, row.overturned) == (audited.panel_id, 1, 1)
    client.force_login(ReviewerFactory())
    html = client.get("/dashboard/lenses").content.decode()
    row = re.search(r'<tr data-panel-audits="[^"]*">.*?</tr>', html, re.S).group(0)
    assert re.search(r'data-col="overturned"><a href="[^"]*audited=overturned[^"]*">1</a>', row)


def test_an_agreeing_audit_counts_as_audited_not_overturned(audited):
    _verdict(audited, "approved")
    [row] = panel_audits(Window())
    assert (row.audits, row.overturned) == (1, 0)
    assert (
        api_with("read:all").get(f"/api/lenses/{_lens_name(audited)}/agreement").json()["agreement"]
        == 1.0
    )
