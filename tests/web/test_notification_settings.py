"""A reviewer chooses when to hear about work; a refusal keeps what they chose."""

import pytest

from reviewapp.notifications.models import Preference

pytestmark = pytest.mark.django_db

URL = "/settings/notifications"


def test_a_reviewer_sees_at_once_as_the_default(reviewer_client):
    page = reviewer_client.get(URL).content.decode()

    assert 'value="immediate" checked' in page and "My notifications" in page


def test_a_reviewer_chooses_a_digest_every_n_minutes(reviewer_client, reviewer):
    response = reviewer_client.post(URL, {"mode": "digest", "digest_minutes": "30"})

    assert response.status_code == 302
    preference = Preference.objects.get(user=reviewer)
    assert (preference.mode, preference.digest_minutes) == ("digest", 30)
    assert 'value="digest" checked' in reviewer_client.get(URL).content.decode()


@pytest.mark.parametrize(
    "minutes, says",
    [("soon", "is not a number of minutes"), ("0", "every 1 to 10080 minutes")],
)
def test_a_bad_period_is_refused_saying_why_and_keeping_the_choice(reviewer_client, minutes, says):
    response = reviewer_client.post(URL, {"mode": "digest", "digest_minutes": minutes})

    page = response.content.decode()
    assert response.status_code == 400 and says in page
    assert 'value="digest" checked' in page
    assert not Preference.objects.exists()


def test_someone_signed_out_is_sent_to_log_in(client):
    response = client.get(URL)

    assert response.status_code == 302 and "/login/" in response["Location"]
