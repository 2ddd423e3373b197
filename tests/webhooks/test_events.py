"""Outbox rows are written with the events they report, for the clients that may see them."""

import json

import pytest
from django.db import transaction

from reviewapp.review.models import CheckerConfig, Escalation, Lens, Proposal
from reviewapp.review.services.escalations import (
    escalation_claim,
    escalation_release,
    escalation_review,
)
from reviewapp.review.services.proposals import proposal_submit
from reviewapp.webhooks.models import Delivery
from tests.factories import CheckerFactory, LensFactory, PanelFactory, ReviewerFactory

from .helpers import api_client, one_lens_panel, run_pipeline, submitted_and_decided, subscribe

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hook"  # never called here: these tests only read the outbox


def bodies(endpoint) -> list[dict]:
    return [json.loads(d.body) for d in Delivery.objects.filter(endpoint=endpoint).order_by("id")]


def test_a_system_decision_writes_one_delivery_with_the_signed_decision():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["proposal.decided"])
    proposal = submitted_and_decided(client)
    [body] = bodies(endpoint)
    assert body["type"] == "proposal.decided"
    decision = proposal.decision
    assert body["data"]["decision"]["payload"] == decision.payload
    assert body["data"]["decision"]["signature"] == decision.signature
    assert body["data"]["decision"]["key_id"] == decision.key_id
    # Written with the decision, before the ledger's sequencer gives it its index.
    assert body["data"]["decision"]["ledger_index"] is None
    assert body["data"]["proposal"] == {
        "id": proposal.pk,
        "status": "decided",
        "url": f"/api/proposals/{proposal.pk}",
        "external_ref": proposal.external_ref,
    }
    assert set(body) == {"type", "timestamp", "data"}


def test_a_decision_rolled_back_leaves_no_delivery():
    client, _ = api_client()
    subscribe(client, URL, ["proposal.decided"])
    with pytest.raises(RuntimeError), transaction.atomic():
        submitted_and_decided(client)
        assert Delivery.objects.count() == 1
        raise RuntimeError("the decision's transaction fails after the outbox write")
    assert Delivery.objects.count() == 0


def test_an_escalation_names_every_reason():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["proposal.escalated", "proposal.decided"])
    proposal = submitted_and_decided(client, requires_sign_off=True)
    assert proposal.status == Proposal.Status.ESCALATED
    [body] = bodies(endpoint)
    assert body["type"] == "proposal.escalated"
    assert body["data"]["escalation"]["reasons"] == ["sign_off"]
    assert body["data"]["escalation"]["explanation"]


def test_an_escalation_for_a_failed_lens_and_an_inconclusive_checker_says_why():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["proposal.escalated"])
    checker = CheckerFactory(
        kind=CheckerConfig.Kind.JSON_SCHEMA,
        settings={"schema": {"$ref": "https://schemas.invalid/total.json"}},
    )
    panel = PanelFactory(lenses=[LensFactory(name="silent")], checkers=[checker])
    proposal, _ = proposal_submit(panel_name=panel.name, content='{"total": 3}', client=client)
    run_pipeline(proposal)

    [body] = bodies(endpoint)
    escalation = body["data"]["escalation"]
    assert {"lens_failed", "inconclusive"} <= set(escalation["reasons"])
    [failure] = escalation["lens_failures"]
    assert (failure["lens"], failure["kind"]) == ("silent", "misconfigured")
    assert failure["message"] and failure["at"]
    [inconclusive] = escalation["inconclusive_checkers"]
    assert inconclusive["checker"] == checker.name
    assert "schemas.invalid" in inconclusive["reason"]
    assert "lens silent (misconfigured)" in escalation["explanation"]


