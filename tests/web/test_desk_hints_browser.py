"""What the desk says when the reviewer cannot go on yet: a lapsed session, no claim."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from reviewapp.review.models import Decision
from reviewapp.review.services.escalations import escalation_claim

from .test_desk_browser import _log_in_again

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DRAFT = "Checked every cite; the failing lens misread it."


def test_after_the_session_expires_the_login_says_so_and_that_the_draft_is_kept(
    open_as, reviewer, escalation
):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.fill("#rationale", DRAFT)
    page.context.clear_cookies(name=settings.SESSION_COOKIE_NAME)
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_url("**/login/**")
    expect(page.locator("#session-expired")).to_be_visible()
    expect(page.locator("#session-expired")).to_contain_text("Your session has expired")
    expect(page.locator("#drafts-kept")).to_contain_text("kept in this browser")
    # And it is true: the draft is back once logged in again.
    _log_in_again(page, reviewer)
    page.wait_for_url(f"**/proposals/{escalation.proposal_id}")
    assert page.input_value("#rationale") == DRAFT
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#decision-signature")
    assert Decision.objects.get().rationale == DRAFT


def test_a_reload_after_the_session_expired_says_so_too(open_as, reviewer, escalation):
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.context.clear_cookies()  # the browser dropped the expired cookie: no hint for the server
    page.reload()
    page.wait_for_url("**/login/**")
    assert "session=expired" not in page.url
    expect(page.locator("#session-expired")).to_be_visible()
    # Nothing was typed, so no draft is claimed to be kept.
    expect(page.locator("#drafts-kept")).to_be_hidden()


def test_after_logging_out_the_login_says_nothing_of_an_expired_session(
    open_as, reviewer, escalation
):
    page = open_as(reviewer, "/")
    page.click("[data-logout] button")
    page.wait_for_url("**/login/**")
    expect(page.locator("#login-title")).to_be_visible()
    expect(page.locator("#session-expired")).to_be_hidden()


@pytest.mark.parametrize("key", ["a", "r"])
def test_a_or_r_before_claiming_says_claim_first(open_as, reviewer, escalation, key):
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    status = page.locator("#desk-status")
    expect(status).to_be_hidden()
    assert status.get_attribute("role") == "status"
    page.keyboard.press(key)
    expect(status).to_be_visible()
    expect(status).to_contain_text("Claim first (c)")
    # c claims, and then the same key chooses.
    page.keyboard.press("c")
    page.wait_for_selector("#approve-btn")
    page.keyboard.press("Escape")
    page.keyboard.press(key)
    expect(page.locator("#chosen-outcome")).to_contain_text("Ctrl+Enter will")
    assert page.evaluate("() => document.activeElement.id") == "rationale"
