"""Two reviewers on one escalation in real Chromium, each in their own browser context."""

import json

import pytest

from reviewapp.review.models import ClaimMark, Decision, Escalation, Review
from tests.api.conftest import evaluated
from tests.factories import ReconcilerFactory, ReviewerFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_needed() -> Escalation:
    proposal = evaluated("Close account 7731 today.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal)


def _review(page, outcome: str, rationale: str) -> None:
    """Give a review the way a reviewer does: write, choose, sign, confirm."""
    page.fill("#rationale", rationale)
    page.click("#approve-btn" if outcome == "approved" else "#reject-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#adjudication [data-card-message]")


def _card(page) -> str:
    return page.locator("#adjudication").inner_text()


def test_two_agreeing_reviewers_are_blind_then_decide_naming_both(open_as, two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    path = f"/proposals/{two_needed.proposal_id}"
    ann_page, ben_page = open_as(ann, path), open_as(ben, path)

    _review(ann_page, "approved", "ann-private-notes")
    assert "1 of 2" in _card(ann_page)
    ben_page.reload()
    assert "hidden until you have submitted yours" in _card(ben_page)
    assert "ann-private-notes" not in ben_page.content()
    _review(ben_page, "approved", "ben-private-notes")

    assert "Decision signed" in _card(ben_page)
    ann_page.reload()
    assert "ann-private-notes" in _card(ann_page) and "ben-private-notes" in _card(ann_page)
    signed = json.loads(Decision.objects.get(proposal=two_needed.proposal).payload)
    hashes = {r.reviewer_name: r.hash for r in Review.objects.all()}
    assert {(r["reviewer"], r["review_sha256"]) for r in signed["reviews"]} == set(hashes.items())
    assert ann_page.errors == [] and ben_page.errors == []


def test_two_disagreeing_reviewers_go_to_reconcile_and_a_reconciler_decides(open_as, two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    rex = ReconcilerFactory(username="rex")
    path = f"/proposals/{two_needed.proposal_id}"
    ann_page, ben_page = open_as(ann, path), open_as(ben, path)

    _review(ann_page, "approved", "ann says yes")
    _review(ben_page, "rejected", "ben says no")
    assert "reconciler decides" in _card(ben_page)

    rex_page = open_as(rex, path)
    assert "ann says yes" in _card(rex_page) and "ben says no" in _card(rex_page)
    _review(rex_page, "rejected", "rex weighed both")

    decision = Decision.objects.get(proposal=two_needed.proposal)
    assert (decision.outcome, decision.decided_by_name) == ("rejected", "rex")
    assert [r["reviewer"] for r in json.loads(decision.payload)["reviews"]] == ["ann", "ben"]
    assert rex_page.errors == []


def test_one_click_on_approve_signs_nothing_until_confirmed(open_as, reviewer):
    escalation = Escalation.objects.get(
        proposal=evaluated("Ship it on Friday.", requires_sign_off=True)
    )
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.click("#claim-btn")
    page.wait_for_selector("#approve-btn")
    page.fill("#rationale", "Looks right.")

    page.click("#approve-btn")
    page.wait_for_function("() => document.activeElement.id === 'confirm-sign-btn'")
    assert page.locator("#confirm-outcome").inner_text() == "approve"
    assert not Decision.objects.exists()
    page.keyboard.press("Escape")
    assert page.locator("#confirm-sign").is_hidden()
    assert not Decision.objects.exists()

    page.click("#approve-btn")
    page.keyboard.press("Enter")  # on the focused confirm button
    page.wait_for_selector("#decision-signature")
    assert Decision.objects.get().outcome == "approved"


def test_each_reviewer_marks_claims_in_their_review_and_the_last_ones_decide(open_as, two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    path = f"/proposals/{two_needed.proposal_id}"
    ann_page, ben_page = open_as(ann, path), open_as(ben, path)

    for page, key in ((ann_page, "2"), (ben_page, "1")):  # incorrect, then correct
        page.locator(".claim-mark").first.focus()
        page.keyboard.press(key)
        _review(page, "approved", "Looked at the claim.")

    signed_by = {r.reviewer_name: json.loads(r.payload) for r in Review.objects.all()}
    assert {name: p["claims"][0]["mark"] for name, p in signed_by.items()} == {
        "ann": "incorrect",
        "ben": "correct",
    }
    signed = json.loads(Decision.objects.get(proposal=two_needed.proposal).payload)
    assert [m["mark"] for m in signed["claims"]] == ["correct"]
    assert ClaimMark.objects.get().mark == "correct"
    assert ann_page.errors == [] and ben_page.errors == []


def test_your_own_finished_review_reads_as_in_on_the_card_and_in_the_inbox(open_as, two_needed):
    ann = ReviewerFactory(username="ann")
    page = open_as(ann, f"/proposals/{two_needed.proposal_id}")
    page.locator(".claim-mark").first.focus()
    page.keyboard.press("1")

    _review(page, "approved", "ann looked")

    assert "Your review is in; waiting for 1 more." in _card(page)
    assert page.locator("#rationale, .claim-mark").count() == 0
    drafts = "Object.keys(localStorage).filter(k => k.startsWith('reviewapp:draft:'))"
    assert page.evaluate(drafts) == []
    page.goto("/")
    row = page.locator(f"tr[data-id='{two_needed.pk}']")
    assert "Your review is in; waiting for 1 more" in row.inner_text()
    assert page.errors == []


def test_the_reconciler_sees_where_the_reviewers_marks_differ(open_as, two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    path = f"/proposals/{two_needed.proposal_id}"
    for user, key, outcome in ((ann, "1", "approved"), (ben, "2", "rejected")):
        page = open_as(user, path)
        page.locator(".claim-mark").first.focus()
        page.keyboard.press(key)
        _review(page, outcome, f"{user.username} looked")

    rex_page = open_as(ReconcilerFactory(username="rex"), path)

    differing = rex_page.locator("#review-marks [data-differ]")
    assert differing.count() == 1
    text = " ".join(differing.inner_text().split())
    assert "reviewers differ" in text and "Close account 7731 today." in text
    assert "ann: ✓ correct" in text and "ben: ✗ incorrect" in text
    assert rex_page.errors == []