def test_a_final_step_that_keeps_failing_is_announced_as_escalated():
    from reviewapp.review.services.final_step import proposal_escalate_final_step

    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["proposal.escalated"])
    panel = one_lens_panel("Never finalized.")
    proposal, _ = proposal_submit(panel_name=panel.name, content="Never finalized.", client=client)
    proposal_escalate_final_step(proposal_id=proposal.pk, attempts=3)
    [body] = bodies(endpoint)
    assert body["data"]["escalation"]["reasons"] == ["final_step_failed"]
    assert "did not finish after 3 attempts" in body["data"]["escalation"]["explanation"]
    assert body["data"]["escalation"]["lens_failures"] == []
    assert body["data"]["proposal"]["status"] == "escalated"


def test_claim_and_release_are_announced():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["escalation.claimed", "escalation.released"])
    proposal = submitted_and_decided(client, requires_sign_off=True)
    escalation = Escalation.objects.get(proposal=proposal)
    reviewer = ReviewerFactory(username="rhea")
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    escalation_release(escalation_id=escalation.pk, user=reviewer)
    claimed, released = bodies(endpoint)
    assert claimed["type"] == "escalation.claimed"
    assert claimed["data"]["escalation"]["claimed_by"] == "rhea"
    assert released["type"] == "escalation.released"
    assert released["data"]["escalation"]["status"] == "open"


def test_a_reviewers_decision_is_announced_as_decided():
    from reviewapp.review.services.escalations import escalation_decide

    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["proposal.decided"])
    proposal = submitted_and_decided(client, requires_sign_off=True)
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Checked by hand.",
        user=ReviewerFactory(username="rhea"),
        decided_by_name="rhea",
    )
    [body] = bodies(endpoint)
    assert body["data"]["proposal"]["status"] == "decided"
    assert body["data"]["decision"]["basis"] == "reviewer"
    assert body["data"]["decision"]["decided_by"] == "rhea"


def test_a_release_by_someone_not_holding_the_claim_announces_nothing():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["escalation.released"])
    proposal = submitted_and_decided(client, requires_sign_off=True)
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_claim(escalation_id=escalation.pk, user=ReviewerFactory(username="rhea"))
    escalation_release(escalation_id=escalation.pk, user=ReviewerFactory(username="sol"))
    assert bodies(endpoint) == []


def test_only_subscribed_events_are_delivered():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["proposal.escalated"])
    submitted_and_decided(client)
    assert bodies(endpoint) == []


def test_a_client_never_receives_another_clients_events():
    mine, _ = api_client()
    theirs, _ = api_client()
    auditor, _ = api_client("read", "read:all")
    my_endpoint, _ = subscribe(mine, URL)
    their_endpoint, _ = subscribe(theirs, URL)
    auditor_endpoint, _ = subscribe(auditor, URL)
    proposal = submitted_and_decided(mine)
    assert [b["data"]["proposal"]["id"] for b in bodies(my_endpoint)] == [proposal.pk]
    assert bodies(their_endpoint) == []
    # read:all lifts the rule, but the submitter's own reference stays the submitter's.
    [seen] = bodies(auditor_endpoint)
    assert "external_ref" not in seen["data"]["proposal"]


def test_a_client_bound_to_judge_a_proposal_hears_its_outcome_and_no_other_does():
    from reviewapp.review.evaluation.tasks import finalize_proposal

    submitter, _ = api_client()
    judge, _ = api_client("judge")
    bystander, _ = api_client("judge")
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(judge)
    panel = PanelFactory(lenses=[outside], need=1)
    judge_endpoint, _ = subscribe(judge, URL, ["proposal.escalated"])
    bystander_endpoint, _ = subscribe(bystander, URL, ["proposal.escalated"])
    proposal, _ = proposal_submit(panel_name=panel.name, content="Judge me.", client=submitter)
    finalize_proposal(proposal.pk, deadline_passed=True)  # the judge never answered
    [body] = bodies(judge_endpoint)
    assert body["data"]["proposal"]["id"] == proposal.pk
    assert "lens_failed" in body["data"]["escalation"]["reasons"]
    assert bodies(bystander_endpoint) == []


