"""The guarantee's settings page and its figures on the panel's admin page."""

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.guarantee.models import PanelGuarantee

from .builders import UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db

ADD = "/admin/guarantee/panelguarantee/add/"


@pytest.fixture
def admin_client_ada(client, django_user_model):
    client.force_login(
        django_user_model.objects.create_user("ada", is_staff=True, is_superuser=True)
    )
    return client


def settings(panel, **fields):
    return {"panel": panel.pk, "confidence": "0.95", "audit_focus": "flat", **fields}


def test_setting_a_target_returns_to_the_panel_page_which_says_the_promise(admin_client_ada):
    panel = voting_panel(["pass", "pass", "pass"])
    response = admin_client_ada.post(ADD, settings(panel, target="0.9", confidence="0.99"))
    assert response.status_code == 302
    assert response["Location"] == f"/admin/review/panel/{panel.pk}/change/"
    page = admin_client_ada.get(response["Location"]).content.decode()
    assert (
        "With 99 % confidence, at least 90 % of this panel&#x27;s automatic decisions match "
        "what a reviewer would decide."
    ) in page
    entry = AuditEntry.objects.get(target_type="panel", actor_name="ada")
    assert entry.changes["guarantee target"] == {"old": None, "new": 0.9}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"target": "95"}, "95 looks like a percentage: write it as a share, 0.95."),
        ({"target": "0.3"}, "The target agreement must lie from 0.5 to 0.999"),
        ({"target": "1"}, "The target agreement must lie from 0.5 to 0.999"),
        ({"target": "0.9", "confidence": ""}, "Give a confidence, e.g. 0.95."),
        ({"target": "0.9", "confidence": "0.2"}, "The confidence must lie from 0.5 to 0.999"),
        ({"target": "nan"}, "Enter a number."),
    ],
)
def test_a_setting_out_of_range_is_refused_saying_what_would_do(admin_client_ada, fields, said):
    panel = voting_panel(["pass", "pass", "pass"])
    response = admin_client_ada.post(ADD, settings(panel, **fields))
    assert response.status_code == 200
    assert said in response.content.decode()
    assert not PanelGuarantee.objects.exists()


def test_a_panel_has_one_guarantee(admin_client_ada):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    response = admin_client_ada.post(ADD, settings(panel, target="0.9"))
    assert response.status_code == 200
    assert "already exists" in response.content.decode()


def test_the_panel_page_shows_each_pattern_and_what_it_still_needs(admin_client_ada):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=60, agreed=60)
    page = admin_client_ada.get(f"/admin/review/panel/{panel.pk}/change/").content.decode()
    assert "3 of 3 pass, no checkers" in page
    assert "45 more agreeing labels" in page
    assert "first: 3 of 3 pass, no checkers" in page  # the majority pattern waits on it
    guarantee = PanelGuarantee.objects.get(panel=panel)
    assert f"/admin/guarantee/panelguarantee/{guarantee.pk}/change/" in page


def test_a_panel_without_a_guarantee_links_to_setting_one(admin_client_ada):
    panel = voting_panel(["pass", "pass", "pass"])
    page = admin_client_ada.get(f"/admin/review/panel/{panel.pk}/change/").content.decode()
    assert "No guarantee: this panel decides whenever its quorum is reached" in page
    assert f"{ADD}?panel={panel.pk}" in page


def test_changing_the_settings_keeps_the_panel_and_recomputes_the_standing(admin_client_ada):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    guarantee = PanelGuarantee.objects.get(panel=panel)
    url = f"/admin/guarantee/panelguarantee/{guarantee.pk}/change/"
    response = admin_client_ada.post(
        url, {"target": "0.99", "confidence": "0.95", "audit_focus": "nearest"}
    )
    assert response.status_code == 302
    guarantee.refresh_from_db()
    assert (guarantee.target, guarantee.audit_focus) == (0.99, "nearest")
    note = AuditEntry.objects.filter(actor_name="guarantee").latest("id").note
    assert "not trusted: humans decide" in note
