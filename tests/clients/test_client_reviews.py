"""The Python client with personal tokens: a review that decides nothing yet, then the
decision with the reviews it names, verified offline."""

import pytest
from reviewapp_client import Client, Decision, ReviewStatus, verify_decision_reviews

from reviewapp.review.models import Escalation
from reviewapp.review.services.clients import api_client_create
from tests.api.conftest import evaluated
from tests.factories import ReviewerFactory


def _personal(live_server, username: str) -> Client:
    user = ReviewerFactory(username=username)
    _, token = api_client_create(name=f"{username}-cli", scopes=["review"], user=user)
    return Client(live_server.url, token)


@pytest.fixture
def escalation_id(transactional_db) -> int:
    proposal = evaluated("Close account 7731.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal).pk


def test_two_personal_tokens_review_and_the_second_gets_the_decision(live_server, escalation_id):
    with _personal(live_server, "ann") as ann, _personal(live_server, "ben") as ben:
        first = ann.decide(escalation_id, "approved", "Checked the history.")
        second = ben.decide(escalation_id, "approved", "Checked the owner.")
        keys = ann.keys()

    assert first == ReviewStatus("awaiting_reviews", 1, 2)
    assert isinstance(second, Decision)
    reviews = verify_decision_reviews(second, keys)
    assert [r["reviewer"] for r in reviews] == ["ann", "ben"]
