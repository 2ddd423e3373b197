"""Tap targets on the reviewer desk (WCAG 2.2, 2.5.8): every control at least 24 × 24 px,
and at 390 px the primary actions (claim, approve, reject, sign, marks) at least 44 px high."""

import pytest

from reviewapp.review.models import Escalation, Tag
from reviewapp.review.services.escalations import escalation_claim

from .builders import make_panel, split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1366, "height": 900}}
WIDTHS = {"390": PHONE, "1366": DESKTOP}

# A checkbox or radio is tapped through its label: the label is the target.
CONTROLS = (
    "button, select, textarea, summary, a.button, a.chip, "
    "input:not([type=hidden]):not([type=checkbox]):not([type=radio]), "
    "label:has(> input[type=checkbox]), label:has(> input[type=radio])"
)
PRIMARY = (
    "[data-claim-form] button, #claim-btn, #approve-btn, #reject-btn, #confirm-sign-btn, "
    ".mark-choice"
)

SMALLER_THAN = """([selector, width, height]) => [...document.querySelectorAll(selector)]
    .filter(el => el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden')
    .map(el => {
        const r = el.getBoundingClientRect();
        return {control: el.id || el.className || el.tagName,
                text: el.textContent.trim().slice(0, 40),
                width: Math.round(r.width * 10) / 10, height: Math.round(r.height * 10) / 10};
    })
    .filter(c => c.width < width || c.height < height)"""


@pytest.fixture
def escalations(db):
    panel = make_panel("accuracy", "tone")
    Tag.objects.create(name="hallucination")
    Tag.objects.create(name="tone")
    proposals = [
        split_panel_proposal(panel, content=f"{i}. The sky is blue. Water is wet.", title=str(i))
        for i in range(2)
    ]
    return [Escalation.objects.get(proposal=p) for p in proposals]


def _too_small(page, selector, width, height):
    return page.evaluate(SMALLER_THAN, [selector, width, height])


@pytest.mark.parametrize("width", WIDTHS)
def test_every_inbox_control_is_at_least_24_px_square(open_as, reviewer, escalations, width):
    page = open_as(reviewer, "/", **WIDTHS[width])

    assert page.locator("[data-claim-form] button").count() == 2
    assert _too_small(page, CONTROLS, 24, 24) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_every_desk_control_is_at_least_24_px_square(open_as, reviewer, escalations, width):
    escalation_claim(escalation_id=escalations[0].pk, user=reviewer)
    page = open_as(reviewer, f"/proposals/{escalations[0].proposal_id}", **WIDTHS[width])
    page.fill("#rationale", "Checked.")
    page.click("#approve-btn")  # shows the confirm button too

    assert page.locator("#confirm-sign-btn").is_visible()
    assert _too_small(page, CONTROLS, 24, 24) == []


def test_at_390_px_the_inbox_claim_is_at_least_44_px_high(open_as, reviewer, escalations):
    page = open_as(reviewer, "/", **PHONE)

    assert page.locator("[data-claim-form] button").count() == 2
    assert _too_small(page, PRIMARY, 0, 44) == []


def test_at_390_px_claim_approve_reject_sign_and_marks_are_at_least_44_px_high(
    open_as, reviewer, escalations
):
    page = open_as(reviewer, f"/proposals/{escalations[0].proposal_id}", **PHONE)
    assert _too_small(page, "#claim-btn", 0, 44) == []
    page.click("#claim-btn")
    page.wait_for_selector("#approve-btn")
    page.fill("#rationale", "Checked.")
    page.click("#reject-btn")

    assert page.locator(".mark-choice").count() == 6
    assert _too_small(page, PRIMARY, 0, 44) == []
