"""A proposal the guarantee held, as the inbox and its page show it."""

import pytest

from tests.factories import ReviewerFactory
from tests.review.helpers import evaluate_in_process, submit

from .builders import CONTENT, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer_client(client):
    client.force_login(ReviewerFactory())
    return client


def held_proposal():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=30, agreed=29)
    return evaluate_in_process(submit(panel, CONTENT, title="Sorting advice"))


def test_the_inbox_shows_the_reason_the_would_be_outcome_and_the_pattern_figures(
    reviewer_client,
):
    held_proposal()
    page = reviewer_client.get("/").content.decode()
    assert 'badge--below_guarantee">Below guarantee' in page
    assert (
        "would be approved · 3 of 3 pass, no checkers · 29 of 30 human labels agreed · lower bound"
    ) in page
    assert "of a 95 % target" in page


def test_the_inbox_filters_by_the_reason(reviewer_client):
    held_proposal()
    page = reviewer_client.get("/", {"reason": "below_guarantee"}).content.decode()
    assert "Sorting advice" in page
    assert (
        reviewer_client.get("/", {"reason": "sign_off"}).content.decode().count("Sorting advice")
        == 0
    )


def test_the_proposal_page_explains_the_hold_in_full(reviewer_client):
    proposal = held_proposal()
    page = reviewer_client.get(f"/proposals/{proposal.pk}").content.decode()
    assert "would have approved it, but the panel&#x27;s guarantee does not trust" in page
    assert "more agreeing labels" in page
