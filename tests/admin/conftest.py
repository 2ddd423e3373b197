import pytest

from tests.factories import ReviewerFactory, UserFactory


@pytest.fixture
def superuser(db):
    return UserFactory(username="ada", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client_ada(client, superuser):
    client.force_login(superuser)
    return client


@pytest.fixture
def reviewer(db):
    return ReviewerFactory(username="rita")
