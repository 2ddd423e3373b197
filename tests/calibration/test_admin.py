"""The admin: a lens's agreement on its page, its floor explained, a panel's pairs."""

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.calibration.models import LensFloor
from reviewapp.calibration.services import floor_update
from tests.calibration.builders import adjudicated, agreeing, disagreeing, many, panel_of
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(UserFactory(username="ada", is_staff=True, is_superuser=True))
    return client


def test_the_lens_page_shows_its_agreement_with_the_reviewers(admin_client):
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(10) + disagreeing(2))
    html = admin_client.get(f"/admin/review/lens/{lens.pk}/change/").content.decode()
    assert "12 proposals</a> decided by a reviewer (12 escalations, 0 audits)" in html
    assert "Agreement 83.3%" in html and "95 % interval" in html


def test_the_lens_page_shows_the_share_of_its_claims_marked_incorrect(admin_client):
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "rejected", marks={lens: ["incorrect", "correct"]})
    html = admin_client.get(f"/admin/review/lens/{lens.pk}/change/").content.decode()
    assert "Claims marked incorrect: 50.0% of 2 marked." in html


def test_the_lens_page_says_why_no_share_of_claims_is_shown(admin_client):
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "approved")
    html = admin_client.get(f"/admin/review/lens/{lens.pk}/change/").content.decode()
    assert "Claims marked incorrect: — (no claim of this lens was marked" in html


def test_the_lens_page_flags_a_lens_below_its_floor(admin_client):
    panel, (lens,) = panel_of("alpha")
    floor_update(lens=lens, floor=0.4, window=10)
    many(panel, lens, disagreeing(10))
    html = admin_client.get(f"/admin/review/lens/{lens.pk}/change/").content.decode()
    assert 'data-drifting="alpha"' in html


def test_the_floor_page_explains_the_defaults(admin_client):
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "approved")
    floor = LensFloor.objects.get(lens=lens)
    html = admin_client.get(f"/admin/calibration/lensfloor/{floor.pk}/change/").content.decode()
    assert "Defaults: floor 0.4" in html and "last 50 adjudications" in html


def test_changing_a_floor_in_the_admin_is_audited(admin_client):
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "approved")
    floor = LensFloor.objects.get(lens=lens)
    response = admin_client.post(
        f"/admin/calibration/lensfloor/{floor.pk}/change/", {"floor": "0.6", "window": "30"}
    )
    assert response.status_code == 302
    floor.refresh_from_db()
    assert (floor.floor, floor.window) == (0.6, 30)
    entry = AuditEntry.objects.get(note="agreement floor")
    assert entry.changes["floor"] == {"old": 0.4, "new": 0.6}


def test_a_window_below_the_minimum_is_refused_in_the_admin(admin_client):
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "approved")
    floor = LensFloor.objects.get(lens=lens)
    response = admin_client.post(
        f"/admin/calibration/lensfloor/{floor.pk}/change/", {"floor": "0.6", "window": "3"}
    )
    assert response.status_code == 200  # the form again, with the error
    floor.refresh_from_db()
    assert floor.window == 50


def test_the_panel_page_flags_lenses_that_fail_together(admin_client):
    panel, (a, b) = panel_of("alpha", "beta")
    for i in range(30):
        wrong = i < 6
        outcome = "rejected" if wrong else ("approved" if i % 2 else "rejected")
        verdict = "pass" if (wrong or outcome == "approved") else "fail"
        adjudicated(panel, {a: verdict, b: verdict}, outcome)
    html = admin_client.get(f"/admin/review/panel/{panel.pk}/change/").content.decode()
    assert 'data-fail-together="alpha|beta"' in html
    assert "These lenses fail together" in html


def test_the_panel_page_names_the_window_of_its_pairs_and_audits(admin_client):
    panel, (a, b) = panel_of("alpha", "beta")
    adjudicated(panel, {a: "pass", b: "pass"}, "approved")
    html = admin_client.get(f"/admin/review/panel/{panel.pk}/change/").content.decode()
    assert "No pair of its lenses errs together beyond chance (1 pair, all decisions to date)" in (
        html
    )


def test_a_floor_is_added_in_the_admin_for_a_lens_without_one(admin_client):
    panel, (lens,) = panel_of("alpha")
    response = admin_client.post(
        "/admin/calibration/lensfloor/add/", {"lens": lens.pk, "floor": "0.5", "window": "20"}
    )
    assert response.status_code == 302
    floor = LensFloor.objects.get(lens=lens)
    assert (floor.floor, floor.window) == (0.5, 20)
