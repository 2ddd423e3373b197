"""What the MCP tools read (reviewapp/mcp/tools.py), called directly."""

import pytest

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

    found = tools.final_reviews([decided.pk, waiting.pk])

    assert found == {decided.pk: tools.review_detail(client_id=client.pk, proposal_id=decided.pk)}
    assert found[decided.pk]["status"] == "decided" and found[decided.pk]["final"]
