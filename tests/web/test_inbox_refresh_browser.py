"""The inbox refreshes itself under the reader: it never moves them."""

import pytest

from reviewapp.review.models import Escalation

from .builders import split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COUNT_SWAPS = """() => {
    window.inboxSwaps = 0;
    document.body.addEventListener('htmx:afterSettle', e => {
        if (e.detail.elt && e.detail.elt.id === 'inbox-results') window.inboxSwaps += 1;
    });
}"""

READER = """() => ({
    scrollY: window.scrollY,
    selected: [...document.querySelectorAll('tr.is-selected')].map(r => r.dataset.id),
    focus: document.activeElement.id,
})"""


def test_a_refresh_keeps_the_scroll_position_the_selection_and_the_focus(
    open_as, reviewer, panel, fast_polls
):
    for i in range(20):
        split_panel_proposal(
            panel, content=f"{i}. The sky is blue. Water is wet.", title=f"Item {i}"
        )
    newest = list(Escalation.objects.order_by("-created_at", "-id").values_list("pk", flat=True))
    page = open_as(reviewer, "/", viewport={"width": 1280, "height": 500})
    page.wait_for_function("() => window.htmx !== undefined")
    for _ in range(3):
        page.keyboard.press("j")
    page.mouse.wheel(0, 250)
    page.wait_for_function("() => window.scrollY > 0")
    before = page.evaluate(READER)
    assert before["selected"] == [str(newest[2])]
    assert before["focus"] == f"row-link-{newest[2]}"
    page.evaluate(COUNT_SWAPS)
    page.wait_for_function("() => window.inboxSwaps >= 2", timeout=15_000)
    assert page.evaluate(READER) == before
    assert page.errors == []
