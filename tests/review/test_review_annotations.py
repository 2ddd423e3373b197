"""Claim marks and tags where an escalation needs several reviews: each review signs its
reviewer's own; the decision signs those of the act that decided it."""

import json
import random

import pytest

from reviewapp.review.models import Claim, ClaimMark, DecisionAudit, Escalation, Review, Tag
from reviewapp.review.services import audits
from reviewapp.review.services.annotations import AnnotationError
from reviewapp.review.services.escalations import escalation_claim, escalation_review
from tests.api.conftest import evaluated
from tests.factories import ReconcilerFactory, ReviewerFactory
from tests.review.test_audits import CONTENT, audit_of, decided
from tests.webhooks.helpers import one_lens_panel


@pytest.fixture
def two_needed(db) -> Escalation:
    proposal = evaluated("Wire 40,000 EUR today.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal)


@pytest.fixture
def claim(two_needed) -> Claim:
    return Claim.objects.get(judgement__proposal=two_needed.proposal)


@pytest.fixture
def tags(db):
    return [Tag.objects.create(name=n) for n in ("hallucination", "tone")]


def review(escalation, username, outcome="approved", *, factory=ReviewerFactory, **annotations):
    user = factory(username=username)
    return escalation_review(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale=f"{username} checked it.",
        user=user,
        decided_by_name=username,
        **annotations,
    )


def test_each_review_signs_its_own_reviewers_marks_and_tags(two_needed, claim, tags):
    review(two_needed, "ann", marks=[(claim.pk, "incorrect")], tags=["tone"])

    signed = json.loads(Review.objects.get().payload)
    assert signed["claims"] == [
        {"claim": claim.pk, "lens": claim.judgement.lens_name, "mark": "incorrect"}
    ]
    assert signed["tags"] == ["tone"]


def test_agreeing_reviews_decide_with_the_annotations_of_the_review_that_completed_them(
    two_needed, claim, tags
):
    review(two_needed, "ann", marks=[(claim.pk, "incorrect")], tags=["tone"])
    result = review(two_needed, "ben", marks=[(claim.pk, "correct")], tags=["hallucination"])

    signed = json.loads(result.decision.payload)
    assert signed["claims"] == [
        {"claim": claim.pk, "lens": claim.judgement.lens_name, "mark": "correct"}
    ]
    assert signed["tags"] == ["hallucination"]


def test_claim_mark_rows_follow_the_decisions_signed_marks(two_needed, claim):
    review(two_needed, "ann", marks=[(claim.pk, "incorrect")])
    result = review(two_needed, "ben", marks=[(claim.pk, "irrelevant")])

    mark = ClaimMark.objects.get()
    assert (mark.decision, mark.claim, mark.mark) == (result.decision, claim, "irrelevant")


def test_a_deciding_review_without_marks_signs_none_in_the_decision(two_needed, claim):
    review(two_needed, "ann", marks=[(claim.pk, "incorrect")])
    result = review(two_needed, "ben")

    assert "claims" not in json.loads(result.decision.payload)
    assert not ClaimMark.objects.exists()


def test_a_reconcile_is_decided_with_the_reconcilers_annotations(two_needed, claim, tags):
    review(two_needed, "ann", "approved", marks=[(claim.pk, "correct")])
    review(two_needed, "ben", "rejected", marks=[(claim.pk, "incorrect")])
    result = review(
        two_needed, "rex", "rejected", factory=ReconcilerFactory, marks=[(claim.pk, "irrelevant")]
    )

    signed = json.loads(result.decision.payload)
    assert [m["mark"] for m in signed["claims"]] == ["irrelevant"]
    assert ClaimMark.objects.get().mark == "irrelevant"


def test_an_unknown_claim_in_a_review_is_refused_and_nothing_is_written(two_needed):
    with pytest.raises(AnnotationError, match="999999"):
        review(two_needed, "ann", marks=[(999999, "correct")])

    assert not Review.objects.exists()
    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.OPEN


@pytest.mark.django_db
def test_an_audit_takes_one_verdict_on_a_panel_needing_several_reviews(monkeypatch):
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    proposal = decided(one_lens_panel(CONTENT, audit_rate=100, reviews_needed=3))
    escalation = audit_of(proposal)
    reviewer = ReviewerFactory(username="ann")
    escalation_claim(escalation_id=escalation.pk, user=reviewer)

    result = escalation_review(
        escalation_id=escalation.pk,
        outcome="rejected",
        rationale="The figure is wrong.",
        user=reviewer,
        decided_by_name="ann",
    )

    assert result.status == "decided"
    assert isinstance(result.decision, DecisionAudit)
    assert not Review.objects.exists()
