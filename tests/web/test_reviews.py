"""The adjudication card of an escalation that needs several reviews: blind, then shown."""

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.review.models import Claim, Escalation, Tag
from reviewapp.review.services.escalations import escalation_claim, escalation_review
from tests.api.conftest import evaluated
from tests.factories import ReconcilerFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_needed() -> Escalation:
    proposal = evaluated("Close account 7731.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal)


def page(user, escalation) -> str:
    client = Client()
    client.force_login(user)
    return client.get(reverse("proposal_detail", args=[escalation.proposal_id])).content.decode()


def decide(user, escalation, outcome="approved"):
    client = Client()
    client.force_login(user)
    return client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        {
            "outcome": outcome,
            "rationale": f"{user.username} says {outcome}, secret-{user.username}",
        },
    )


def test_a_reviewer_does_not_see_anothers_review_before_giving_theirs(two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    decide(ann, two_needed)

    html = page(ben, two_needed)

    assert "1 of 2" in html
    assert "hidden until you have submitted yours" in html
    assert "secret-ann" not in html
    assert 'id="approve-btn"' in html  # no claim needed to give a review


def test_a_reconciler_is_blind_too_while_the_reviews_are_still_being_given(two_needed):
    # Attack: rex, in both groups, reads ann's verdict on the card, then gives the second
    # review knowing it (and a superuser, a reconciler by right, could do the same).
    decide(ReviewerFactory(username="ann"), two_needed)
    rex = ReconcilerFactory(username="rex")

    html = page(rex, two_needed)

    assert "secret-ann" not in html
    assert "hidden until you have submitted yours" in html


def test_a_reviewer_sees_the_others_review_once_theirs_is_in(two_needed):
    ann, ben, cal = (ReviewerFactory(username=n) for n in ("ann", "ben", "cal"))
    two_needed.reviews_needed = 3
    two_needed.save(update_fields=["reviews_needed"])
    decide(ann, two_needed)
    decide(ben, two_needed)

    html = page(ben, two_needed)

    assert "secret-ann" in html and "secret-ben" in html
    assert "waiting for 1 more" in html
    assert 'id="approve-btn"' not in html


def test_after_giving_a_review_the_card_says_it_is_in_and_offers_nothing_to_edit(two_needed):
    ann = ReviewerFactory(username="ann")
    decide(ann, two_needed)

    html = page(ann, two_needed)

    assert "<strong>Your review is in</strong>; waiting for 1 more." in html
    assert 'id="rationale"' not in html and 'class="claim-mark"' not in html
    assert f'data-reviewed="{two_needed.pk}"' in html  # desk.js drops the draft


def _inbox_row(user, escalation) -> str:
    client = Client()
    client.force_login(user)
    html = client.get(reverse("inbox")).content.decode()
    row = html[html.index(f'data-id="{escalation.pk}"') :]
    return " ".join(row[: row.index("</tr>")].split())


def test_the_inbox_row_says_your_review_is_in_and_how_many_more_are_awaited(two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    decide(ann, two_needed)

    assert "Your review is in; waiting for 1 more" in _inbox_row(ann, two_needed)
    assert "1 of 2 reviews in" in _inbox_row(ben, two_needed)
    assert "Your review is in" not in _inbox_row(ben, two_needed)


def test_agreeing_reviews_through_the_page_decide_and_list_both(two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    decide(ann, two_needed)
    decide(ben, two_needed)

    html = page(ann, two_needed)

    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RESOLVED
    assert 'data-reviewer="ann"' in html and 'data-reviewer="ben"' in html


def test_a_reviewer_outside_the_reconcilers_cannot_decide_a_reconcile(two_needed):
    decide(ReviewerFactory(username="ann"), two_needed, "approved")
    decide(ReviewerFactory(username="ben"), two_needed, "rejected")
    cal = ReviewerFactory(username="cal")

    response = decide(cal, two_needed)

    assert response.status_code == 403
    assert "reconcilers" in response.content.decode()
    assert "secret-ann" not in page(cal, two_needed)


def test_a_reconciler_sees_every_review_and_decides(two_needed):
    decide(ReviewerFactory(username="ann"), two_needed, "approved")
    decide(ReviewerFactory(username="ben"), two_needed, "rejected")
    rex = ReconcilerFactory(username="rex")

    html = page(rex, two_needed)
    assert "secret-ann" in html and "secret-ben" in html
    decide(rex, two_needed, "rejected")

    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RESOLVED
    assert two_needed.proposal.decision.decided_by_name == "rex"


def test_a_reconciler_cannot_reconcile_a_disagreement_they_are_part_of(two_needed):
    rex = ReconcilerFactory(username="rex")
    decide(ReviewerFactory(username="ann"), two_needed, "approved")
    decide(rex, two_needed, "rejected")

    response = decide(rex, two_needed, "rejected")

    assert response.status_code == 403
    assert "another reconciler" in response.content.decode()
    assert 'id="approve-btn"' not in page(rex, two_needed)
    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RECONCILE


def test_the_inbox_lists_an_escalation_in_reconcile(two_needed):
    escalation_review(
        escalation_id=two_needed.pk,
        outcome="approved",
        rationale="yes",
        user=ReviewerFactory(username="ann"),
        decided_by_name="ann",
    )
    escalation_review(
        escalation_id=two_needed.pk,
        outcome="rejected",
        rationale="no",
        user=ReviewerFactory(username="ben"),
        decided_by_name="ben",
    )
    client = Client()
    client.force_login(ReconcilerFactory(username="rex"))

    html = client.get(reverse("inbox")).content.decode()

    assert reverse("proposal_detail", args=[two_needed.proposal_id]) in html


def test_a_second_reviewer_can_claim_while_the_first_holds_a_place(two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    escalation_claim(escalation_id=two_needed.pk, user=ann)

    html = page(ben, two_needed)

    assert "ann holds a place now" in html
    assert 'id="claim-btn"' in html


def test_a_review_that_no_longer_verifies_refuses_the_decision_keeping_what_was_typed(
    two_needed,
):
    from reviewapp.review.models import Decision, Review
    from tests.support.tamper import forge_review, tampering

    decide(ReviewerFactory(username="ann"), two_needed, "rejected")
    with tampering():
        forge_review(Review.objects.get(), outcome="approved")

    response = decide(ReviewerFactory(username="ben"), two_needed)

    html = response.content.decode()
    assert response.status_code == 409
    assert "ann&#x27;s review" in html and "does not verify" in html
    assert "secret-ben" in html  # what ben typed is still in the box
    assert not Decision.objects.exists()


def _review_marked(escalation, user, outcome, mark, tags=()):
    claim = Claim.objects.get(judgement__proposal=escalation.proposal)
    escalation_review(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale=f"{user.username} looked",
        user=user,
        decided_by_name=user.username,
        marks=[(claim.pk, mark)],
        tags=list(tags),
    )
    return claim


def test_the_reconciler_sees_each_reviews_marks_and_tags_with_the_differing_claims_flagged(
    two_needed,
):
    Tag.objects.create(name="stale-data")
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    claim = _review_marked(two_needed, ann, "approved", "correct", tags=["stale-data"])
    _review_marked(two_needed, ben, "rejected", "incorrect")

    html = page(ReconcilerFactory(username="rex"), two_needed)

    marks = html[html.index('id="review-marks"') :]
    marks = " ".join(marks[: marks.index("</ul>\n  ")].split())
    assert f'data-claim="{claim.pk}" data-differ' in marks
    assert "reviewers differ" in marks
    assert "<q dir=\"auto\">Close account 7731.</q>" in marks
    assert "<strong>ann</strong>:" in marks and "correct" in marks
    assert "<strong>ben</strong>:" in marks and "incorrect" in marks
    assert '<span class="tag">stale-data</span>' in html


def test_claims_the_reviewers_marked_alike_are_not_flagged(two_needed):
    three = ReviewerFactory(username="cal")
    two_needed.reviews_needed = 3
    two_needed.save(update_fields=["reviews_needed"])
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    _review_marked(two_needed, ann, "approved", "correct")
    _review_marked(two_needed, ben, "approved", "correct")

    html = page(ben, two_needed)

    assert 'id="review-marks"' in html
    assert "reviewers differ" not in html
    assert "review-marks" not in page(three, two_needed)  # blind until theirs is in


def test_a_second_review_from_a_stale_page_is_refused_keeping_what_was_typed(two_needed):
    ann = ReviewerFactory(username="ann")
    decide(ann, two_needed)

    response = decide(ann, two_needed)

    assert response.status_code == 409
    html = response.content.decode()
    assert "You already reviewed this escalation." in html
    assert "ann says approved, secret-ann</textarea>" in html
