import pytest
from django.urls import reverse

from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.insights.urls")]

PAGES = ["dashboard", "export_proposals_csv", "export_proposals_jsonl"]


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_visitors_are_sent_to_log_in(client, name):
    url = reverse(name)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


@pytest.mark.parametrize("name", PAGES)
def test_signed_in_non_reviewers_are_refused(client, outsider, name):
    client.force_login(outsider)
    assert client.get(reverse(name)).status_code == 403


@pytest.mark.parametrize("name", PAGES)
def test_reviewers_and_staff_may(client, reviewer, name):
    client.force_login(reviewer)
    assert client.get(reverse(name)).status_code == 200
    client.force_login(UserFactory(username="stella", is_staff=True))
    assert client.get(reverse(name)).status_code == 200


@pytest.mark.parametrize("name", PAGES)
def test_only_get(client, reviewer, name):
    client.force_login(reviewer)
    assert client.post(reverse(name)).status_code == 405
