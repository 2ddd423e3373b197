"""The desk on a phone (390 px, touch): filters that hold together, highlights that answer a tap."""

import pytest
from playwright.sync_api import expect

from .builders import judgement, make_panel, run_panel, split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "has_touch": True,
    "is_mobile": True,
    "device_scale_factor": 2,
}

LABELS_BESIDE_CONTROLS = """() => [
  ...document.querySelectorAll('form.filters label[for]')].map(label => {
    const control = document.getElementById(label.htmlFor);
    const l = label.getBoundingClientRect(), c = control.getBoundingClientRect();
    const middle = l.top + l.height / 2;
    return {
        label: label.textContent.trim(),
        sameRow: middle >= c.top && middle <= c.bottom,
        before: l.right <= c.left + 1,
        onScreen: c.left >= 0 && c.right <= window.innerWidth,
    };
})"""


@pytest.mark.parametrize("path", ["/", "/proposals", "/decisions", "/dashboard"])
def test_at_390px_each_filter_label_stays_beside_its_control(open_as, reviewer, panel, path):
    split_panel_proposal(panel, title="One")
    page = open_as(reviewer, path, **PHONE)
    fields = page.evaluate(LABELS_BESIDE_CONTROLS)
    assert len(fields) >= 2
    for field in fields:
        assert field["sameRow"] and field["before"] and field["onScreen"], field


CONTENT = "Intro line.\n" + "Filler sentence for scrolling.\n" * 12 + "The shared claim sits here."


@pytest.fixture
def cited(db):
    panel = make_panel("acc", "tone")
    return run_panel(
        panel,
        CONTENT,
        {
            "acc": judgement("pass", "The shared claim sits here."),
            "tone": judgement(
                "fail", {"cite": "The shared claim", "assessment": "contested", "note": "Vague."}
            ),
        },
        title="Cited",
    )


def _point_in(page, text: str) -> tuple[float, float]:
    offset = CONTENT.index(text) + 2
    return page.evaluate(
        """i => {
            const node = document.getElementById('answer-body').firstChild;
            const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
            r.startContainer.parentElement.scrollIntoView({block: 'nearest'});
            const b = r.getBoundingClientRect();
            return [b.left + b.width / 2, b.top + b.height / 2];
        }""",
        offset,
    )


def test_tapping_a_highlight_shows_the_hover_information_in_place(open_as, reviewer, cited):
    page = open_as(reviewer, f"/proposals/{cited.pk}", **PHONE)
    page.wait_for_selector("#answer-body[data-highlights='painted']", state="attached")
    page.locator("#answer-body").evaluate("el => el.scrollTop = el.scrollHeight")
    x, y = _point_in(page, "The shared claim")
    before = page.evaluate(
        "() => [window.scrollY, document.getElementById('answer-body').scrollTop]"
    )
    page.touchscreen.tap(x, y)
    tooltip = page.locator("#hl-tooltip")
    expect(tooltip).to_be_visible()
    text = tooltip.inner_text()
    assert "Cited by 2 lenses: acc, tone" in text and "contested" in text and "Vague." in text
    # In place: nothing scrolled, and the tooltip is on screen by the tapped words.
    after = page.evaluate(
        "() => [window.scrollY, document.getElementById('answer-body').scrollTop]"
    )
    assert after == before
    box = tooltip.bounding_box()
    assert 0 <= box["x"] and box["x"] + box["width"] <= 390
    assert 0 <= box["y"] and box["y"] + box["height"] <= 844
    assert abs(box["y"] - y) < 200
    # A tap on plain text puts it away.
    x, y = _point_in(page, "Intro line")
    page.touchscreen.tap(x, y)
    expect(tooltip).to_be_hidden()
    assert page.errors == []
