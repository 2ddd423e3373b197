"""Admin niggles in headless Chromium: live panel refusals, the one-time token page."""

import struct

import pytest
from playwright.sync_api import expect

from reviewapp.review.models import ApiClient, Panel
from tests.factories import LensFactory, PanelFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin_page(open_as):
    def open_page(path, **options):
        ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
        page = open_as(ada, "about:blank", **options)
        page.violations = []
        page.on(
            "console",
            lambda m: (
                page.violations.append(m.text) if "Content Security Policy" in m.text else None
            ),
        )
        page.goto(path)
        return page

    return open_page


def test_a_panel_refusal_shows_at_the_need_as_you_edit_once_and_before_save(admin_page):
    for name in ("accuracy", "policy", "tone"):
        LensFactory(name=name)
    page = admin_page("/admin/review/panel/add/")
    page.fill("#id_name", "gate")
    page.select_option("select[name='panel_lenses-0-lens']", label="accuracy")
    page.select_option("select[name='panel_lenses-1-lens']", label="policy")
    page.fill("#id_need", "1")
    refusal = page.locator("#panel-validation [data-panel-refusal]")
    expect(refusal).to_contain_text("1 of 2 is not a majority")
    expect(refusal).to_contain_text("With 2 lenses the need must be 2.")
    # Right under the field being typed in, not below the lens rows. Measured in the page,
    # waiting out any swap still in flight (an earlier keystroke's answer may land last).
    page.wait_for_function(
        """() => {
            const need = document.querySelector("#id_need").getBoundingClientRect();
            const refusal = document.querySelector("#panel-validation [data-panel-refusal]");
            if (!refusal || !refusal.offsetHeight) return false;
            const gap = refusal.getBoundingClientRect().top - need.bottom;
            return gap >= 0 && gap < 40;
        }"""
    )
    # Fixing it clears the refusal, still without saving.
    page.fill("#id_need", "2")
    expect(page.locator("#panel-validation [data-panel-ok]")).to_contain_text("2 of its lenses")
    assert not Panel.objects.exists()
    # Saved with a refusal, the page shows it once.
    page.fill("#id_need", "3")
    page.click("input[name=_save]")
    message = "a quorum of 3 can never be reached with only 2 judgement(s)"
    expect(page.locator(".errornote").first).to_be_visible()
    expect(page.locator(".field-need .errorlist")).to_contain_text(message)
    expect(page.locator("#id_need")).to_have_attribute("aria-invalid", "true")
    assert page.locator("body").inner_text().count(message) == 1
    assert page.violations == [] and page.errors == []


def test_the_token_page_survives_a_reload_and_copies(admin_page):
    page = admin_page(
        "/admin/review/apiclient/add/", permissions=["clipboard-read", "clipboard-write"]
    )
    page.fill("#id_name", "ingest")
    page.check("input[name=scopes][value=read]")
    page.click("input[name=_save]")
    token = page.locator("#api-token").inner_text().strip()
    assert token.startswith(ApiClient.objects.get(name="ingest").token_prefix)
    page.click("[data-copy]")
    expect(page.locator("[data-copy-status]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == token
    page.reload()
    expect(page.locator("#token-gone")).to_be_visible()
    assert token not in page.content()
    assert ApiClient.objects.filter(name="ingest").count() == 1  # the reload posted nothing
    assert page.violations == [] and page.errors == []


@pytest.mark.parametrize("model", ["lens", "panel"])
def test_the_lens_and_panel_change_pages_fit_390px_without_horizontal_scrolling(
    admin_page, model, tmp_path
):
    lens = LensFactory(name="accuracy-with-a-rather-long-name")
    panel = PanelFactory(name="gate-" + "long-panel-name-" * 4, lenses=[lens])
    pk = {"lens": lens.pk, "panel": panel.pk}[model]
    page = admin_page(f"/admin/review/{model}/{pk}/change/", viewport={"width": 390, "height": 844})
    page.wait_for_load_state("networkidle")
    png = page.screenshot(path=str(tmp_path / f"{model}.png"), full_page=True)
    assert struct.unpack(">II", png[16:24])[0] == 390
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    save = page.locator("input[name=_save]").bounding_box()
    assert save and 0 <= save["x"] and save["x"] + save["width"] <= 390
    assert page.violations == [] and page.errors == []
