"""A reviewer chooses when to hear about work, in Chromium (keyboard only, then a phone)."""

import pytest
from playwright.sync_api import expect

from reviewapp.notifications.models import Preference

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_picks_a_digest_with_the_keyboard_and_it_is_kept(open_as, reviewer):
    page = open_as(reviewer, "/settings/notifications")
    expect(page.locator('input[value="immediate"]')).to_be_checked()

    page.locator('input[value="digest"]').focus()
    page.keyboard.press("Space")
    page.fill("#digest-minutes", "30")
    page.keyboard.press("Enter")  # submits the form

    expect(page.locator("body")).to_contain_text("Saved: reviewapp tells you about work")
    expect(page.locator('input[value="digest"]')).to_be_checked()
    expect(page.locator("#digest-minutes")).to_have_value("30")
    assert Preference.objects.get(user=reviewer).digest_minutes == 30
    assert page.errors == []


def test_a_bad_period_is_refused_and_the_choice_is_kept(open_as, reviewer):
    page = open_as(reviewer, "/settings/notifications")
    page.check('input[value="digest"]')
    page.evaluate("document.querySelector('#digest-minutes').removeAttribute('min')")
    page.fill("#digest-minutes", "0")
    page.click("#save-notifications")

    expect(page.locator("#notify-error")).to_contain_text("every 1 to 10080 minutes")
    expect(page.locator('input[value="digest"]')).to_be_checked()
    assert not Preference.objects.exists()
