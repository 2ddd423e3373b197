"""API clients through the admin: the token is shown once, stored hashed, revocable."""

import re

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import ApiClient
from reviewapp.review.services.clients import api_client_create, api_client_for_token
from tests.factories import ReviewerFactory

from .helpers import add_url, change_url

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'id="api-token">([^<]+)<')


def create(client, name="ingest", scopes=("submit", "read"), **kwargs):
    return client.post(add_url("apiclient"), {"name": name, "scopes": list(scopes)}, **kwargs)


def test_the_token_is_shown_once_and_stored_only_hashed_with_a_prefix(admin_client_ada):
    response = create(admin_client_ada, follow=True)
    assert response.redirect_chain[0][1] == 302  # post/redirect/get
    assert "no-store" in response["Cache-Control"]
    token = TOKEN.search(response.content.decode()).group(1)
    api_client = ApiClient.objects.get(name="ingest")
    assert token.startswith(api_client.token_prefix)
    assert api_client.token_hash == ApiClient.hash_token(token)
    assert token not in (api_client.token_hash, api_client.token_prefix)
    assert api_client.scopes == ["submit", "read"]
    assert api_client_for_token(token) == api_client

    for url in (
        change_url("apiclient", api_client.pk),
        "/admin/review/apiclient/",
        "/admin/audit/auditentry/",
        f"/admin/audit/auditentry/{AuditEntry.objects.get().pk}/change/",
    ):
        page = admin_client_ada.get(url).content.decode()
        assert token not in page, url
    assert (
        api_client.token_prefix
        in admin_client_ada.get(change_url("apiclient", api_client.pk)).content.decode()
    )


def test_reloading_the_token_page_shows_it_no_more_and_creates_nothing(admin_client_ada):
    response = create(admin_client_ada)
    assert response.status_code == 302
    first = admin_client_ada.get(response["Location"]).content.decode()
    token = TOKEN.search(first).group(1)
    assert "data-copy=\"#api-token\"" in first  # the copy button
    again = admin_client_ada.get(response["Location"])
    assert again.status_code == 200
    body = again.content.decode()
    assert token not in body and 'id="token-gone"' in body
    assert "revoke this client and create a new one" in body
    assert ApiClient.objects.filter(name="ingest").count() == 1


def test_the_token_page_of_another_client_shows_no_token(admin_client_ada):
    first = create(admin_client_ada)
    other = ApiClient.objects.create(
        name="other", token_prefix="rvw_x", token_hash="0" * 64, scopes=["read"]
    )
    page = admin_client_ada.get(f"/admin/review/apiclient/{other.pk}/token/").content.decode()
    assert 'id="api-token"' not in page
    # The pending token still waits for its own page.
    assert TOKEN.search(admin_client_ada.get(first["Location"]).content.decode())


def test_creation_needs_a_scope_and_a_free_name(admin_client_ada):
    assert "This field is required" in create(admin_client_ada, scopes=()).content.decode()
    create(admin_client_ada)
    again = create(admin_client_ada).content.decode()
    assert "already exists" in again
    assert ApiClient.objects.count() == 1


def test_revoking_stops_the_token_and_is_audited(admin_client_ada):
    token = TOKEN.search(create(admin_client_ada, follow=True).content.decode()).group(1)
    api_client = ApiClient.objects.get()
    response = admin_client_ada.post(
        "/admin/review/apiclient/", {"action": "revoke", "_selected_action": [api_client.pk]}
    )
    assert response.status_code == 302
    api_client.refresh_from_db()
    assert api_client.revoked_at is not None
    assert api_client_for_token(token) is None
    entry = AuditEntry.objects.get(action="revoke")
    assert entry.target_type == "api client" and entry.actor.username == "ada"
    assert entry.changes["revoked_at"]["old"] is None
    page = admin_client_ada.get("/admin/review/apiclient/").content.decode()
    assert "revoked" in page


def test_revoke_from_the_change_page(admin_client_ada):
    create(admin_client_ada)
    api_client = ApiClient.objects.get()
    response = admin_client_ada.post(
        change_url("apiclient", api_client.pk),
        {"CHANGE_FORM-action": "revoke", "action": "revoke", "_selected_action": [api_client.pk]},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    api_client.refresh_from_db()
    assert api_client.revoked_at is not None


def test_scopes_can_be_changed_and_the_diff_is_audited(admin_client_ada):
    create(admin_client_ada)
    api_client = ApiClient.objects.get()
    response = admin_client_ada.post(
        change_url("apiclient", api_client.pk), {"name": "ingest", "scopes": ["read"]}
    )
    assert response.status_code == 302
    api_client.refresh_from_db()
    assert api_client.scopes == ["read"]
    entry = AuditEntry.objects.get(action="update")
    assert entry.changes == {"scopes": {"old": ["submit", "read"], "new": ["read"]}}


def test_last_used_is_listed(admin_client_ada):
    create(admin_client_ada)
    page = admin_client_ada.get("/admin/review/apiclient/").content.decode()
    assert "Last used at" in page or "last used" in page.lower()


def test_a_personal_token_cannot_be_given_more_than_the_review_scope_in_the_admin(
    admin_client_ada,
):
    # Attack: an admin widens a reviewer's personal token to submit and read:all; the token
    # would act as that person beyond reviewing, which creating one refuses.
    personal, _ = api_client_create(
        name="ann/laptop", scopes=["review"], user=ReviewerFactory(username="ann")
    )

    response = admin_client_ada.post(
        change_url("apiclient", personal.pk),
        {"name": "ann/laptop", "scopes": ["review", "submit", "read:all"]},
    )

    assert response.status_code == 200
    assert "review scope alone" in response.content.decode()
    personal.refresh_from_db()
    assert personal.scopes == ["review"]
