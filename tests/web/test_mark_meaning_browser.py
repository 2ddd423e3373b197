"""What a claim mark means, said where it is given, warned where two marks contradict each
other, and each marked claim named by its words once signed; in real Chromium."""

import pytest

from reviewapp.review.models import Claim, Escalation
from reviewapp.review.services.escalations import escalation_claim, escalation_decide

from .builders import make_panel, run_panel
from .test_claim_grid_browser import AGREED, CONTENT, DISPUTED, _answer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def escalation(db):
    """alpha verifies both spans; beta verifies the rooms and refutes the family."""
    proposal = run_panel(
        make_panel("alpha", "beta"),
        CONTENT,
        {
            "alpha": _answer("pass", (AGREED, "verified"), (DISPUTED, "verified")),
            "beta": _answer("fail", (AGREED, "verified"), (DISPUTED, "refuted")),
        },
    )
    return Escalation.objects.get(proposal=proposal)


def _claimed_page(open_as, reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.wait_for_selector("#approve-btn")
    return page


def _family(page, lens):
    return page.locator(f".claim-mark[data-lens={lens}]", has_text="family")


def test_the_card_says_a_mark_judges_the_lens_not_the_words(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)

    meaning = page.locator("#claim-marks-meaning").inner_text()

    assert "the lens is right about the words it cites" in meaning
    assert "incorrect" in meaning and "irrelevant" in meaning
    assert "says refuted" in _family(page, "beta").inner_text()


def test_the_same_words_marked_correct_under_a_verifying_and_a_refuting_lens_are_warned(
    open_as, reviewer, escalation
):
    page = _claimed_page(open_as, reviewer, escalation)
    _family(page, "alpha").focus()
    page.keyboard.press("1")
    _family(page, "beta").focus()
    page.keyboard.press("1")

    warning = _family(page, "beta").locator(".mark-conflict")
    assert warning.is_visible()
    assert "cannot both be right" in warning.inner_text()
    assert "alpha" in warning.inner_text()

    _family(page, "beta").focus()
    page.keyboard.press("2")  # beta was wrong: no contradiction left
    assert page.locator(".mark-conflict:visible").count() == 0


def test_words_both_lenses_verified_marked_correct_are_not_warned(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    for lens in ("alpha", "beta"):
        page.locator(f".claim-mark[data-lens={lens}]", has_text="rooms").focus()
        page.keyboard.press("1")

    assert page.locator(".mark-conflict:visible").count() == 0


def test_a_signed_mark_names_its_claim_by_the_words_it_cites_never_by_id(
    open_as, reviewer, escalation
):
    refuting = Claim.objects.get(judgement__lens_name="beta", assessment="refuted")
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="The family is there.",
        user=reviewer,
        decided_by_name=reviewer.get_username(),
        marks=[(refuting.pk, "incorrect")],
    )

    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")

    signed = page.locator("#decision-annotations").inner_text()
    assert DISPUTED in signed and "beta" in signed
    assert "the lens is wrong" in signed
    assert f"claim {refuting.pk}" not in signed
