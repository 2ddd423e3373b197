"""Several reviews per escalation: each signed, agreeing ones decide, disagreeing ones reconcile."""

import json

import pytest
from django.core.exceptions import ValidationError

from reviewapp.review.models import Decision, Escalation, Review, ReviewClaim
from reviewapp.review.services.escalations import (
    AlreadyReviewed,
    ClaimHeldByOther,
    EscalationClosed,
    NeedsAPerson,
    NotAReconciler,
    ReviewUnverified,
    escalation_claim,
    escalation_reassign,
    escalation_review,
)
from reviewapp.review.services.panels import panel_configure
from reviewapp.review.services.reviews import review_create
from tests.api.conftest import evaluated
from tests.factories import LensFactory, ReconcilerFactory, ReviewerFactory
from tests.support.tamper import forge_review, tampering


@pytest.fixture
def two_needed(db) -> Escalation:
    proposal = evaluated("Wire 40,000 EUR today.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal)


def review(escalation, user, outcome="approved", **extra):
    return escalation_review(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale=f"{user.username} checked it.",
        user=user,
        decided_by_name=user.username,
        **extra,
    )


def test_an_escalation_takes_reviews_needed_from_its_panel(two_needed):
    assert two_needed.reviews_needed == 2


def test_first_of_two_reviews_awaits_the_second(two_needed):
    result = review(two_needed, ReviewerFactory(username="ann"))

    assert (result.status, result.reviews, result.reviews_needed) == ("awaiting_reviews", 1, 2)
    assert result.decision is None
    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.OPEN
    assert not Decision.objects.exists()


def test_each_review_is_its_reviewers_signed_record(two_needed):
    review(two_needed, ReviewerFactory(username="ann"), "rejected")

    stored = Review.objects.get()
    signed = json.loads(stored.payload)
    assert (signed["type"], signed["reviewer"], signed["outcome"]) == (
        "reviewapp.review/v1",
        "ann",
        "rejected",
    )
    assert signed["escalation"]["id"] == two_needed.pk


def test_the_same_person_cannot_review_twice(two_needed):
    ann = ReviewerFactory(username="ann")
    review(two_needed, ann)

    with pytest.raises(AlreadyReviewed):
        review(two_needed, ann)
    assert Review.objects.count() == 1


def test_agreeing_reviews_decide_naming_each_review_in_the_signed_payload(two_needed):
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    review(two_needed, ann)
    result = review(two_needed, ben)

    assert result.status == "decided"
    signed = json.loads(result.decision.payload)
    stored = list(Review.objects.order_by("id"))
    assert signed["reviews"] == [
        {"reviewer": r.reviewer_name, "outcome": "approved", "review_sha256": r.hash}
        for r in stored
    ]
    assert signed["decided_by"] == "ann, ben"
    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RESOLVED


def test_disagreeing_reviews_send_the_escalation_to_reconcile(two_needed):
    review(two_needed, ReviewerFactory(username="ann"), "approved")
    result = review(two_needed, ReviewerFactory(username="ben"), "rejected")

    assert (result.status, result.decision) == ("reconcile", None)
    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RECONCILE
    assert "reviewers_disagree" in two_needed.reasons


def test_a_review_row_edited_behind_the_triggers_counts_as_signed(two_needed):
    # Attack (issue 42): ann signs `rejected`, her row is edited to `approved`, ben approves.
    review(two_needed, ReviewerFactory(username="ann"), "rejected")
    with tampering():
        Review.objects.filter(reviewer_name="ann").update(outcome="approved")

    result = review(two_needed, ReviewerFactory(username="ben"), "approved")

    assert (result.status, result.decision) == ("reconcile", None)
    assert not Decision.objects.exists()


def test_a_review_whose_signature_no_longer_verifies_decides_nothing(two_needed):
    review(two_needed, ReviewerFactory(username="ann"), "rejected")
    with tampering():
        forge_review(Review.objects.get(), outcome="approved")

    with pytest.raises(ReviewUnverified, match=r"ann's review .*signature does not verify"):
        review(two_needed, ReviewerFactory(username="ben"), "approved")

    assert not Decision.objects.exists()
    assert Review.objects.count() == 1
    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.OPEN


def test_a_reconciler_decision_names_the_reviews_as_signed(two_needed):
    review(two_needed, ReviewerFactory(username="ann"), "approved")
    review(two_needed, ReviewerFactory(username="ben"), "rejected")
    with tampering():
        Review.objects.filter(reviewer_name="ben").update(outcome="approved")

    result = review(two_needed, ReconcilerFactory(username="rex"), "approved")

    signed = json.loads(result.decision.payload)
    assert [(r["reviewer"], r["outcome"]) for r in signed["reviews"]] == [
        ("ann", "approved"),
        ("ben", "rejected"),
    ]


def test_only_a_reconciler_decides_a_reconcile(two_needed):
    review(two_needed, ReviewerFactory(username="ann"), "approved")
    review(two_needed, ReviewerFactory(username="ben"), "rejected")

    with pytest.raises(NotAReconciler):
        review(two_needed, ReviewerFactory(username="cal"))
    result = review(two_needed, ReconcilerFactory(username="rex"), "rejected")

    signed = json.loads(result.decision.payload)
    assert (signed["outcome"], signed["decided_by"]) == ("rejected", "rex")
    assert [r["reviewer"] for r in signed["reviews"]] == ["ann", "ben"]


def test_a_reconciler_who_gave_one_of_the_disagreeing_reviews_cannot_reconcile_it(two_needed):
    # Attack: rex is in both groups, reviews, disagrees with ann, then settles it his own way.
    rex = ReconcilerFactory(username="rex")
    review(two_needed, ReviewerFactory(username="ann"), "approved")
    review(two_needed, rex, "rejected")

    with pytest.raises(NotAReconciler, match="another reconciler"):
        review(two_needed, rex, "rejected")

    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RECONCILE
    assert not Decision.objects.exists()
    result = review(two_needed, ReconcilerFactory(username="rae"), "approved")
    assert result.status == "decided"


def test_staff_cannot_take_a_reconcile_out_of_the_reconcilers_hands(two_needed):
    # Attack: staff "take over" a reconcile; it became an ordinary claim nobody could decide.
    review(two_needed, ReviewerFactory(username="ann"), "approved")
    review(two_needed, ReviewerFactory(username="ben"), "rejected")
    boss = ReviewerFactory(username="boss", is_staff=True)

    with pytest.raises(EscalationClosed, match="reconciler"):
        escalation_reassign(escalation_id=two_needed.pk, to_user=boss, by_user=boss)

    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RECONCILE
    result = review(two_needed, ReconcilerFactory(username="rex"), "rejected")
    assert result.status == "decided"


def test_a_token_without_a_person_cannot_give_one_of_several_reviews(two_needed):
    with pytest.raises(NeedsAPerson):
        escalation_review(
            escalation_id=two_needed.pk,
            outcome="approved",
            rationale="Machine says yes.",
            user=None,
            decided_by_name="api:bot",
        )


def test_a_single_review_decision_payload_has_no_reviews_key(db):
    escalation = Escalation.objects.get(
        proposal=evaluated("Ship it on Friday.", requires_sign_off=True)
    )
    result = review(escalation, ReviewerFactory(username="ann"))

    signed = json.loads(result.decision.payload)
    assert "reviews" not in signed
    assert not Review.objects.exists()


def test_annotations_are_signed_beside_the_verdict(two_needed):
    stored = review_create(
        escalation=two_needed,
        user=ReviewerFactory(username="ann"),
        reviewer_name="ann",
        outcome="approved",
        rationale="Fine.",
        annotations={"tags": ["money"], "claims": [{"id": "c1", "mark": "correct"}]},
    )

    signed = json.loads(stored.payload)
    assert (signed["tags"], signed["claims"]) == (["money"], [{"id": "c1", "mark": "correct"}])


def test_annotations_may_not_restate_a_signed_key(two_needed):
    with pytest.raises(ValueError, match="outcome"):
        review_create(
            escalation=two_needed,
            user=ReviewerFactory(username="ann"),
            reviewer_name="ann",
            outcome="approved",
            rationale="Fine.",
            annotations={"outcome": "rejected"},
        )


def test_panel_configure_sets_reviews_needed(db):
    panel = panel_configure(name="money", need=1, lenses=[LensFactory()], reviews_needed=3)

    assert panel.reviews_needed == 3


def test_panel_configure_refuses_more_than_five_reviews(db):

    with pytest.raises(ValidationError, match="1 to 5"):
        panel_configure(name="money", need=1, lenses=[LensFactory()], reviews_needed=6)


def test_two_reviewers_hold_an_escalation_needing_two_at_once(two_needed):
    escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="ann"))
    escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="ben"))

    assert ReviewClaim.objects.filter(escalation=two_needed).count() == 2


