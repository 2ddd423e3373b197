"""The dashboard in headless Chromium: the htmx filter and the plain form without JS."""

import pytest

from tests.factories import ReviewerFactory

from .builders import decide, judged, make_panel

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.insights.urls"),
]


@pytest.fixture
def open_dashboard(open_as):
    def open_page(path="/dashboard", **options):
        options.setdefault("viewport", {"width": 1280, "height": 900})
        return open_as(ReviewerFactory(username="rita"), path, **options)

    return open_page


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
    # Nine charts, the lenses' kappa with the reviewers, and the weekly trend of the two
    # lenses a reviewer was measured against.
    assert page.locator('svg[role="img"]').count() == 12
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
    assert page.errors == []


def test_filter_form_works_without_javascript(open_dashboard, panels):
    first, _ = panels
    page = open_dashboard(java_script_enabled=False)
    assert _total(page) == "5"
    page.select_option("#dash-panel", str(first.pk))
    page.click("form[aria-label='Filter the dashboard'] button[type=submit]")
    page.wait_for_url(f"**/dashboard?panel={first.pk}*")
    assert _total(page) == "3"


def test_every_kappa_row_is_visible_without_scrolling_inside_the_table(open_dashboard):
    panel = make_panel("accuracy-check", "tone-of-voice", "policy-compliance", "units", need=3)
    for verdicts in (
        {
            "accuracy-check": "pass",
            "tone-of-voice": "pass",
            "policy-compliance": "fail",
            "units": "pass",
        },
        {
            "accuracy-check": "fail",
            "tone-of-voice": "pass",
            "policy-compliance": "fail",
            "units": "fail",
        },
    ):
        judged(panel, verdicts)
    page = open_dashboard(viewport={"width": 1366, "height": 768})
    rows = page.locator("#table-cohen tbody tr")
    assert rows.count() == 6
    sixth = rows.nth(5)
    sixth.scroll_into_view_if_needed()
    # Visible in the page, and not clipped by a scrolling box around the table.
    clipped = sixth.evaluate(
        """row => {
            const box = row.getBoundingClientRect();
            for (let el = row.parentElement; el; el = el.parentElement) {
                const style = getComputedStyle(el);
                if (style.overflowY === 'visible') continue;
                const outer = el.getBoundingClientRect();
                if (box.bottom > outer.bottom + 1 || box.top < outer.top - 1) return true;
            }
            return false;
        }"""
    )
    assert not clipped
    # Each pair's label, on one line or two, reads whole and apart from the others.
    labels = page.locator("#chart-cohen g").evaluate_all(
        "gs => gs.map(g => [...g.querySelectorAll('text')].map(t => t.textContent).join(' '))"
    )
    assert len(set(labels)) == len(labels) == 6
    assert not any("…" in label for label in labels)


def test_at_390px_no_table_row_is_cut_and_nothing_scrolls_sideways(open_dashboard, panels):
    names = [f"lens-with-a-long-name-{i}" for i in range(6)]
    judged(make_panel(*names, need=4), dict.fromkeys(names, "pass"))  # 11 lens rows in all
    page = open_dashboard(viewport={"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # Each row card shows whole: no box around a table cuts it off below.
    cut = page.evaluate(
        """() => [...document.querySelectorAll('.dashboard tbody tr')].filter(row => {
            const box = row.getBoundingClientRect();
            for (let el = row.parentElement; el; el = el.parentElement) {
                const style = getComputedStyle(el);
                if (style.overflowY === 'visible' && style.overflowX === 'visible') continue;
                const clip = el.getBoundingClientRect();
                if (box.bottom > clip.bottom + 0.5 || box.right > clip.right + 0.5) return true;
            }
            return false;
        }).map(row => row.textContent.trim().slice(0, 40))"""
    )
    assert cut == []
    assert page.errors == []
