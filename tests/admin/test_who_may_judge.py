"""The admin binds API clients to external lenses and grants read:all explicitly."""

import pytest

from reviewapp.review.models import ApiClient, Lens
from reviewapp.review.services.clients import api_client_create
from tests.factories import LensFactory

from .helpers import add_url, change_url, external_lens_data

pytestmark = pytest.mark.django_db


def test_an_admin_binds_the_clients_that_may_judge_an_external_lens(admin_client_ada):
    team, _ = api_client_create(name="team-a", scopes=["judge"])
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)

    response = admin_client_ada.post(
        change_url("lens", lens.pk), external_lens_data(judge_clients=[team.pk])
    )

    assert response.status_code == 302
    assert list(lens.judge_clients.all()) == [team]
    page = admin_client_ada.get("/admin/review/lens/").content.decode()
    assert "team-a" in page


def test_saving_an_external_lens_naming_no_client_warns_that_it_accepts_none(admin_client_ada):
    response = admin_client_ada.post(add_url("lens"), external_lens_data(), follow=True)

    assert "accepts no judgement" in response.content.decode()
    assert Lens.objects.get(name="outside").allow_self_judgement is False


def test_read_all_is_offered_and_granted_only_when_ticked(admin_client_ada):
    page = admin_client_ada.get(add_url("apiclient")).content.decode()
    assert 'value="read:all"' in page

    admin_client_ada.post(add_url("apiclient"), {"name": "auditor", "scopes": ["read", "read:all"]})
    admin_client_ada.post(add_url("apiclient"), {"name": "agent", "scopes": ["read"]})

    assert ApiClient.objects.get(name="auditor").scopes == ["read", "read:all"]
    assert ApiClient.objects.get(name="agent").scopes == ["read"]
    listing = admin_client_ada.get("/admin/review/apiclient/").content.decode()
    assert "read, read:all" in listing


def test_an_external_lens_naming_no_client_says_so_in_the_admin(admin_client_ada):
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)

    page = admin_client_ada.get(f"/admin/review/lens/{lens.pk}/change/").content.decode()
    listing = admin_client_ada.get("/admin/review/lens/").content.decode()

    assert "accepts no judgement" in page
    assert "accepts no judgement" in listing
