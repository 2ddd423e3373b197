"""Several reviews through the API, each given by a person with their personal token."""

import json
import random

import pytest
from django.contrib.auth.models import Group
from reviewapp_client.verify import VerificationError, verify_decision_reviews

from reviewapp.review.models import ApiClient, Claim, Escalation, Review
from reviewapp.review.services import audits
from reviewapp.review.services.clients import ClientRefused, api_client_create
from tests.factories import ReconcilerFactory, ReviewerFactory
from tests.review.test_audits import CONTENT, audit_of, decided
from tests.webhooks.helpers import one_lens_panel

from .conftest import Api, evaluated


@pytest.fixture
def two_needed(db) -> Escalation:
    proposal = evaluated("Close account 7731.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal)


def personal(user) -> Api:
    _, token = api_client_create(name=f"{user.username}-laptop", scopes=["review"], user=user)
    return Api(token)


def decide(api: Api, escalation, outcome="approved"):
    body = {"outcome": outcome, "rationale": "Checked the account history."}
    return api.post(f"/api/escalations/{escalation.pk}/decision", body)


@pytest.fixture
def ann(db):
    return personal(ReviewerFactory(username="ann"))


@pytest.fixture
def ben(db):
    return personal(ReviewerFactory(username="ben"))


def test_the_first_of_two_reviews_is_202_awaiting_reviews(two_needed, ann):
    response = decide(ann, two_needed)

    assert response.status_code == 202
    assert response.json() == {"status": "awaiting_reviews", "reviews": 1, "reviews_needed": 2}


def test_the_same_person_again_is_409_saying_they_already_reviewed(two_needed, ann):
    decide(ann, two_needed)
    response = decide(ann, two_needed)

    assert response.status_code == 409
    assert "already reviewed" in response.json()["detail"]


def test_a_second_agreeing_review_is_201_with_the_decision_and_both_reviews(two_needed, ann, ben):
    decide(ann, two_needed)
    response = decide(ben, two_needed)

    assert response.status_code == 201
    body = response.json()
    assert body["decided_by"] == "ann, ben"
    assert [r["reviewer"] for r in body["reviews"]] == ["ann", "ben"]


def test_a_second_disagreeing_review_is_202_reconcile(two_needed, ann, ben):
    decide(ann, two_needed, "approved")
    response = decide(ben, two_needed, "rejected")

    assert response.status_code == 202
    assert response.json() == {"status": "reconcile", "reviews": 2, "reviews_needed": 2}


def test_a_reviewer_outside_the_reconcilers_gets_403_on_a_reconcile(two_needed, ann, ben):
    decide(ann, two_needed, "approved")
    decide(ben, two_needed, "rejected")

    response = decide(personal(ReviewerFactory(username="cal")), two_needed)

    assert response.status_code == 403
    assert "reconcilers" in response.json()["detail"]


def test_a_reconcilers_personal_token_decides_a_reconcile(two_needed, ann, ben):
    decide(ann, two_needed, "approved")
    decide(ben, two_needed, "rejected")

    response = decide(personal(ReconcilerFactory(username="rex")), two_needed, "rejected")

    assert response.status_code == 201
    assert response.json()["decided_by"] == "rex"


def test_a_review_token_without_a_person_is_403_where_reviews_are_needed(two_needed, api):
    response = decide(api, two_needed)

    assert response.status_code == 403
    assert "personal token" in response.json()["detail"]
    assert not Review.objects.exists()


def test_a_personal_token_lists_every_escalation_as_its_reviewer_does(two_needed, ann):
    body = ann.get("/api/escalations").json()

    assert [item["id"] for item in body["items"]] == [two_needed.pk]


def test_a_personal_token_dies_with_its_users_reviewers_membership(two_needed):
    user = ReviewerFactory(username="ann")
    api = personal(user)
    user.groups.remove(Group.objects.get(name="reviewers"))

    assert decide(api, two_needed).status_code == 401


def test_a_personal_token_dies_with_its_users_account(two_needed):
    user = ReviewerFactory(username="ann")
    api = personal(user)
    user.is_active = False
    user.save()

    assert api.get("/api/escalations").status_code == 401


def test_a_suspended_account_comes_back_without_its_old_tokens(two_needed):
    # Attack: an account is suspended (say, suspected stolen) and later reactivated; the
    # personal token a thief copied meanwhile worked again, though "it dies with the account".
    user = ReviewerFactory(username="ann")
    api = personal(user)
    user.is_active = False
    user.save()
    user.is_active = True
    user.save()

    assert api.get("/api/escalations").status_code == 401
    assert not ApiClient.objects.filter(user=user, revoked_at__isnull=True).exists()


@pytest.mark.parametrize("removed_by", ["user", "group"])
def test_rejoining_the_reviewers_does_not_bring_old_tokens_back(two_needed, removed_by):
    user = ReviewerFactory(username="ann")
    api = personal(user)
    reviewers = Group.objects.get(name="reviewers")
    if removed_by == "user":
        user.groups.remove(reviewers)
    else:
        reviewers.user_set.remove(user)
    user.groups.add(reviewers)

    assert decide(api, two_needed).status_code == 401
    _, token = api_client_create(name="ann-desk", scopes=["review"], user=user)
    assert Api(token).get("/api/escalations").status_code == 200  # a new one works


def test_a_token_of_someone_still_reviewing_is_kept_when_another_group_is_left(two_needed, ann):
    user = ApiClient.objects.get(name="ann-laptop").user
    other = Group.objects.create(name="night-shift")
    user.groups.add(other)
    user.groups.remove(other)
    user.save()

    assert ann.get("/api/escalations").status_code == 200


def test_a_personal_token_holds_the_review_scope_alone(db):
    with pytest.raises(ClientRefused, match="review scope alone"):
        api_client_create(name="x", scopes=["review", "read:all"], user=ReviewerFactory())


def test_the_offline_verifier_checks_a_decisions_reviews(two_needed, ann, ben):
    decide(ann, two_needed)
    decision = decide(ben, two_needed).json()
    keys = {decision["key_id"]: decision["public_key"]}

    reviews = verify_decision_reviews(decision, keys)

    assert [(r["reviewer"], r["outcome"]) for r in reviews] == [
        ("ann", "approved"),
        ("ben", "approved"),
    ]


def test_the_offline_verifier_refuses_a_decision_missing_one_of_its_reviews(two_needed, ann, ben):
    decide(ann, two_needed)
    decision = decide(ben, two_needed).json()
    keys = {decision["key_id"]: decision["public_key"]}

    with pytest.raises(VerificationError, match=r"names review [0-9a-f]{64} by ben, which is not"):
        verify_decision_reviews({**decision, "reviews": decision["reviews"][:1]}, keys)


def test_the_offline_verifier_refuses_a_review_altered_after_signing(two_needed, ann, ben):
    decide(ann, two_needed)
    decision = decide(ben, two_needed).json()
    keys = {decision["key_id"]: decision["public_key"]}
    forged = {**decision["reviews"][0], "payload": decision["reviews"][0]["payload"] + " "}

    with pytest.raises(VerificationError, match="review by ann: signature does not verify"):
        verify_decision_reviews({**decision, "reviews": [forged, decision["reviews"][1]]}, keys)


def test_a_review_through_the_api_signs_its_claim_marks(two_needed, ann):
    claim = Claim.objects.get(judgement__proposal=two_needed.proposal)
    body = {
        "outcome": "approved",
        "rationale": "Checked the account history.",
        "claims": [{"claim": claim.pk, "mark": "correct"}],
    }
    response = ann.post(f"/api/escalations/{two_needed.pk}/decision", body)

    assert response.status_code == 202, response.content
    signed = json.loads(Review.objects.get().payload)
    assert [m["mark"] for m in signed["claims"]] == ["correct"]


def test_an_unknown_claim_in_a_review_is_422_and_no_review_is_written(two_needed, ann):
    body = {
        "outcome": "approved",
        "rationale": "Checked the account history.",
        "claims": [{"claim": 999999, "mark": "correct"}],
    }
    response = ann.post(f"/api/escalations/{two_needed.pk}/decision", body)

    assert response.status_code == 422
    assert "999999" in response.json()["detail"]
    assert not Review.objects.exists()


def test_an_audit_on_the_decision_endpoint_is_409_whatever_reviews_are_needed(ann, monkeypatch):
    monkeypatch.setattr(audits, "AUDIT_RANDOM", random.Random(3))
    escalation = audit_of(decided(one_lens_panel(CONTENT, audit_rate=100, reviews_needed=2)))

    response = decide(ann, escalation)

    assert response.status_code == 409
    assert "/audit" in response.json()["detail"]
