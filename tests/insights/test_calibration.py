"""The dashboard's lenses against the reviewers: table, flags, links and a constant cost."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.calibration.services import floor_update
from tests.calibration.builders import adjudicated, agreeing, disagreeing, many, panel_of
from tests.factories import ReviewerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(client):
    client.force_login(ReviewerFactory())
    return client


def _row(html: str, attribute: str, name: str) -> str:
    return re.search(rf'<tr {attribute}="{re.escape(name)}".*?</tr>', html, re.S).group(0)


def test_the_dashboard_shows_each_lens_against_the_reviewers(browser):
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(10) + disagreeing(2))
    row = _row(browser.get("/dashboard").content.decode(), "data-lens-humans", "alpha")
    assert 'data-col="agreement"><a href' in row and "83.3%" in row
    assert "agreement_lens=" in row and "cell=agreed" in row


def test_the_lens_table_shows_the_share_of_claims_marked_incorrect(browser):
    panel, (a, b) = panel_of("alpha", "beta")
    adjudicated(
        panel, {a: "pass", b: "pass"}, "rejected", marks={a: ["incorrect", "correct", "correct"]}
    )
    html = browser.get("/dashboard/lenses").content.decode()
    alpha = _row(html, "data-lens-humans", "alpha")
    assert re.search(r'data-col="claims_incorrect"><span title="of 3 claims[^"]*">33.3%<', alpha)
    beta = _row(html, "data-lens-humans", "beta")
    assert re.search(r'data-col="claims_incorrect"><span title="no claim of this lens', beta)


def test_the_number_of_decided_proposals_links_to_exactly_those_proposals(browser):
    panel, (lens,) = panel_of("alpha")
    decided = many(panel, lens, agreeing(3))
    html = browser.get("/dashboard/lenses").content.decode()
    link = re.search(r'data-col="n"><a href="([^"]+)"', html).group(1).replace("&amp;", "&")
    listed = browser.get(link).content.decode()
    for proposal in decided:
        assert f"/proposals/{proposal.pk}" in listed
    assert "judged by lens alpha, decided by a reviewer" in listed


@pytest.mark.parametrize("which", ["agreement_lens={lens}&cell=labelled", "audited=all"])
def test_a_drill_down_to_the_last_day_there_is_lists_and_is_no_server_error(browser, which):
    # decided_to=9999-12-31 became "before the next day", past the last date: a 500.
    panel, (lens,) = panel_of("alpha")
    (decided,) = many(panel, lens, agreeing(1))
    query = which.format(lens=lens.pk)

    response = browser.get(f"/proposals?{query}&decided_to=9999-12-31")

    assert response.status_code == 200
    if "agreement_lens" in query:
        assert f"/proposals/{decided.pk}" in response.content.decode()


def test_a_lens_below_its_floor_is_flagged_on_the_dashboard(browser):
    panel, (lens,) = panel_of("alpha")
    floor_update(lens=lens, floor=0.4, window=10)
    many(panel, lens, disagreeing(10))
    html = browser.get("/dashboard").content.decode()
    assert 'data-drifting="alpha"' in html


def test_lenses_that_fail_together_are_flagged_with_the_proposals_behind_it(browser):
    panel, (a, b) = panel_of("alpha", "beta")
    # Each wrong on the same 6 of 30; independence predicts 1.2 shared errors.
    for i in range(30):
        wrong = i < 6
        outcome = "rejected" if wrong else ("approved" if i % 2 else "rejected")
        verdict = "pass" if (wrong or outcome == "approved") else "fail"
        adjudicated(panel, {a: verdict, b: verdict}, outcome)
    html = browser.get("/dashboard").content.decode()
    row = _row(html, "data-co-error", "alpha|beta")
    assert "these lenses fail together" in row
    link = re.search(r'data-col="both_wrong"><a href="([^"]+)">6<', row).group(1)
    listed = browser.get(link.replace("&amp;", "&")).content.decode()
    assert "were both wrong against the reviewer" in listed


def test_audits_overturned_are_counted_per_panel(browser):
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "rejected", audit=True, tally_outcome="reached_pass")
    adjudicated(panel, {lens: "pass"}, "approved", audit=True, tally_outcome="reached_pass")
    row = _row(browser.get("/dashboard").content.decode(), "data-panel-audits", panel.name)
    assert re.search(r'data-col="audits"><a [^>]*>2<', row)
    assert re.search(r'data-col="overturned"><a [^>]*>1<', row)


def test_a_window_ending_before_it_starts_is_refused(browser):
    response = browser.get("/dashboard/lenses", {"since": "2026-03-01", "until": "2026-01-01"})
    assert response.status_code == 400


def test_the_lens_page_costs_the_same_queries_however_many_decisions(browser):
    panel, (a, b) = panel_of("alpha", "beta")
    adjudicated(panel, {a: "pass", b: "fail"}, "approved")
    browser.get("/dashboard/lenses")
    with CaptureQueriesContext(connection) as few:
        browser.get("/dashboard/lenses")
    for verdict, outcome in agreeing(15):
        adjudicated(panel, {a: verdict, b: verdict}, outcome, marks={a: ["incorrect"]})
    with CaptureQueriesContext(connection) as more:
        browser.get("/dashboard/lenses")
    assert len(more) == len(few)
