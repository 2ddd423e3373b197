"""Configuring a panel end to end in the real admin, in headless Chromium."""

import pytest
from playwright.sync_api import expect

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import Lens, Panel
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(chromium, live_server):
    context = chromium.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def add_lens(page, name: str, backend: str, mandate: str = ""):
    page.goto("/admin/review/lens/add/")
    llm = page.locator("fieldset.show-if-backend-llm")
    constraints = page.locator("fieldset.show-if-backend-constraints")
    page.fill("#id_name", name)
    page.fill("#id_instructions", f"Judge from the {name} angle.")
    page.select_option("#id_backend", "llm")
    expect(llm).to_be_visible()
    expect(constraints).to_be_hidden()
    page.select_option("#id_backend", backend)
    expect(llm).to_be_hidden()
    if backend == "constraints":
        expect(constraints).to_be_visible()
        page.locator("#id_mandate").press_sequentially(mandate, delay=5)
        preview = page.locator("#id_mandate-preview")
        expect(preview).to_contain_text("1 checkable, 1 unenforced")
        expect(preview).to_contain_text("must contain 'refund'")
    page.click("input[name=_save]")
    expect(page.locator("ul.messagelist")).to_contain_text("was added successfully")


def test_an_admin_configures_a_panel_end_to_end(page):
    UserFactory(username="ada", is_staff=True, is_superuser=True)

    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "pw-for-tests")
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()

    add_lens(page, "accuracy", "recorded")
    add_lens(page, "policy", "constraints", mandate='must contain "refund"; be warm')
    add_lens(page, "tone", "recorded")
    assert Lens.objects.count() == 3

    page.goto("/admin/review/panel/add/")
    page.fill("#id_name", "release-gate")
    page.fill("#id_need", "1")
    page.select_option("select[name='panel_lenses-0-lens']", label="policy")
    page.fill("input[name='panel_lenses-0-position']", "2")
    page.select_option("select[name='panel_lenses-1-lens']", label="accuracy")
    page.fill("input[name='panel_lenses-1-position']", "1")
    page.click("input[name=_save]")

    # One of two is not a majority: refused, in the reference's words, nothing saved.
    expect(page.locator(".errornote")).to_be_visible()
    expect(page.locator("body")).to_contain_text("1 of 2 is not a majority")
    assert not Panel.objects.exists()

    # Fix it: a third lens through "Add another", and a majority of the three.
    page.locator(".add-row a").click()
    new_row = page.locator("select[name='panel_lenses-3-lens']")
    expect(new_row).to_be_visible()
    new_row.select_option(label="tone")
    page.fill("input[name='panel_lenses-3-position']", "3")
    page.fill("#id_need", "2")
    page.click("input[name=_save]")
    expect(page.locator("ul.messagelist")).to_contain_text("was added successfully")

    panel = Panel.objects.get(name="release-gate")
    assert panel.need == 2 and panel.version == 1
    assert [lens.name for lens in panel.ordered_lenses()] == ["accuracy", "policy", "tone"]
    assert AuditEntry.objects.filter(target_type="panel", action="create").count() == 1
    expect(page.locator("#result_list")).to_contain_text("accuracy, policy, tone")
