import pytest

from tests.factories import UserFactory


@pytest.fixture
def superuser(db):
    return UserFactory(username="ada", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client_ada(client, superuser):
    client.force_login(superuser)
    return client
