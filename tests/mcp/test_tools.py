"""What the MCP tools read (reviewapp/mcp/tools.py), called directly."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.mcp import tools
from reviewapp.review.models import ApiClient
from reviewapp.review.services.proposals import proposal_submit
from tests.webhooks.helpers import api_client, one_lens_panel, run_pipeline

pytestmark = pytest.mark.django_db

CONTENT = "Refunds are issued within 14 days."


def test_the_watch_reads_each_final_review_as_get_review_has_it_and_skips_the_rest():
    client, _ = api_client("submit", "read")
    panel = one_lens_panel(CONTENT)
    decided, _ = proposal_submit(panel_name=panel.name, content=CONTENT, client=client)
    run_pipeline(decided)
    waiting, _ = proposal_submit(
        panel_name=panel.name, content=CONTENT, client=client, external_ref="still-queued"
    )

    assert tools.final_among([decided.pk, waiting.pk]) == [decided.pk]
    found = tools.final_reviews([decided.pk, waiting.pk])

    assert found == {decided.pk: tools.review_detail(client_id=client.pk, proposal_id=decided.pk)}
    assert found[decided.pk]["status"] == "decided" and found[decided.pk]["final"]


def test_the_watch_reads_any_number_of_woken_reviews_in_the_same_number_of_queries():
    from reviewapp.mcp.watch import _read_woken

    client, _ = api_client("submit", "read")
    # Waiting beside the submitter: a client that sees everything, and one the proposals
    # are not visible to, so every check of the woken calls is made.
    everything, _ = api_client("read:all")
    stranger, _ = api_client("read")
    panels = [one_lens_panel(CONTENT), one_lens_panel(CONTENT, requires_sign_off=True)]
    proposals = []
    for i in range(6):
        proposal, _ = proposal_submit(
            panel_name=panels[i % 2].name, content=CONTENT, client=client, external_ref=f"r{i}"
        )
        run_pipeline(proposal)
        proposals.append(proposal)
    assert {p.status for p in proposals} == {"decided", "escalated"}

    def queries(batch):
        waiting = {p.pk: {client.pk, everything.pk, stranger.pk} for p in batch}
        with CaptureQueriesContext(connection) as captured:
            final, refused = _read_woken(waiting, False)
        assert len(final) == len(batch)
        assert set(refused) == {(p.pk, stranger.pk) for p in batch}
        return len(captured)

    queries(proposals)  # anything read once per process is read by now
    assert queries(proposals) == queries(proposals[:2])


@pytest.fixture
def awaited():
    """A final proposal of another client that awaited the external lens "outside", and
    `judge`, a read client that lens names."""
    from reviewapp.review.evaluation.tasks import finalize_proposal
    from reviewapp.review.models import Lens
    from tests.factories import LensFactory, PanelFactory

    submitter, _ = api_client("submit")
    judge, _ = api_client("read", "judge")
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(judge)
    panel = PanelFactory(lenses=[outside], need=1)
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT, client=submitter)
    finalize_proposal(proposal.pk, deadline_passed=True)
    return proposal, judge, outside


def test_a_woken_call_of_a_client_the_awaited_lens_still_names_may_read_its_review(awaited):
    proposal, judge, _ = awaited
    assert tools.woken_refusals({proposal.pk: {judge.pk}}) == {}


def test_a_woken_call_of_a_client_unbound_from_the_awaited_lens_is_not_found(awaited):
    proposal, judge, outside = awaited
    outside.judge_clients.remove(judge)
    [refusal] = tools.woken_refusals({proposal.pk: {judge.pk}}).values()
    assert str(refusal) == str(tools.not_found(proposal.pk))


def test_a_woken_call_of_a_client_that_lost_read_all_is_not_found(awaited):
    proposal, _, _ = awaited
    reader, _ = api_client("read:all")
    ApiClient.objects.filter(pk=reader.pk).update(scopes=["read"])
    [refusal] = tools.woken_refusals({proposal.pk: {reader.pk}}).values()
    assert str(refusal) == str(tools.not_found(proposal.pk))


def test_a_woken_call_of_a_client_that_lost_the_read_scope_is_refused_saying_so(awaited):
    proposal, judge, _ = awaited
    ApiClient.objects.filter(pk=judge.pk).update(scopes=["judge"])
    [refusal] = tools.woken_refusals({proposal.pk: {judge.pk}}).values()
    assert "'read' scope" in str(refusal)