def test_judgement_requested_goes_to_the_clients_bound_to_the_external_lens():
    submitter, _ = api_client()
    judge, _ = api_client("judge")
    bystander, _ = api_client("judge")
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(judge)
    panel = PanelFactory(lenses=[LensFactory(), outside], need=2, external_deadline_seconds=600)
    judge_endpoint, _ = subscribe(judge, URL, ["judgement.requested"])
    bystander_endpoint, _ = subscribe(bystander, URL, ["judgement.requested"])
    proposal, _ = proposal_submit(panel_name=panel.name, content="Judge me.", client=submitter)
    [body] = bodies(judge_endpoint)
    assert body["type"] == "judgement.requested"
    assert body["data"]["lens"]["name"] == "outside"
    assert body["data"]["deadline"] == proposal.external_deadline_at.isoformat()
    assert body["data"]["judge_url"] == f"/api/proposals/{proposal.pk}/judgements"
    assert bodies(bystander_endpoint) == []


def test_a_disabled_endpoint_or_revoked_client_gets_no_new_deliveries():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL)
    endpoint.disabled_at = endpoint.created_at
    endpoint.save()
    submitted_and_decided(client)
    assert bodies(endpoint) == []


def test_a_decision_with_no_endpoint_writes_nothing_and_costs_one_query(
    django_assert_num_queries,
):
    from reviewapp.webhooks.events import webhook_record_decided

    decision = submitted_and_decided(None).decision
    with django_assert_num_queries(1):
        webhook_record_decided(decision=decision)
    assert Delivery.objects.count() == 0


def test_with_no_endpoint_watching_an_outcome_builds_no_payload(monkeypatch):
    # Building one calls reverse(), which would load the whole URLconf into a
    # worker process that serves no URL (about 17 MB each).
    def no_urlconf(*args, **kwargs):
        raise AssertionError("an event payload was built with nobody watching")

    monkeypatch.setattr("reviewapp.webhooks.events.reverse", no_urlconf)
    client, _ = api_client()
    proposal = submitted_and_decided(client)
    assert proposal.decision is not None and not Delivery.objects.exists()


def _review(escalation, username, outcome):
    escalation_review(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale=f"secret-{username}",
        user=ReviewerFactory(username=username),
        decided_by_name=username,
    )


def test_a_review_is_announced_without_who_gave_it_or_what_it_says():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["escalation.review_submitted"])
    proposal = submitted_and_decided(client, requires_sign_off=True, reviews_needed=2)
    escalation = Escalation.objects.get(proposal=proposal)

    _review(escalation, "ann", "approved")

    [body] = bodies(endpoint)
    assert body["type"] == "escalation.review_submitted"
    assert body["data"]["escalation"]["reviews"] == {"submitted": 1, "needed": 2}
    assert "ann" not in json.dumps(body) and "approved" not in json.dumps(body)


def test_disagreeing_reviews_are_announced_as_reconcile():
    client, _ = api_client()
    endpoint, _ = subscribe(client, URL, ["escalation.reconcile"])
    proposal = submitted_and_decided(client, requires_sign_off=True, reviews_needed=2)
    escalation = Escalation.objects.get(proposal=proposal)

    _review(escalation, "ann", "approved")
    _review(escalation, "ben", "rejected")

    [body] = bodies(endpoint)
    assert body["type"] == "escalation.reconcile"
    assert body["data"]["escalation"]["status"] == "reconcile"
    assert "reviewers_disagree" in body["data"]["escalation"]["reasons"]


def test_review_events_go_only_to_clients_that_may_see_the_proposal():
    owner, _ = api_client()
    stranger, _ = api_client()
    endpoint, _ = subscribe(stranger, URL, ["escalation.review_submitted"])
    proposal = submitted_and_decided(owner, requires_sign_off=True, reviews_needed=2)

    _review(Escalation.objects.get(proposal=proposal), "ann", "approved")

    assert bodies(endpoint) == []
