import pytest
from django.contrib.auth.models import Group

from reviewapp.review.models import Escalation
from tests.factories import ReviewerFactory, UserFactory

from .builders import make_panel, split_panel_proposal


@pytest.fixture
def reviewer(db):
    return ReviewerFactory(username="rita")


@pytest.fixture
def second_reviewer(db):
    return ReviewerFactory(username="sam")


@pytest.fixture
def staff_user(db):
    return UserFactory(username="stella", is_staff=True)


@pytest.fixture
def outsider(db):
    Group.objects.get_or_create(name="reviewers")
    return UserFactory(username="olga")


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def panel(db):
    return make_panel("accuracy", "tone")


@pytest.fixture
def escalated(panel):
    proposal = split_panel_proposal(panel, title="Split verdict", external_ref="ext-42")
    assert proposal.status == "escalated"
    return proposal


@pytest.fixture
def escalation(escalated):
    return Escalation.objects.get(proposal=escalated)
