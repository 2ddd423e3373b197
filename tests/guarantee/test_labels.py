"""Reviewers' decisions on held proposals and audit verdicts become labels, in their
transactions, through review's events."""

import pytest
from django.db import transaction

from reviewapp.guarantee.models import PanelGuarantee, PatternEvidence
from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.escalations import escalation_decide
from tests.review.helpers import evaluate_in_process, submit

from .builders import CONTENT, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db


def decide(proposal: Proposal, outcome: str) -> None:
    escalation = proposal.escalations.exclude(status=Escalation.Status.RESOLVED).get()
    escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Checked by hand.",
        decided_by_name="reviewer",
    )


def counts(panel, pattern=UNANIMOUS) -> tuple[int, int, int]:
    row = PatternEvidence.objects.filter(panel=panel, pattern=pattern).first()
    return (row.labels, row.agreed, row.audited) if row else (0, 0, 0)


def test_a_reviewer_agreeing_with_the_would_be_outcome_is_an_agreeing_label():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    decide(evaluate_in_process(submit(panel, CONTENT)), "approved")
    assert counts(panel) == (1, 1, 0)


def test_a_reviewer_overturning_the_would_be_outcome_is_a_disagreeing_label():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    decide(evaluate_in_process(submit(panel, CONTENT)), "rejected")
    assert counts(panel) == (1, 0, 0)


def test_a_decision_on_an_escalation_for_another_reason_is_no_label():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"], requires_sign_off=True))
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.escalations.get().reasons == ["sign_off"]
    decide(proposal, "approved")
    assert not PatternEvidence.objects.exists()


def test_an_audit_verdict_on_a_trusted_pattern_is_a_label_from_an_audit():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"], audit_rate=100))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.decision.basis == "system"
    audit = proposal.escalations.get()
    assert audit.reasons == ["audit"] and audit.detail["guarantee"]["pattern"] == UNANIMOUS
    decide(proposal, "rejected")
    assert counts(panel) == (201, 200, 1)


def test_without_a_guarantee_audits_still_gather_evidence_for_one():
    panel = voting_panel(["pass", "pass", "pass"], audit_rate=100)
    decide(evaluate_in_process(submit(panel, CONTENT)), "approved")
    assert counts(panel) == (1, 1, 1)
    assert PanelGuarantee.objects.get(panel=panel).target is None  # made, and off


def test_a_label_rolls_back_with_its_decision():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    proposal = evaluate_in_process(submit(panel, CONTENT))
    with pytest.raises(RuntimeError), transaction.atomic():
        decide(proposal, "approved")
        assert counts(panel) == (1, 1, 0)
        raise RuntimeError("the decision's transaction fails after the label")
    assert counts(panel) == (0, 0, 0)


def test_reviewers_agreeing_earns_the_pattern_trust_and_the_machine_then_decides():
    """The loop closed through real decisions; a loose guarantee keeps it to four labels."""
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]), target=0.5, confidence=0.5)
    for _ in range(4):
        decide(evaluate_in_process(submit(panel, CONTENT)), "approved")
    assert PatternEvidence.objects.get(panel=panel, pattern=UNANIMOUS).trusted
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.DECIDED and proposal.decision.basis == "system"