def test_a_third_claimer_is_refused_while_two_hold_the_places(two_needed):
    escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="ann"))
    escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="ben"))

    with pytest.raises(ClaimHeldByOther, match="ann, ben"):
        escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="cal"))


def test_the_same_person_claiming_again_holds_one_place(two_needed):
    ann = ReviewerFactory(username="ann")
    escalation_claim(escalation_id=two_needed.pk, user=ann)
    escalation_claim(escalation_id=two_needed.pk, user=ann)

    assert ReviewClaim.objects.filter(escalation=two_needed).count() == 1


def test_a_reviewer_who_reviewed_cannot_claim_again(two_needed):
    ann = ReviewerFactory(username="ann")
    review(two_needed, ann)

    with pytest.raises(AlreadyReviewed):
        escalation_claim(escalation_id=two_needed.pk, user=ann)


def test_giving_a_review_ends_the_reviewers_claim(two_needed):
    ann = ReviewerFactory(username="ann")
    escalation_claim(escalation_id=two_needed.pk, user=ann)

    review(two_needed, ann)

    assert not ReviewClaim.objects.exists()


def test_a_reviewer_without_a_place_cannot_review_while_the_others_hold_them(two_needed):
    escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="ann"))
    escalation_claim(escalation_id=two_needed.pk, user=ReviewerFactory(username="ben"))

    with pytest.raises(ClaimHeldByOther):
        review(two_needed, ReviewerFactory(username="cal"))
    assert not Review.objects.exists()
