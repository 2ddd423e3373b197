"""The calibration admin in headless Chromium at desktop and phone width: words, not ids."""

import pytest
from playwright.sync_api import expect

from reviewapp.calibration.models import LensFloor
from reviewapp.calibration.services import floor_update
from tests.calibration.builders import agreeing, disagreeing, many, panel_of
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def as_admin(open_as):
    def open_page(path, viewport):
        ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
        return open_as(ada, path, viewport=WIDTHS[viewport])

    return open_page


@pytest.mark.parametrize("viewport", WIDTHS)
def test_the_floors_list_says_which_lens_is_below_its_floor_in_words(as_admin, viewport):
    _, (drifting, healthy) = panel_of("drifty", "steady")
    floor_update(lens=drifting, floor=0.4, window=10)
    floor_update(lens=healthy, floor=0.4, window=10)
    LensFloor.objects.filter(lens=drifting).update(drifting=True, last_kappa=-0.19999999999999996)
    LensFloor.objects.filter(lens=healthy).update(last_kappa=0.8000000000000002)
    page = as_admin("/admin/calibration/lensfloor/", viewport)
    rows = page.locator("#result_list tbody tr")
    drifting_row = rows.filter(has_text="drifty")
    healthy_row = rows.filter(has_text="steady")
    expect(drifting_row).to_contain_text("below its floor")
    expect(drifting_row).to_contain_text("-0.200 (over its last 10 decisions)")
    expect(healthy_row).to_contain_text("at or above its floor")
    expect(healthy_row).to_contain_text("0.800")
    # Django's boolean icons read a green tick as good: none here.
    assert page.locator("#result_list img[src*='icon-']").count() == 0
    assert "0.19999" not in page.content() and "0.80000" not in page.content()
    assert page.errors == []


@pytest.mark.parametrize("viewport", WIDTHS)
def test_a_window_below_the_minimum_is_refused_naming_the_minimum(as_admin, viewport):
    _, (lens,) = panel_of("alpha")
    floor = floor_update(lens=lens, floor=0.4, window=50)
    page = as_admin(f"/admin/calibration/lensfloor/{floor.pk}/change/", viewport)
    page.fill("#id_window", "5")
    page.click("input[name=_save]")
    error = page.locator(".field-window .errorlist")
    expect(error).to_contain_text("at least 10 decisions")
    assert "lens_floor_window_min" not in page.content()
    assert LensFloor.objects.get(pk=floor.pk).window == 50


def test_a_saved_floor_is_named_by_its_lens(as_admin):
    _, (lens,) = panel_of("alpha")
    floor = floor_update(lens=lens, floor=0.4, window=50)
    page = as_admin(f"/admin/calibration/lensfloor/{floor.pk}/change/", "desktop")
    page.fill("#id_floor", "0.5")
    page.click("input[name=_save]")
    message = page.locator(".messagelist")
    expect(message).to_contain_text("alpha: floor 0.5 over its last 50 decisions")
    expect(message).not_to_contain_text(f"lens {lens.pk}")


def test_a_panels_lens_rows_are_named_by_their_lenses(as_admin):
    panel, _ = panel_of("accuracy", "policy")
    page = as_admin(f"/admin/review/panel/{panel.pk}/change/", "desktop")
    rows = page.locator(".inline-related tbody tr.has_original td.original p")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_text("accuracy in panel " + panel.name)
    expect(rows.nth(1)).to_have_text("policy in panel " + panel.name)


@pytest.mark.parametrize("viewport", WIDTHS)
def test_the_lens_page_says_whether_to_trust_the_lens_and_over_which_window(as_admin, viewport):
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(6) + disagreeing(6))
    page = as_admin(f"/admin/review/lens/{lens.pk}/change/", viewport)
    standing = page.locator("[data-standing]")
    expect(standing).to_have_attribute("data-standing", "watch")
    expect(standing).to_contain_text("Watch: kappa 0.00, but its 95 % interval")
    expect(standing).to_contain_text("straddles its floor 0.4")
    expect(page.locator("#content-main")).to_contain_text(
        "Over all decisions to date: 12 proposals"
    )
