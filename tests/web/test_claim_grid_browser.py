"""The claims × lenses grid and the mark for spans lenses disagree on, in real Chromium."""

import pytest

from reviewapp.review.models import Claim, Escalation
from reviewapp.review.services.escalations import escalation_claim, escalation_decide

from .builders import make_panel, run_panel

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONTENT = "We booked 2 rooms. The 👨\u200d👩\u200d👧 family arrives on Monday."
AGREED = "booked 2 rooms"
DISPUTED = "👨\u200d👩\u200d👧 family"


@pytest.fixture
def proposal(db):
    """alpha verifies both spans; beta verifies the rooms and refutes the family (as demo #49)."""
    return run_panel(
        make_panel("alpha", "beta"),
        CONTENT,
        {
            "alpha": _answer("pass", (AGREED, "verified"), (DISPUTED, "verified")),
            "beta": _answer("fail", (AGREED, "verified"), (DISPUTED, "refuted")),
        },
    )


def _answer(verdict, *claims):
    from tests.review.helpers import judgement

    return judgement(verdict, *({"cite": c, "assessment": a} for c, a in claims))


def _row(page, text):
    return page.locator("#claim-grid tbody tr", has_text=text)


def test_the_grid_shows_each_lens_assessment_per_span(open_as, reviewer, proposal):
    page = open_as(reviewer, f"/proposals/{proposal.pk}")

    headers = page.locator("#claim-grid thead th").all_inner_texts()
    assert [h.strip() for h in headers] == ["Cited", "alpha", "beta"]
    disputed = _row(page, "family").locator("td").all_inner_texts()
    assert ["verified" in disputed[0], "refuted" in disputed[1]] == [True, True]
    agreed = _row(page, AGREED).locator("td").all_inner_texts()
    assert all("verified" in cell for cell in agreed)


def test_a_span_lenses_disagree_on_is_flagged_in_words_and_the_agreed_one_is_not(
    open_as, reviewer, proposal
):
    page = open_as(reviewer, f"/proposals/{proposal.pk}")

    assert "lenses disagree" in _row(page, "family").inner_text()
    assert "lenses disagree" not in _row(page, AGREED).inner_text()
    assert page.locator("#span-list .conflict-flag").count() == 1


def test_the_disputed_span_is_painted_apart_from_the_agreed_one(open_as, reviewer, proposal):
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    page.wait_for_function("window.reviewappPieces !== undefined")

    # Offsets are UTF-16 code units: slice in the page.
    pieces = page.evaluate(
        """(() => {
             const text = JSON.parse(document.getElementById('answer-content').textContent);
             return window.reviewappPieces.map(p => [text.slice(p.start, p.end), p.conflict]);
           })()"""
    )
    assert dict(pieces) == {AGREED: False, DISPUTED: True}
    painted = page.evaluate(
        "['rv-conflict', 'rv-multi'].map(n => (CSS.highlights.get(n) || new Set()).size)"
    )
    assert painted == [1, 1]


def test_the_disputed_mark_differs_in_line_not_only_colour(open_as, reviewer, proposal):
    page = open_as(reviewer, f"/proposals/{proposal.pk}")

    styles = page.evaluate(
        """['mark-sample--multi', 'mark-sample--conflict'].map(c => {
             const el = document.querySelector('.' + c);
             const s = getComputedStyle(el);
             return [s.textDecorationLine, s.textDecorationStyle];
           })"""
    )
    assert styles[0] != styles[1]
    assert styles[1] == ["underline overline", "wavy"]


def test_the_grid_shows_the_reviewers_marks_once_decided(open_as, reviewer, proposal):
    escalation = Escalation.objects.get(proposal=proposal)
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

    page = open_as(reviewer, f"/proposals/{proposal.pk}")

    cells = _row(page, "family").locator("td").all_inner_texts()
    assert "reviewer: ✗ incorrect" in cells[1]
    assert "reviewer" not in cells[0]


def test_the_grid_stacks_at_390_px_without_overflow(open_as, reviewer, proposal):
    page = open_as(
        reviewer,
        f"/proposals/{proposal.pk}",
        viewport={"width": 390, "height": 844},
        is_mobile=True,
    )

    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    assert not page.locator("#claim-grid thead").is_visible()
    row = _row(page, "family")
    assert row.is_visible()
    assert "beta: ✗ refuted" in " ".join(row.inner_text().split())
    box = row.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
