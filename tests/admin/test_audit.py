"""Every configuration change is recorded: who, when, what changed; read-only in the admin."""

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import Lens
from reviewapp.review.services.clients import api_client_create
from tests.factories import CheckerFactory, LensFactory

from .helpers import add_url, change_url, external_lens_data, panel_form_data
from .test_checkers import checker_data
from .test_lenses import lens_data

pytestmark = pytest.mark.django_db


def test_lens_create_update_are_recorded_with_a_field_diff(admin_client_ada):
    admin_client_ada.post(add_url("lens"), lens_data())
    created = AuditEntry.objects.get(action="create", target_type="lens")
    assert created.actor.username == "ada" and created.actor_name == "ada"
    assert created.changes["name"] == {"old": None, "new": "accuracy"}
    assert created.created_at is not None

    lens_id = created.target_id
    admin_client_ada.post(change_url("lens", lens_id), lens_data(instructions="Sharper."))
    updated = AuditEntry.objects.get(action="update", target_type="lens")
    assert updated.changes == {
        "instructions": {"old": "Is it correct?", "new": "Sharper."},
        "version": {"old": 1, "new": 2},
    }

    # A save that changes nothing records nothing.
    admin_client_ada.post(change_url("lens", lens_id), lens_data(instructions="Sharper."))
    assert AuditEntry.objects.filter(target_type="lens").count() == 2


def test_binding_and_unbinding_the_clients_that_may_judge_a_lens_is_recorded(admin_client_ada):
    team, _ = api_client_create(name="team-a", scopes=["judge"])
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)

    admin_client_ada.post(change_url("lens", lens.pk), external_lens_data(judge_clients=[team.pk]))
    admin_client_ada.post(change_url("lens", lens.pk), external_lens_data(judge_clients=[]))

    bound, unbound = AuditEntry.objects.filter(target_type="lens").order_by("pk")
    assert bound.changes["judge_clients"] == {"old": [], "new": ["team-a"]}
    assert unbound.changes["judge_clients"] == {"old": ["team-a"], "new": []}


def test_panel_changes_record_the_lens_list_and_the_version(admin_client_ada):
    a, b, c = (LensFactory(name=n) for n in ("a", "b", "c"))
    admin_client_ada.post(add_url("panel"), panel_form_data(name="p", need=2, lenses=[a, b, c]))
    created = AuditEntry.objects.get(action="create", target_type="panel")
    assert created.changes["lenses"] == {"old": None, "new": ["a", "b", "c"]}
    from reviewapp.review.models import Panel

    panel = Panel.objects.get()
    admin_client_ada.post(
        change_url("panel", panel.pk),
        panel_form_data(name="p", need=2, lenses=[c, a, b], panel=panel),
    )
    updated = AuditEntry.objects.get(action="update", target_type="panel")
    assert updated.changes == {
        "lenses": {"old": ["a", "b", "c"], "new": ["c", "a", "b"]},
        "version": {"old": 1, "new": 2},
    }


def test_checker_changes_and_deletes_are_recorded(admin_client_ada):
    checker = CheckerFactory(
        name="gate", kind="regex", settings={"pattern": "a", "must_match": True}
    )
    admin_client_ada.post(
        change_url("checkerconfig", checker.pk),
        checker_data(kind="regex", pattern="b", must_match="on"),
    )
    updated = AuditEntry.objects.get(action="update", target_type="checker")
    assert updated.changes["settings"] == {
        "old": {"pattern": "a", "must_match": True},
        "new": {"pattern": "b", "must_match": True},
    }
    admin_client_ada.post(f"/admin/review/checkerconfig/{checker.pk}/delete/", {"post": "yes"})
    deleted = AuditEntry.objects.get(action="delete", target_type="checker")
    assert deleted.target_repr == "gate"


def test_the_audit_log_is_visible_and_read_only(admin_client_ada):
    admin_client_ada.post(add_url("lens"), lens_data())
    entry = AuditEntry.objects.get()
    listing = admin_client_ada.get("/admin/audit/auditentry/").content.decode()
    assert "accuracy" in listing and "create" in listing
    page = admin_client_ada.get(f"/admin/audit/auditentry/{entry.pk}/change/")
    assert page.status_code == 200
    assert "Is it correct?" in page.content.decode()
    assert admin_client_ada.get("/admin/audit/auditentry/add/").status_code == 403
    assert (
        admin_client_ada.post(
            f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
    with pytest.raises(ValueError):
        entry.save()
    with pytest.raises(ValueError):
        entry.delete()
