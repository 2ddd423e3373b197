"""The dashboard in headless Chromium: the htmx filter and the plain form without JS."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tests.factories import ReviewerFactory

from .builders import decide, judged, make_panel

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

playwright_sync = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.insights.urls"),
]


@pytest.fixture(scope="module")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium")
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def open_dashboard(chromium, live_server):
    contexts = []

    def open_page(path="/dashboard", **options):
        user = ReviewerFactory(username="rita")
        client = Client()
        client.force_login(user)
        context = chromium.new_context(
            base_url=live_server.url, viewport={"width": 1280, "height": 900}, **options
        )
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": live_server.url,
                }
            ]
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.errors = errors
        page.goto(path)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def panels(transactional_db):
    reviewer = ReviewerFactory(username="sam")
    first = make_panel("accuracy", "tone", "policy", need=2)
    second = make_panel("arithmetic", "units", need=2)
    for verdicts in (
        {"accuracy": "pass", "tone": "pass", "policy": "pass"},
        {"accuracy": "pass", "tone": "fail", "policy": "pass"},
        {"accuracy": "fail", "tone": "fail", "policy": "pass"},
    ):
        judged(first, verdicts)
    decide(judged(second, {"arithmetic": "pass", "units": "fail"}), reviewer, "approved")
    judged(second, {"arithmetic": "pass", "units": "fail"})
    return first, second


def _total(page) -> str:
    return page.locator('[data-total="total"]').inner_text()


def test_filter_swaps_the_body_and_pushes_the_url(open_dashboard, panels):
    _, second = panels
    page = open_dashboard()
    assert _total(page) == "5"
    assert page.locator('svg[role="img"]').count() == 9
    body = page.locator("#dashboard-body")
    body.evaluate("el => el.dataset.marker = 'before'")
    with page.expect_response(lambda r: "/dashboard?" in r.url):
        page.select_option("#dash-panel", str(second.pk))
    page.wait_for_function("document.querySelector('[data-total=\"total\"]').textContent === '2'")
    # Swapped by htmx (the page did not reload: the header is the same element) ...
    assert page.evaluate("() => !document.querySelector('#dashboard-body').dataset.marker")
    assert page.locator("header.site-header").count() == 1
    # ... and the URL says what is shown, so it can be shared or reloaded.
    page.wait_for_url(f"**/dashboard?panel={second.pk}*")
    page.reload()
    assert _total(page) == "2"
    assert page.input_value("#dash-panel") == str(second.pk)
    if os.environ.get("INSIGHTS_SCREENSHOT"):
        page.goto("/dashboard")
        page.screenshot(path=os.environ["INSIGHTS_SCREENSHOT"], full_page=True)
    assert page.errors == []


def test_filter_form_works_without_javascript(open_dashboard, panels):
    first, _ = panels
    page = open_dashboard(java_script_enabled=False)
    assert _total(page) == "5"
    page.select_option("#dash-panel", str(first.pk))
    page.click("form[aria-label='Filter the dashboard'] button[type=submit]")
    page.wait_for_url(f"**/dashboard?panel={first.pk}*")
    assert _total(page) == "3"
