"""Assigning an escalation and the "assigned to me" filter, in Chromium."""

import pytest
from playwright.sync_api import expect

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import Escalation
from tests.factories import ReviewerFactory

from .builders import split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _row_ids(page) -> list[int]:
    return [
        int(i)
        for i in page.locator("[data-inbox] [data-row]").evaluate_all(
            "rows => rows.map(r => r.dataset.id)"
        )
    ]


def test_staff_assign_from_the_proposal_page_and_the_assignee_filters_the_inbox_to_it(
    open_as, reviewer, panel
):
    assigned = Escalation.objects.get(
        proposal=split_panel_proposal(panel, title="For rita", content="Rita's. Sky.")
    )
    split_panel_proposal(panel, title="Someone else's")
    chief = ReviewerFactory(username="chief", is_staff=True)

    staff_page = open_as(chief, f"/proposals/{assigned.proposal_id}")
    expect(staff_page.locator(".staff-assign")).to_contain_text("Not assigned.")
    staff_page.fill("#assign-user", "rita")
    staff_page.click("[data-assign]")
    expect(staff_page.locator("body")).to_contain_text("Assigned to rita (recorded in the audit")
    expect(staff_page.locator("[data-assigned]")).to_contain_text("Assigned to rita.")
    assert AuditEntry.objects.get(action="assign").actor == chief
    assert staff_page.errors == []

    page = open_as(reviewer, "/")
    assert len(_row_ids(page)) == 2
    page.select_option("#inbox-assigned", "me")  # submits itself
    page.wait_for_url("**assigned=me**")
    assert _row_ids(page) == [assigned.pk]
    expect(page.locator("[data-assignee]")).to_have_text("assigned to you")
    assert page.locator("[data-assign]").count() == 0
    assert page.errors == []
