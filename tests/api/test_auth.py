from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from reviewapp.review.models import ApiClient, Decision, Escalation
from tests.factories import ReviewerFactory, UserFactory

from .conftest import Api, api_with

CSRF_SECRET = "a" * 32


def session(user, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    if csrf:
        client.cookies["csrftoken"] = CSRF_SECRET
    return client


def test_request_without_credentials_is_401(db):
    response = Api(None).get("/api/proposals")

    assert response.status_code == 401
    assert response.json() == {"detail": "Unauthorized"}
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_unknown_token_is_401(db):
    response = Api("rva_not-a-token-anyone-issued").get("/api/proposals")

    assert response.status_code == 401
    assert "detail" in response.json()


def test_authorization_header_without_bearer_scheme_is_401(db, token):
    response = Client().get("/api/proposals", headers={"Authorization": f"Token {token}"})

    assert response.status_code == 401


def test_revoked_token_is_401(api):
    ApiClient.objects.update(revoked_at=timezone.now())

    assert api.get("/api/proposals").status_code == 401


def test_token_without_the_endpoint_scope_is_403(db):
    response = api_with("submit").get("/api/proposals")

    assert response.status_code == 403
    assert "'read'" in response.json()["detail"]


def test_read_token_cannot_submit(db, panel):
    response = api_with("read").post("/api/proposals", {"panel": panel.name, "content": "x"})

    assert response.status_code == 403


def test_first_use_records_last_used_at(api):
    api.get("/api/proposals")

    assert ApiClient.objects.get().last_used_at is not None


def test_last_used_at_is_written_at_most_once_a_minute(api):
    recent = timezone.now() - timedelta(seconds=10)
    ApiClient.objects.update(last_used_at=recent)

    api.get("/api/proposals")

    assert ApiClient.objects.get().last_used_at == recent


def test_last_used_at_moves_after_a_minute(api):
    stale = timezone.now() - timedelta(minutes=2)
    ApiClient.objects.update(last_used_at=stale)

    api.get("/api/proposals")

    assert ApiClient.objects.get().last_used_at > stale


def test_requests_over_the_per_token_rate_limit_are_429(api, settings):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 2

    statuses = [api.get("/api/proposals").status_code for _ in range(5)]

    # Five requests against a limit of two: even across a window boundary, one is refused.
    assert statuses[:2] == [200, 200]
    assert 429 in statuses[2:]


def test_rate_limited_response_says_when_to_retry(api, settings):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 1
    responses = [api.get("/api/proposals") for _ in range(3)]

    limited = next(r for r in responses if r.status_code == 429)

    assert limited.json()["detail"] == "rate limit exceeded for this token"
    assert 1 <= int(limited["Retry-After"]) <= 61


def test_rate_limit_counts_each_token_separately(api, settings):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 1
    for _ in range(3):
        api.get("/api/proposals")

    assert api_with("read").get("/api/proposals").status_code == 200


def test_reviewer_session_may_read(db):
    response = session(ReviewerFactory()).get("/api/proposals")

    assert response.status_code == 200


def test_staff_session_may_read(db):
    response = session(UserFactory(is_staff=True)).get("/api/escalations")

    assert response.status_code == 200


def test_session_of_an_ordinary_user_is_403(db):
    response = session(UserFactory()).get("/api/proposals")

    assert response.status_code == 403


def test_session_cannot_submit_proposals(db, panel):
    client = session(ReviewerFactory(), csrf=True)

    response = client.post(
        "/api/proposals",
        {"panel": panel.name, "content": "x"},
        content_type="application/json",
        headers={"X-CSRFToken": CSRF_SECRET},
    )

    assert response.status_code == 403


def test_reviewer_session_decision_without_csrf_token_is_403_and_writes_nothing(escalated):
    escalation = Escalation.objects.get()
    client = session(ReviewerFactory(), csrf=True)

    response = client.post(
        f"/api/escalations/{escalation.pk}/decision",
        {"outcome": "approved", "rationale": "Checked."},
        content_type="application/json",
    )

    assert response.status_code == 403
    assert response.json() == {"detail": "CSRF check failed"}
    assert not Decision.objects.exists()


def test_reviewer_session_with_csrf_token_decides_an_escalation(escalated):
    escalation = Escalation.objects.get()
    reviewer = ReviewerFactory()
    client = session(reviewer, csrf=True)

    response = client.post(
        f"/api/escalations/{escalation.pk}/decision",
        {"outcome": "approved", "rationale": "Checked."},
        content_type="application/json",
        headers={"X-CSRFToken": CSRF_SECRET},
    )

    assert response.status_code == 201
    assert response.json()["decided_by"] == reviewer.username
    assert Decision.objects.get().decided_by == reviewer


@pytest.mark.parametrize("make_user", [UserFactory, lambda: UserFactory(is_staff=True)])
def test_session_that_is_not_a_reviewer_cannot_decide(escalated, make_user):
    escalation = Escalation.objects.get()
    client = session(make_user(), csrf=True)

    response = client.post(
        f"/api/escalations/{escalation.pk}/decision",
        {"outcome": "approved", "rationale": "Checked."},
        content_type="application/json",
        headers={"X-CSRFToken": CSRF_SECRET},
    )

    assert response.status_code == 403
    assert not Decision.objects.exists()
