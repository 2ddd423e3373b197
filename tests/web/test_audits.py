"""Audits in the desk: the card, the disputed flag, the inbox and the dashboard."""

import random

import pytest
from django.urls import reverse

from reviewapp.review.models import Decision, DecisionAudit, Escalation
from reviewapp.review.services import audits
from reviewapp.review.services.escalations import escalation_claim
from tests.api.conftest import api_with
from tests.webhooks.helpers import one_lens_panel, run_pipeline

from .builders import split_panel_proposal

CONTENT = "The refund is issued within 14 days."


@pytest.fixture
def audit(db, monkeypatch) -> Escalation:
    from reviewapp.review.services.proposals import proposal_submit

    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    panel = one_lens_panel(CONTENT, audit_rate=100)
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT)
    run_pipeline(proposal)
    return Escalation.objects.get(proposal=proposal)


def _decide(client, escalation, outcome):
    escalation_claim(escalation_id=escalation.pk, user=client.user)
    return client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        {"outcome": outcome, "rationale": "Checked it."},
    )


@pytest.fixture
def desk(reviewer_client, reviewer):
    reviewer_client.user = reviewer
    return reviewer_client


def test_the_audit_card_says_the_machine_decision_stands(desk, audit):
    page = desk.get(reverse("proposal_detail", args=[audit.proposal_id])).content.decode()

    assert 'id="audit-note"' in page
    assert "the system <strong>approved</strong> this proposal" in page
    assert 'id="decide-form"' in page


def test_a_disagreeing_verdict_flags_the_proposal_as_disputed(desk, audit):
    response = _decide(desk, audit, "rejected")

    assert response.status_code == 302
    assert DecisionAudit.objects.get().agrees is False
    assert Decision.objects.get().outcome == "approved"
    page = desk.get(reverse("proposal_detail", args=[audit.proposal_id])).content.decode()
    assert 'id="disputed-flag"' in page
    assert "Disputed:" in page


def test_an_agreeing_verdict_is_shown_without_a_flag(desk, audit):
    _decide(desk, audit, "approved")

    page = desk.get(reverse("proposal_detail", args=[audit.proposal_id])).content.decode()
    assert "Audited:" in page
    assert 'id="disputed-flag"' not in page


def test_audits_are_listed_apart_below_the_default_inbox(desk, audit):
    escalated = split_panel_proposal()

    response = desk.get(reverse("inbox"))

    listed = [e.pk for e in response.context["page"].object_list]
    assert listed == [Escalation.objects.get(proposal=escalated).pk]
    assert [e.pk for e in response.context["audits"]] == [audit.pk]
    page = response.content.decode()
    assert page.index('id="inbox-audits"') > page.index("inbox-table")


def test_the_audit_filter_lists_only_audits(desk, audit):
    split_panel_proposal()

    response = desk.get(reverse("inbox"), {"reason": "audit"})

    assert [e.pk for e in response.context["page"].object_list] == [audit.pk]


def test_the_dashboard_counts_and_links_disputed_decisions(desk, audit):
    _decide(desk, audit, "rejected")

    response = desk.get(reverse("dashboard"))

    assert (response.context["audits"]["done"], response.context["audits"]["disputed"]) == (1, 1)
    assert reverse("proposal_detail", args=[audit.proposal_id]) in response.content.decode()


def test_the_api_refuses_to_decide_an_audit_and_says_why(audit):
    api = api_with("review", "read:all", "read")

    response = api.post(
        f"/api/escalations/{audit.pk}/decision", {"outcome": "rejected", "rationale": "No."}
    )

    assert response.status_code == 409
    assert f"/api/escalations/{audit.pk}/audit" in response.json()["detail"]
    assert Decision.objects.count() == 1


def test_the_api_signs_an_audit_verdict(audit):
    api = api_with("review", "read:all", "read")

    response = api.post(
        f"/api/escalations/{audit.pk}/audit", {"outcome": "rejected", "rationale": "No."}
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["outcome"], body["agrees"]) == ("rejected", False)
    assert body["decision"] == Decision.objects.get().pk
    assert body["payload"] == DecisionAudit.objects.get().payload


def test_the_api_audit_route_refuses_an_ordinary_escalation(db):
    escalation = Escalation.objects.get(proposal=split_panel_proposal())
    api = api_with("review", "read:all", "read")

    response = api.post(
        f"/api/escalations/{escalation.pk}/audit", {"outcome": "approved", "rationale": "Ok."}
    )

    assert response.status_code == 409
    assert "not an audit" in response.json()["detail"]


def test_a_second_api_verdict_on_an_audit_is_409(audit):
    api = api_with("review", "read:all", "read")
    body = {"outcome": "approved", "rationale": "Fine."}
    api.post(f"/api/escalations/{audit.pk}/audit", body)

    assert api.post(f"/api/escalations/{audit.pk}/audit", body).status_code == 409
