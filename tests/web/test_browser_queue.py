"""The queue a reviewer works, in Chromium: filters, search, staff take-over, guidelines."""

import pytest
from playwright.sync_api import expect

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import Escalation, Lens
from reviewapp.review.services.escalations import escalation_claim
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


def test_search_sort_and_mine_from_the_inbox_form(open_as, reviewer, second_reviewer, panel):
    old = Escalation.objects.get(
        proposal=split_panel_proposal(panel, title="Old", content="Refund to Rotterdam. Sky.")
    )
    new = Escalation.objects.get(
        proposal=split_panel_proposal(panel, title="New", content="Water is wet. Rotterdam.")
    )
    other = Escalation.objects.get(proposal=split_panel_proposal(panel, title="Other"))
    escalation_claim(escalation_id=new.pk, user=reviewer)
    escalation_claim(escalation_id=other.pk, user=second_reviewer)

    page = open_as(reviewer, "/")
    expect(page.locator("#reason-overlap")).to_contain_text("several reasons")
    page.fill("#inbox-q", "rotterdam")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**q=rotterdam**")
    assert _row_ids(page) == [new.pk, old.pk]
    page.select_option("#inbox-sort", "oldest")  # submits itself
    page.wait_for_url("**sort=oldest**")
    assert _row_ids(page) == [old.pk, new.pk]
    page.check("input[name=mine]")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**mine=1**")
    assert _row_ids(page) == [new.pk]
    assert page.errors == []


def test_staff_take_over_a_held_claim_from_the_proposal_page(open_as, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    chief = ReviewerFactory(username="chief", is_staff=True)
    page = open_as(chief, f"/proposals/{escalation.proposal_id}")
    expect(page.locator(".staff-claim")).to_contain_text("Held by sam")
    page.fill("#reassign-note", "sam is on leave")
    page.click("[data-reassign]")
    expect(page.locator("body")).to_contain_text("The claim is now held by you")
    escalation.refresh_from_db()
    assert escalation.claimed_by == chief
    entry = AuditEntry.objects.get(action="reassign")
    assert entry.note == "sam is on leave" and entry.changes["claimed_by"]["old"] == "sam"


def test_a_reviewer_reads_what_each_lens_was_told(open_as, reviewer, escalation):
    Lens.objects.filter(name="accuracy").update(instructions="Check each figure.")
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    guideline = page.locator("[data-guideline='accuracy']")
    expect(guideline.locator(".guideline-text")).to_be_hidden()  # collapsed until asked
    guideline.locator("summary").click()
    expect(guideline.locator(".guideline-text")).to_have_text("Check each figure.")
    assert page.locator("[data-reassign]").count() == 0  # not staff
