"""The guarantee in headless Chromium: setting it, reading it on the panel's page and the
dashboard, and a held proposal in the inbox."""

import pytest
from playwright.sync_api import expect

from reviewapp.guarantee.models import PanelGuarantee
from tests.factories import ReviewerFactory, UserFactory
from tests.review.helpers import evaluate_in_process, submit

from .builders import CONTENT, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_sets_a_guarantee_and_reads_the_promise_on_the_panel_page(open_as):
    admin = UserFactory(username="ada", is_staff=True, is_superuser=True)
    panel = voting_panel(["pass", "pass", "pass"], name="release-gate")
    page = open_as(admin, f"/admin/review/panel/{panel.pk}/change/")
    expect(page.locator("[data-promise]")).to_contain_text("No guarantee")
    page.click("[data-guarantee-settings]")
    expect(page.locator("#id_panel")).to_have_value(str(panel.pk))
    page.fill("#id_target", "95")  # a percentage by habit: refused, saying what to write
    page.click("input[name=_save]")
    expect(page.locator(".errorlist")).to_contain_text("write it as a share, 0.95")
    page.fill("#id_target", "0.9")
    page.fill("#id_confidence", "0.99")
    page.select_option("#id_audit_focus", "nearest")
    page.click("input[name=_save]")
    expect(page).to_have_url(f"/admin/review/panel/{panel.pk}/change/")
    expect(page.locator("[data-promise]")).to_have_text(
        "With 99 % confidence, at least 90 % of this panel's automatic decisions match what "
        "a reviewer would decide."
    )
    rows = page.locator("[data-guarantee-table] tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text("3 of 3 pass, no checkers")
    expect(rows.first.locator("[data-needs]")).to_contain_text("more agreeing labels")
    assert PanelGuarantee.objects.get(panel=panel).audit_focus == "nearest"
    assert page.errors == []


def test_a_reviewer_sees_why_a_proposal_was_held_and_what_the_machine_would_have_done(
    open_as,
):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"], name="release-gate"))
    evidence(panel, UNANIMOUS, labels=40, agreed=40)
    proposal = evaluate_in_process(submit(panel, CONTENT, title="Sorting advice"))
    page = open_as(ReviewerFactory(), "/?reason=below_guarantee")
    row = page.locator("[data-inbox] [data-row]").filter(has_text="Sorting advice")
    expect(row.locator(".badge--below_guarantee")).to_have_text("Below guarantee")
    expect(row.locator("[data-guarantee-line]")).to_contain_text(
        "would be approved · 3 of 3 pass, no checkers · 40 of 40 human labels agreed"
    )
    expect(row.locator("[data-guarantee-line]")).to_contain_text("65 more agreeing labels")
    row.locator("a.row-link").click()
    expect(page).to_have_url(f"/proposals/{proposal.pk}")
    expect(page.locator("body")).to_contain_text("would have approved it, but the panel's")
    assert page.errors == []


def test_the_dashboard_loads_a_panels_guarantee_and_works_on_a_phone(open_as):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"], name="release-gate"))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    evaluate_in_process(submit(panel, CONTENT))
    page = open_as(
        ReviewerFactory(), f"/dashboard?panel={panel.pk}", viewport={"width": 390, "height": 844}
    )
    section = page.locator("[data-guarantee-section]")
    expect(section.locator("[data-promise]")).to_contain_text("at least 95 %")
    trusted = section.locator(f'tr[data-pattern="{UNANIMOUS}"]')
    expect(trusted).to_have_attribute("data-routed", "machine")
    expect(trusted.locator("[data-needs]")).to_have_text("trusted")
    expect(section.locator("[data-overall]")).to_contain_text("all 1 automatic decisions")
    # The page does not scroll sideways at 390 px: the table scrolls in its own box.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.errors == []
