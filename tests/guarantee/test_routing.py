"""The final step asks the guarantee about every outcome the panel's vote decided alone."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.guarantee.explain import held_explanation
from reviewapp.guarantee.models import PatternDay
from reviewapp.review.automatic import automatic_outcome_asked
from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.clients import api_client_for_token
from tests.api.conftest import Api, make_token
from tests.factories import CheckerFactory
from tests.review.helpers import evaluate_in_process, submit

from .builders import CONTENT, MAJORITY, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db


def test_with_the_guarantee_off_a_reached_pass_is_approved_and_counted_under_its_pattern():
    panel = voting_panel(["pass", "pass", "pass"])
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.decision.outcome == "approved"
    day = PatternDay.objects.get(panel=panel)
    assert (day.pattern, day.automatic, day.held) == (UNANIMOUS, 1, 0)


def test_an_untrusted_pattern_goes_to_a_person_saying_what_the_machine_would_have_done():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.ESCALATED
    escalation = proposal.escalations.get()
    assert escalation.reasons == [Escalation.Reason.BELOW_GUARANTEE]
    held = escalation.detail["guarantee"]
    assert (held["pattern"], held["would_be"], held["labels"]) == (UNANIMOUS, "approved", 0)
    assert held["labels_to_trust"] == 105
    assert escalation.detail["explanation"] == (
        "The panel's vote (3 of 3 pass, no checkers) would have approved it, but the panel's "
        "guarantee does not trust that vote pattern yet, so a reviewer decides."
    )
    day = PatternDay.objects.get(panel=panel)
    assert (day.automatic, day.held) == (0, 1)


def test_a_trusted_pattern_is_decided_by_the_machine():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.decision.outcome == "approved"


def test_a_weaker_pattern_waits_for_the_stronger_one_even_with_its_own_bound_clear():
    panel = guaranteed(voting_panel(["pass", "fail", "pass"]))
    evidence(panel, MAJORITY, labels=400, agreed=400)
    escalation = evaluate_in_process(submit(panel, CONTENT)).escalations.get()
    assert escalation.detail["guarantee"]["waits_on"] == UNANIMOUS
    assert "waits on a stronger pattern (3 of 3 pass, no checkers)" in held_explanation(
        escalation.detail["guarantee"]
    )


def test_a_failing_checker_still_rejects_whatever_the_guarantee():
    checker = CheckerFactory(settings={"pattern": "constant time", "must_match": True})
    panel = guaranteed(voting_panel(["pass", "pass", "pass"], checkers=[checker]))
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.decision.outcome == "rejected"
    assert not PatternDay.objects.exists()


def test_a_split_panel_escalates_for_its_quorum_not_for_the_guarantee():
    panel = guaranteed(voting_panel(["pass", "fail"], need=2))
    escalation = evaluate_in_process(submit(panel, CONTENT)).escalations.get()
    assert escalation.reasons == [Escalation.Reason.NO_QUORUM]
    assert "guarantee" not in escalation.detail


def test_routing_costs_at_most_one_query_more_than_without_the_guarantee():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    evaluate_in_process(submit(panel, CONTENT))  # the chain's first rows, the signing key
    asked = automatic_outcome_asked.receivers[:]
    try:
        automatic_outcome_asked.receivers.clear()
        automatic_outcome_asked.sender_receivers_cache.clear()
        without = _queries_routing(panel)
    finally:
        automatic_outcome_asked.receivers[:] = asked
        automatic_outcome_asked.sender_receivers_cache.clear()
    with_guarantee = _queries_routing(panel)
    assert with_guarantee <= without + 1


def _queries_routing(panel) -> int:
    proposal = submit(panel, CONTENT)
    with CaptureQueriesContext(connection) as queries:
        evaluate_in_process(proposal)
    assert proposal.status == Proposal.Status.DECIDED
    return len(queries.captured_queries)


def test_the_client_is_told_why_without_the_figures_every_client_s_labels_make():
    """The API's and the webhook's explanation is the stored one: no counts of labels."""
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=30, agreed=29)
    token = make_token("submit", "read")
    proposal = evaluate_in_process(submit(panel, CONTENT, client=api_client_for_token(token)))
    escalation = proposal.escalations.get()
    body = Api(token).get(f"/api/escalations/{escalation.pk}").json()
    assert body["reasons"] == ["below_guarantee"]
    assert "would have approved it" in body["explanation"]
    assert "29" not in body["explanation"] and "label" not in body["explanation"]
