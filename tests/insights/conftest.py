import pytest
from django.contrib.auth.models import Group

from tests.factories import ReviewerFactory, UserFactory


@pytest.fixture
def reviewer(db):
    return ReviewerFactory(username="rita")


@pytest.fixture
def second_reviewer(db):
    return ReviewerFactory(username="sam")


@pytest.fixture
def outsider(db):
    Group.objects.get_or_create(name="reviewers")
    return UserFactory(username="olga")


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client
