"""The admin binds API clients to external lenses and grants read:all explicitly."""

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import ApiClient, Lens
from reviewapp.review.services.clients import ClientRefused, api_client_create, api_client_update
from tests.factories import LensFactory

from .helpers import add_url, change_url, errors_of, external_lens_data

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


def test_an_external_lens_naming_a_client_without_the_judge_scope_is_refused(admin_client_ada):
    reader, _ = api_client_create(name="reader-bot", scopes=["read", "submit"])
    team, _ = api_client_create(name="team-a", scopes=["judge"])
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)

    response = admin_client_ada.post(
        change_url("lens", lens.pk), external_lens_data(judge_clients=[team.pk, reader.pk])
    )

    assert response.status_code == 200
    error = errors_of(response)
    assert "API client 'reader-bot' lacks the 'judge' scope" in error
    assert "team-a" not in error
    assert list(lens.judge_clients.all()) == []


def test_a_non_external_lens_ignores_the_judge_scope_of_ticked_clients(admin_client_ada):
    reader, _ = api_client_create(name="reader-bot", scopes=["read"])

    response = admin_client_ada.post(
        add_url("lens"),
        external_lens_data(backend="recorded", judge_clients=[reader.pk]),
    )

    assert response.status_code == 302


def test_removing_judge_from_a_client_bound_to_an_external_lens_is_refused_naming_it(
    admin_client_ada,
):
    team, _ = api_client_create(name="team-a", scopes=["judge", "read"])
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    lens.judge_clients.add(team)

    response = admin_client_ada.post(
        change_url("apiclient", team.pk), {"name": "team-a", "scopes": ["read"]}
    )

    assert response.status_code == 200
    assert (
        "Cannot remove the 'judge' scope from 'team-a': external lens 'outside' names it"
        in errors_of(response)
    )
    team.refresh_from_db()
    assert team.scopes == ["judge", "read"]
    assert not AuditEntry.objects.filter(target_type="api client", action="update").exists()


def test_removing_judge_from_a_client_no_external_lens_names_is_allowed(admin_client_ada):
    team, _ = api_client_create(name="team-a", scopes=["judge", "read"])
    LensFactory(name="inside", backend=Lens.Backend.RECORDED).judge_clients.add(team)

    response = admin_client_ada.post(
        change_url("apiclient", team.pk), {"name": "team-a", "scopes": ["read"]}
    )

    assert response.status_code == 302
    team.refresh_from_db()
    assert team.scopes == ["read"]


def test_the_update_service_refuses_removing_judge_from_a_bound_client():
    team, _ = api_client_create(name="team-a", scopes=["judge"])
    LensFactory(name="outside", backend=Lens.Backend.EXTERNAL).judge_clients.add(team)

    with pytest.raises(ClientRefused, match="external lens 'outside'"):
        api_client_update(client=team, name="team-a", scopes=["read"])

    team.refresh_from_db()
    assert team.scopes == ["judge"]
