import base64

import pytest

from reviewapp.core.signing import verify
from reviewapp.review.models import Decision, Escalation, Proposal
from reviewapp.review.services.escalations import escalation_claim
from tests.factories import ReviewerFactory

from .conftest import api_with, evaluated, unexplained_escalation


@pytest.fixture
def escalation(escalated) -> Escalation:
    return Escalation.objects.get(proposal=escalated)


def decide(api, escalation, **fields):
    body = {"outcome": "approved", "rationale": "Read it; sound.", **fields}
    return api.post(f"/api/escalations/{escalation.pk}/decision", body)


def test_open_escalations_are_listed(api, escalation):
    body = api.get("/api/escalations", {"status": "open"}).json()

    assert body["next_cursor"] is None
    (item,) = body["items"]
    assert item["id"] == escalation.pk
    assert item["proposal"] == escalation.proposal_id
    assert (item["status"], item["reasons"], item["claimed_by"]) == ("open", ["sign_off"], None)


def test_a_listed_escalation_says_why_it_was_raised(api, db):
    proposal = unexplained_escalation()

    (item,) = api.get("/api/escalations").json()["items"]

    assert item["proposal"] == proposal.pk
    assert {"lens_failed", "inconclusive"} <= set(item["reasons"])
    assert "silent" in item["explanation"]
    [failure] = item["lens_failures"]
    assert (failure["lens"], failure["kind"]) == ("silent", "misconfigured")
    assert "no recorded response" in failure["message"] and failure["at"]
    [checker] = item["inconclusive_checkers"]
    assert checker["checker"] == "schema"
    assert "schemas.invalid" in checker["reason"]


# The token lookup, the page with its claimants joined, every row's lens failures.
LIST_QUERIES = 3


@pytest.mark.parametrize("rows", [1, 4])
def test_the_lens_failures_of_every_listed_escalation_take_one_query(
    api, db, django_assert_num_queries, rows
):
    for n in range(rows):
        unexplained_escalation(lens=f"silent-{n}", checker=f"schema-{n}")
    api.get("/api/escalations")  # the token's first use is recorded once, not per request

    with django_assert_num_queries(LIST_QUERIES):
        items = api.get("/api/escalations").json()["items"]

    assert [len(i["lens_failures"]) for i in items] == [1] * rows


def test_an_escalation_is_read_by_id_with_why(api, db):
    proposal = unexplained_escalation()
    escalation = Escalation.objects.get(proposal=proposal)

    body = api.get(f"/api/escalations/{escalation.pk}").json()

    assert (body["id"], body["proposal"], body["status"]) == (escalation.pk, proposal.pk, "open")
    assert [f["kind"] for f in body["lens_failures"]] == ["misconfigured"]
    assert [c["checker"] for c in body["inconclusive_checkers"]] == ["schema"]
    assert "lens silent (misconfigured)" in body["explanation"]
    assert "checker schema" in body["explanation"]


def test_an_escalation_of_another_clients_proposal_is_not_found(escalation):
    other = api_with("read")

    assert other.get(f"/api/escalations/{escalation.pk}").status_code == 404


def test_a_sign_off_escalation_names_no_failure(api, escalation):
    body = api.get(f"/api/escalations/{escalation.pk}").json()

    assert (body["lens_failures"], body["inconclusive_checkers"]) == ([], [])
    assert body["explanation"]


def test_resolved_escalations_are_not_listed_as_open(api, escalation):
    decide(api, escalation)

    assert api.get("/api/escalations", {"status": "open"}).json()["items"] == []
    assert len(api.get("/api/escalations", {"status": "resolved"}).json()["items"]) == 1


def test_unknown_escalation_status_filter_is_422(api, db):
    assert api.get("/api/escalations", {"status": "pending"}).status_code == 422


def test_decision_is_201_and_signed(api, escalation):
    response = decide(api, escalation, outcome="rejected")

    assert response.status_code == 201
    body = response.json()
    assert (body["outcome"], body["basis"]) == ("rejected", "reviewer")
    assert body["proposal"] == escalation.proposal_id
    assert body["decided_by"].startswith("api:")
    assert verify(
        body["payload"].encode(),
        base64.b64decode(body["signature"]),
        base64.b64decode(body["public_key"]),
    )


def test_decision_settles_the_proposal(api, escalation):
    decide(api, escalation)

    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.RESOLVED
    assert Proposal.objects.get().status == Proposal.Status.DECIDED


def test_second_decision_is_409(api, escalation):
    decide(api, escalation)

    response = decide(api, escalation, outcome="rejected")

    assert response.status_code == 409
    assert Decision.objects.get().outcome == "approved"


def test_decision_while_a_reviewer_holds_the_claim_is_409(api, escalation):
    escalation_claim(escalation_id=escalation.pk, user=ReviewerFactory())

    response = decide(api, escalation)

    assert response.status_code == 409
    assert "claimed" in response.json()["detail"]
    assert not Decision.objects.exists()


@pytest.mark.parametrize("rationale", ["", "   ", "\u200b\u200c\u200d\ufeff"], ids=repr)
def test_decision_without_a_rationale_is_422(api, escalation, rationale):
    response = decide(api, escalation, rationale=rationale)

    assert response.status_code == 422
    assert not Decision.objects.exists()


def test_decision_with_an_unknown_outcome_is_422(api, escalation):
    assert decide(api, escalation, outcome="maybe").status_code == 422


def test_decision_on_a_missing_escalation_is_404(api, db):
    response = api.post(
        "/api/escalations/999999/decision", {"outcome": "approved", "rationale": "x"}
    )

    assert response.status_code == 404


def test_review_scope_is_needed_to_decide(escalation):
    response = decide(api_with("read", "judge"), escalation)

    assert response.status_code == 403
    assert not Decision.objects.exists()


@pytest.mark.parametrize("count", [1, 6])
def test_the_list_takes_the_same_queries_however_many_escalations(
    api, db, count, django_assert_num_queries
):
    reviewer = ReviewerFactory()
    for i in range(count):
        proposal = evaluated(f"Ship build {i} on Friday.", requires_sign_off=True)
        escalation_claim(escalation_id=proposal.escalations.get().pk, user=reviewer)
    api.get("/api/escalations")  # the first use of a token records last_used_at

    with django_assert_num_queries(LIST_QUERIES):
        response = api.get("/api/escalations")

    items = response.json()["items"]
    assert len(items) == count and {i["claimed_by"] for i in items} == {reviewer.username}
