import re

import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.escalations import escalation_claim, escalation_decide
from reviewapp.review.services.proposals import proposal_submit

from .builders import judgement, make_panel, run_panel, split_panel_proposal

pytestmark = pytest.mark.django_db


def _row_ids(response) -> list[int]:
    return [int(i) for i in re.findall(rb'data-row data-id="(\d+)"', response.content)]


def _decide(proposal, user, outcome="approved"):
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_claim(escalation_id=escalation.pk, user=user)
    return escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Checked.",
        user=user,
        decided_by_name=user.username,
    )


def test_proposals_list_newest_first(reviewer_client, panel):
    first = split_panel_proposal(panel, content="one. The sky is blue. Water is wet.")
    second = split_panel_proposal(panel, content="two. The sky is blue. Water is wet.")
    assert _row_ids(reviewer_client.get(reverse("proposal_list"))) == [second.pk, first.pk]


def test_proposals_filter_by_status(reviewer_client, panel):
    escalated = split_panel_proposal(panel)
    queued, _ = proposal_submit(panel_name=panel.name, content="Still queued.")
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"status": "queued"})) == [
        queued.pk
    ]
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"status": "escalated"})) == [
        escalated.pk
    ]


def test_proposals_filter_by_panel(reviewer_client, panel):
    mine = split_panel_proposal(panel)
    other_panel = make_panel("solo-lens", need=1)
    other = run_panel(other_panel, "Fine.", {"solo-lens": judgement("pass")})
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"panel": other_panel.pk})) == [
        other.pk
    ]
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"panel": panel.pk})) == [mine.pk]


def test_proposals_search_by_title(reviewer_client, panel):
    wanted = split_panel_proposal(
        panel, content="a. The sky is blue. Water is wet.", title="Refund policy"
    )
    split_panel_proposal(panel, content="b. The sky is blue. Water is wet.", title="Shipping")
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"q": "refund"})) == [wanted.pk]


def test_proposals_search_covers_the_content(reviewer_client, panel):
    wanted = split_panel_proposal(
        panel, content="Refunds are paid within 14 days. The sky is blue.", title="Untitled"
    )
    split_panel_proposal(panel, content="b. The sky is blue. Water is wet.", title="Shipping")
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"q": "refunds"})) == [
        wanted.pk
    ]


def test_proposals_search_by_external_reference(reviewer_client, panel):
    wanted = split_panel_proposal(
        panel, content="a. The sky is blue. Water is wet.", external_ref="TICKET-981"
    )
    split_panel_proposal(
        panel, content="b. The sky is blue. Water is wet.", external_ref="TICKET-123"
    )
    assert _row_ids(reviewer_client.get(reverse("proposal_list"), {"q": "ticket-98"})) == [
        wanted.pk
    ]


def test_proposals_list_shows_the_decision(reviewer_client, reviewer, escalated):
    _decide(escalated, reviewer, "rejected")
    body = reviewer_client.get(reverse("proposal_list")).content.decode()
    assert '<span class="outcome outcome--rejected">rejected</span>' in body


def test_decisions_log_shows_basis_and_signer(reviewer_client, reviewer, escalated):
    decision = _decide(escalated, reviewer)
    system = run_panel(make_panel("auto", need=1), "Automatic.", {"auto": judgement("pass")})
    assert system.status == Proposal.Status.DECIDED
    response = reviewer_client.get(reverse("decision_list"))
    body = response.content.decode()
    assert _row_ids(response) == [system.decision.pk, decision.pk]
    assert "<td>reviewer</td>" in body and "<td>rita</td>" in body
    assert "<td>system</td>" in body
    assert decision.key_id in body


def test_decisions_log_shows_each_rationale_cut_to_a_line(reviewer_client, reviewer, escalated):
    escalation = Escalation.objects.get(proposal=escalated)
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    long = "Checked every figure against the source; " * 10
    escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale=long,
        user=reviewer,
        decided_by_name=reviewer.username,
    )

    body = reviewer_client.get(reverse("decision_list")).content.decode()

    assert '<th scope="col">Rationale</th>' in body
    cell = re.search(r'data-col="rationale"[^>]*>(.*?)</td>', body, re.S).group(1)
    assert cell.startswith("Checked every figure against the source;") and cell.endswith("…")
    assert len(cell) == 160
    assert f'title="{long}"' in body  # the whole of it on hover


def test_decisions_log_filters_by_basis(reviewer_client, reviewer, escalated):
    decision = _decide(escalated, reviewer)
    run_panel(make_panel("auto", need=1), "Automatic.", {"auto": judgement("pass")})
    assert _row_ids(reviewer_client.get(reverse("decision_list"), {"basis": "reviewer"})) == [
        decision.pk
    ]


def _many_decided(panel, reviewer, n):
    for i in range(n):
        proposal = split_panel_proposal(
            panel, content=f"{i}. The sky is blue. Water is wet.", title=f"P{i}"
        )
        _decide(proposal, reviewer)


@pytest.mark.parametrize("rows", [3, 30])
def test_proposal_list_query_count_is_constant(
    reviewer_client, reviewer, panel, django_assert_num_queries, rows
):
    _many_decided(panel, reviewer, rows)
    # session, user, group check, count, rows (panel and decision joined), panels
    with django_assert_num_queries(6):
        response = reviewer_client.get(reverse("proposal_list"))
    assert len(_row_ids(response)) == rows


@pytest.mark.parametrize("rows", [3, 30])
def test_decision_log_query_count_is_constant(
    reviewer_client, reviewer, panel, django_assert_num_queries, rows
):
    _many_decided(panel, reviewer, rows)
    # session, user, group check, count, rows (proposal joined)
    with django_assert_num_queries(5):
        response = reviewer_client.get(reverse("decision_list"))
    assert len(_row_ids(response)) == rows


@pytest.mark.parametrize("rows", [3, 30])
def test_proposal_list_from_the_dashboard_keeps_a_constant_query_count(
    reviewer_client, reviewer, panel, django_assert_num_queries, rows
):
    _many_decided(panel, reviewer, rows)
    lens = panel.ordered_lenses()[0]
    today = timezone.localdate().isoformat()
    params = {"set": "sent_to_human", "start": today, "end": today, "lens": lens.pk}
    # As above, plus the lens's name for the line saying what the list shows.
    with django_assert_num_queries(7):
        response = reviewer_client.get(reverse("proposal_list"), params)
    assert len(_row_ids(response)) == rows


@pytest.mark.parametrize("rows", [3, 30])
def test_decision_log_from_the_dashboard_keeps_a_constant_query_count(
    reviewer_client, reviewer, panel, django_assert_num_queries, rows
):
    _many_decided(panel, reviewer, rows)
    today = timezone.localdate().isoformat()
    params = {"basis": "reviewer", "panel": panel.pk, "start": today, "end": today}
    with django_assert_num_queries(5):
        response = reviewer_client.get(reverse("decision_list"), params)
    assert len(_row_ids(response)) == rows
    assert "From the dashboard: decisions on the proposals in its panel and dates" in (
        response.content.decode()
    )
