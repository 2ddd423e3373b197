"""Back to the inbox after it refreshed itself shows the whole page, never the refreshed part."""

import pytest

from .builders import split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}

COUNT_SWAPS = """() => {
    window.inboxSwaps = 0;
    document.body.addEventListener('htmx:afterSettle', e => {
        if (e.detail.elt && e.detail.elt.id === 'inbox-results') window.inboxSwaps += 1;
    });
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_back_after_a_refresh_shows_the_whole_inbox_with_its_shortcuts(
    open_as, reviewer, panel, fast_polls, width
):
    split_panel_proposal(panel, title="First")
    second = split_panel_proposal(panel, content="Another. The sky is blue.", title="Second")
    page = open_as(reviewer, "/", viewport=WIDTHS[width])
    page.wait_for_function("() => window.htmx !== undefined")
    page.evaluate(COUNT_SWAPS)
    page.wait_for_function("() => window.inboxSwaps >= 1")

    page.click(f"a.row-link[href='/proposals/{second.pk}']")
    page.wait_for_url(f"**/proposals/{second.pk}")
    page.go_back()
    page.wait_for_load_state()

    assert page.title().startswith("Inbox")
    assert page.locator("h1").inner_text() == "Escalation inbox"
    # Styled: the stylesheet is loaded, the header laid out.
    assert page.evaluate("document.styleSheets.length") >= 1
    assert page.locator(".site-header").count() == 1
    page.wait_for_function("() => window.htmx !== undefined")
    page.keyboard.press("j")
    assert page.locator("tr.is-selected").count() == 1
    assert page.errors == []
