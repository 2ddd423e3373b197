"""/dashboard/lenses in headless Chromium: its layout at desktop and phone width, and what
it tells an admin to do with each lens."""

import pytest
from playwright.sync_api import expect

from reviewapp.calibration.models import LensFloor
from tests.calibration.builders import adjudicated, panel_of
from tests.factories import ReviewerFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1366, "height": 900}
WIDE = {"width": 1920, "height": 1080}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def judged_lenses(transactional_db):
    """ "accuracy" agrees with the reviewers on all 20; "tone-of-voice" on only 6."""
    panel, (accuracy, tone) = panel_of("accuracy", "tone-of-voice")
    for i in range(20):
        outcome = "approved" if i % 2 else "rejected"
        right = "pass" if outcome == "approved" else "fail"
        wrong = "fail" if right == "pass" else "pass"
        adjudicated(panel, {accuracy: right, tone: right if i < 6 else wrong}, outcome)
    LensFloor.objects.filter(lens=tone).update(drifting=True, last_kappa=-0.19999999999999996)
    return accuracy, tone


@pytest.fixture
def open_lenses(open_as):
    def open_page(viewport):
        return open_as(ReviewerFactory(username="rita"), "/dashboard/lenses", viewport=viewport)

    return open_page


def _overflows(page, selector: str) -> bool:
    return page.locator(selector).evaluate("el => el.scrollWidth > el.clientWidth + 1")


@pytest.mark.parametrize("viewport", [DESKTOP, WIDE], ids=["1366", "1920"])
def test_the_lens_table_fits_the_page_without_a_sideways_scroll(
    open_lenses, judged_lenses, viewport
):
    page = open_lenses(viewport)
    table = page.locator("#table-lens-humans")
    expect(table).to_be_visible()
    for column in ("true_pass", "true_fail", "claims_incorrect"):
        cell = table.locator(f'tr[data-lens-humans="accuracy"] td[data-col="{column}"]')
        expect(cell).to_be_in_viewport()
    assert not _overflows(page, "#table-lens-humans >> xpath=..")
    assert not _overflows(page, "#table-co-errors >> xpath=..")
    # The table is not squeezed beside the chart: it takes the section's width.
    section = page.locator("#calibration").bounding_box()
    assert table.bounding_box()["width"] > 0.9 * (section["width"] - 40)
    assert page.errors == []


def test_on_a_phone_every_number_says_what_it_is_and_the_chart_is_legible(
    open_lenses, judged_lenses
):
    page = open_lenses(PHONE)
    card = page.locator('#table-lens-humans tr[data-lens-humans="accuracy"]')
    expect(card.locator('td[data-col="kappa"]')).to_be_visible()
    assert (
        card.locator('td[data-col="kappa"]').evaluate(
            "el => getComputedStyle(el, '::before').content"
        )
        == '"Kappa: "'
    )
    assert (
        card.locator('td[data-col="true_fail"]').evaluate(
            "el => getComputedStyle(el, '::before').content"
        )
        == '"True fail: "'
    )
    # The kappa chart's text, in screen pixels: its 12 px scaled by the drawn width.
    chart = page.locator("#chart-lens-kappa")
    scale = chart.evaluate("el => el.getBoundingClientRect().width / el.viewBox.baseVal.width")
    assert 12 * scale >= 10
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.errors == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1366", "390"])
def test_each_lens_gets_a_line_saying_whether_to_trust_it_and_why(
    open_lenses, judged_lenses, viewport
):
    page = open_lenses(viewport)
    accuracy = page.locator('[data-standing="accuracy"]')
    expect(accuracy).to_contain_text("accuracy: Trust")
    expect(accuracy).to_contain_text("lies wholly at or above its floor 0.4")
    tone = page.locator('[data-standing="tone-of-voice"]')
    expect(tone).to_contain_text("tone-of-voice: Do not trust")
    expect(tone).to_contain_text(
        "its kappa over its last 50 decisions is -0.20, below its floor 0.4"
    )
    # What a kappa below 0 and the interval mean is said on the page.
    rule = page.locator("#lens-kappa-rule")
    expect(rule).to_contain_text("below 0 is worse than chance")
    expect(rule).to_contain_text("the range its true kappa most likely lies in")
    assert page.errors == []


def test_every_figure_names_its_window(open_lenses, judged_lenses):
    page = open_lenses(DESKTOP)
    expect(page.locator("#calibration-window")).to_contain_text("Window: all decisions to date")
    for table in ("#table-lens-humans", "#table-co-errors", "#table-panel-audits"):
        expect(page.locator(f"{table} caption")).to_contain_text("(all decisions to date)")
    banner = page.locator("#lens-drift-flags")
    expect(banner).to_contain_text("over each lens's last decisions, whatever the window above")
    expect(banner).to_contain_text("tone-of-voice (kappa -0.200 over its last 50 decisions")
    page.goto("/dashboard/lenses?since=2026-01-01&until=2026-06-30")
    expect(page.locator("#calibration-window")).to_contain_text(
        "decisions from 2026-01-01 to 2026-06-30"
    )


def test_the_fail_together_table_gives_each_lens_error_rate_and_what_it_means(
    open_lenses, judged_lenses
):
    page = open_lenses(DESKTOP)
    pair = page.locator('[data-co-error="accuracy|tone-of-voice"]')
    expect(pair.locator('[data-col="first_wrong"]')).to_have_text("0 (0.0%)")
    expect(pair.locator('[data-col="second_wrong"]')).to_have_text("14 (70.0%)")
    expect(pair.locator('[data-col="reading"]')).to_contain_text("Rarely wrong together")
