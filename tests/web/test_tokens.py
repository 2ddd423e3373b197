"""My tokens: a reviewer makes, sees and revokes their personal API tokens."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.review.models import ApiClient
from reviewapp.review.services.clients import api_client_for_token
from tests.factories import ReviewerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ann_client():
    client = Client()
    client.force_login(ReviewerFactory(username="ann"))
    return client


def test_creating_a_token_shows_it_once_and_binds_it_to_the_reviewer(ann_client):
    html = ann_client.post(reverse("my_tokens"), {"name": "laptop"}).content.decode()

    token = re.search(r'<pre class="code-block" id="new-token">([^<]+)</pre>', html).group(1)
    client = api_client_for_token(token)
    assert (client.name, client.user.username, client.scopes) == ("ann/laptop", "ann", ["review"])
    assert token not in ann_client.get(reverse("my_tokens")).content.decode()


def test_a_blank_token_name_is_400_and_creates_nothing(ann_client):
    response = ann_client.post(reverse("my_tokens"), {"name": "  "})

    assert response.status_code == 400
    assert not ApiClient.objects.exists()


def test_a_reviewer_sees_only_their_own_tokens(ann_client):
    ann_client.post(reverse("my_tokens"), {"name": "laptop"})
    other = Client()
    other.force_login(ReviewerFactory(username="ben"))

    assert "ann/laptop" not in other.get(reverse("my_tokens")).content.decode()


def test_revoking_a_token_ends_it(ann_client):
    ann_client.post(reverse("my_tokens"), {"name": "laptop"})
    client = ApiClient.objects.get()

    ann_client.post(reverse("my_token_revoke", args=[client.pk]))

    client.refresh_from_db()
    assert client.revoked_at is not None


def test_nobody_revokes_anothers_token(ann_client):
    ann_client.post(reverse("my_tokens"), {"name": "laptop"})
    client = ApiClient.objects.get()
    other = Client()
    other.force_login(ReviewerFactory(username="ben"))

    other.post(reverse("my_token_revoke", args=[client.pk]))

    client.refresh_from_db()
    assert client.revoked_at is None


def test_a_long_username_and_token_name_is_400_not_a_name_the_database_refuses():
    # An e-mail-style username of 45 characters plus a 60-character token name made an
    # API client name past its 100 characters: PostgreSQL refused it and the page was a 500.
    username = "firstname.lastname@claims-division.example.org"
    client = Client()
    client.force_login(ReviewerFactory(username=username))

    response = client.post(reverse("my_tokens"), {"name": "x" * 60})

    assert response.status_code == 400
    assert "1 to 53 characters" in response.content.decode()
    assert not ApiClient.objects.exists()
    assert client.post(reverse("my_tokens"), {"name": "x" * 53}).status_code == 200
    assert ApiClient.objects.get().name == f"{username}/{'x' * 53}"


def test_a_reviewer_holds_at_most_ten_live_tokens(ann_client):
    # Each token has its own rate budget and its own row: minting them in a loop multiplied
    # the per-token limit and grew the table (and this page) without bound.
    for n in range(10):
        assert ann_client.post(reverse("my_tokens"), {"name": f"t{n}"}).status_code == 200

    response = ann_client.post(reverse("my_tokens"), {"name": "one-more"})

    assert response.status_code == 400
    assert "10 live tokens" in response.content.decode()
    assert ApiClient.objects.count() == 10
    ann_client.post(reverse("my_token_revoke", args=[ApiClient.objects.first().pk]))
    assert ann_client.post(reverse("my_tokens"), {"name": "one-more"}).status_code == 200
