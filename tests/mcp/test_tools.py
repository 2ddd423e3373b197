"""What the MCP tools read (reviewapp/mcp/tools.py), called directly."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.mcp import tools
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
    client, _ = api_client("submit", "read")
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
        with CaptureQueriesContext(connection) as captured:
            assert len(tools.final_reviews([p.pk for p in batch])) == len(batch)
        return len(captured)

    queries(proposals)  # anything read once per process is read by now
    assert queries(proposals) == queries(proposals[:2])
