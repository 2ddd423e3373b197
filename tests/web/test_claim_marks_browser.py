"""Claim marks, tags and "right for the wrong reason" in the adjudication card, in real Chromium."""

import json

import pytest
from django.conf import settings

from reviewapp.review.models import Claim, ClaimMark, Decision, Escalation, Tag
from reviewapp.review.services.escalations import escalation_claim

from .builders import make_panel, split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def escalation(db):
    proposal = split_panel_proposal(make_panel("accuracy", "tone"))
    Tag.objects.create(name="hallucination")
    Tag.objects.create(name="tone")
    return Escalation.objects.get(proposal=proposal)


def _claimed_page(open_as, reviewer, escalation, **options):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}", **options)
    page.wait_for_selector("#approve-btn")
    return page


def _claim(lens: str) -> Claim:
    return Claim.objects.get(judgement__lens_name=lens)


def test_keys_mark_the_focused_claim_and_move_on(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    first = page.locator(".claim-mark").first

    first.focus()
    page.keyboard.press("2")

    assert first.get_attribute("data-mark") == "incorrect"
    assert first.locator("input[value=incorrect]").is_checked()
    focused = page.evaluate("document.activeElement.dataset.claim")
    assert focused == page.locator(".claim-mark").nth(1).get_attribute("data-claim")
    assert page.locator("#claim-marks-status").inner_text() == "Marked incorrect."


def test_zero_clears_a_mark(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    first = page.locator(".claim-mark").first
    first.focus()
    page.keyboard.press("1")

    first.focus()
    page.keyboard.press("0")

    assert first.get_attribute("data-mark") == ""
    assert first.locator("input:checked").count() == 0


def test_marks_keys_do_not_trigger_the_desk_shortcuts(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    page.locator(".claim-mark").first.focus()

    page.keyboard.press("1")

    assert page.evaluate("document.activeElement.id") != "rationale"
    assert page.errors == []


def test_marks_tags_and_wrong_reason_are_signed_from_the_card(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    rows = page.locator(".claim-mark")
    rows.first.focus()
    page.keyboard.press("1")  # accuracy's claim: correct, focus moves to tone's
    page.keyboard.press("3")  # tone's: irrelevant
    page.locator("#tag-choices").get_by_label("tone").check()
    page.locator("#wrong-reason").get_by_label("accuracy").check()
    page.fill("#rationale", "Accuracy is right; tone's cite is beside the point.")

    page.click("#approve-btn")
    page.click("#confirm-sign-btn")

    page.wait_for_selector("#decision-annotations")
    signed = json.loads(Decision.objects.get().payload)
    assert {(m["lens"], m["mark"]) for m in signed["claims"]} == {
        ("accuracy", "correct"),
        ("tone", "irrelevant"),
    }
    assert (signed["tags"], signed["wrong_reason"]) == (["tone"], ["accuracy"])
    assert ClaimMark.objects.count() == 2
    assert "irrelevant" in page.locator("#decision-annotations").inner_text()


def test_a_refusal_keeps_every_mark_and_tag(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    page.locator(".claim-mark").first.focus()
    page.keyboard.press("2")
    page.locator("#tag-choices").get_by_label("hallucination").check()
    # accuracy passed: "right for the wrong reason" does not fit a rejection.
    page.locator("#wrong-reason").get_by_label("accuracy").check()
    page.fill("#rationale", "Wrong figures.")

    page.click("#reject-btn")
    page.click("#confirm-sign-btn")

    page.wait_for_selector("[data-card-message].message--error")
    assert "accuracy" in page.locator("#adjudication [role=alert]").first.inner_text()
    assert page.locator(".claim-mark").first.get_attribute("data-mark") == "incorrect"
    assert page.locator("#tag-choices").get_by_label("hallucination").is_checked()
    assert page.locator("#wrong-reason").get_by_label("accuracy").is_checked()
    assert page.input_value("#rationale") == "Wrong figures."
    assert not Decision.objects.exists()


def test_claiming_keeps_marks_chosen_before_the_claim(open_as, reviewer, escalation):
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.locator(".claim-mark").first.focus()
    page.keyboard.press("2")

    page.click("#claim-btn")

    page.wait_for_selector("#approve-btn")
    assert page.locator(".claim-mark").first.get_attribute("data-mark") == "incorrect"


def test_the_marks_fit_a_phone(open_as, reviewer, escalation):
    page = _claimed_page(
        open_as, reviewer, escalation, viewport={"width": 390, "height": 844}, is_mobile=True
    )

    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")

    assert overflow <= 0
    assert page.locator(".claim-mark").first.is_visible()
    assert _claim("tone").pk  # both lenses' claims are offered
    assert page.locator(".claim-mark").count() == 2


@pytest.mark.parametrize(
    ("fieldset", "label", "key", "said"),
    [("#tag-choices", "tone", "a", "approve"), ("#wrong-reason", "accuracy", "r", "reject")],
)
def test_a_and_r_choose_the_outcome_from_a_ticked_box(
    open_as, reviewer, escalation, fieldset, label, key, said
):
    page = _claimed_page(open_as, reviewer, escalation)
    box = page.locator(fieldset).get_by_label(label)
    box.check()
    box.focus()

    page.keyboard.press(key)

    assert page.evaluate("document.activeElement.id") == "rationale"
    assert said in page.locator("#chosen-outcome").inner_text()
    assert box.is_checked()


PASSWORD = "pw-for-tests"  # tests/factories.py


def _mark_everything(page):
    """Both claims marked, a tag and a lens ticked, a rationale typed."""
    page.locator(".claim-mark").first.focus()
    page.keyboard.press("1")  # accuracy: correct; on to tone's
    page.keyboard.press("3")  # tone: irrelevant
    page.locator("#tag-choices").get_by_label("hallucination").check()
    page.locator("#wrong-reason").get_by_label("accuracy").check()
    page.fill("#rationale", "Accuracy holds; tone's cite is beside the point.")


def _everything_is_back(page):
    page.wait_for_selector("#approve-btn")
    marks = page.locator(".claim-mark")
    assert [marks.nth(i).get_attribute("data-mark") for i in range(2)] == [
        "correct",
        "irrelevant",
    ]
    assert marks.first.locator("input[value=correct]").is_checked()
    assert page.locator("#tag-choices").get_by_label("hallucination").is_checked()
    assert not page.locator("#tag-choices").get_by_label("tone").is_checked()
    assert page.locator("#wrong-reason").get_by_label("accuracy").is_checked()
    assert page.input_value("#rationale") == "Accuracy holds; tone's cite is beside the point."


def test_a_reload_keeps_every_mark_tag_and_lens(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    _mark_everything(page)

    page.reload()

    _everything_is_back(page)


def test_an_expired_session_keeps_every_mark_tag_and_lens_and_signs_them(
    open_as, reviewer, escalation
):
    page = _claimed_page(open_as, reviewer, escalation)
    _mark_everything(page)
    page.context.clear_cookies(name=settings.SESSION_COOKIE_NAME)
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_url("**/login/**")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/proposals/{escalation.proposal_id}")

    _everything_is_back(page)
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#decision-annotations")
    signed = json.loads(Decision.objects.get().payload)
    assert {m["mark"] for m in signed["claims"]} == {"correct", "irrelevant"}
    assert (signed["tags"], signed["wrong_reason"]) == (["hallucination"], ["accuracy"])
    # Signed: nothing is left to put back.
    drafts = "Object.keys(localStorage).filter(k => k.startsWith('reviewapp:draft:'))"
    assert page.evaluate(drafts) == []
