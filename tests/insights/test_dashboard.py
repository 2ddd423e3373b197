import re
from datetime import timedelta
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.review.models import Claim, Escalation, Judgement, Proposal
from reviewapp.review.services.escalations import escalation_claim
from tests.review.helpers import submit

from .builders import BAD_CITE, GOOD_CITE, backdate, decide, judged, make_panel

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.insights.urls")]

# Per day, escalation rate, medians, lens rates, lens failures, Cohen, Fleiss, larger side,
# workload.
CHARTS = 10
# Tables with no chart of their own: lenses that fail together, audits per panel.
TABLES_WITHOUT_CHART = 2


def _get(client, **params):
    response = client.get(reverse("dashboard"), params)
    assert response.status_code == 200
    return response


def _cell(html: str, row_attr: str, row_value: str, col: str) -> str:
    """The text of <td data-col=col> in the row marked row_attr="row_value"."""
    row = re.search(rf'<tr {row_attr}="{re.escape(row_value)}">(.*?)</tr>', html, re.S)
    assert row, f"no row {row_attr}={row_value}"
    cell = re.search(rf'<td data-col="{col}">(.*?)</td>', row.group(1), re.S)
    assert cell, f"no cell {col} in row {row_value}"
    return re.sub(r"<[^>]+>", "", cell.group(1)).strip()


# --- rendering ----------------------------------------------------------------


def test_renders_with_zero_proposals(reviewer_client):
    html = _get(reviewer_client).content.decode()
    assert "<h1>Dashboard</h1>" in html
    # Every chart is an accessible SVG with a title, and every chart has a captioned table.
    assert html.count('role="img"') == CHARTS
    assert len(re.findall(r'<svg[^>]*role="img"[^>]*aria-label="[^"]+"', html)) == CHARTS
    assert html.count("<title>") >= CHARTS
    assert html.count("<caption>") == CHARTS + TABLES_WITHOUT_CHART
    assert "No proposals in this range." in html
    assert "No data in this range." in html
    # No script-driven or external chart: nothing but inline SVG.
    assert "cdn" not in html.lower()
    assert "<canvas" not in html
    # The medians table says there is no median rather than 0.
    assert re.search(r'data-basis="system">.*?<td><a [^>]*>0</a></td><td>—</td>', html, re.S)
    assert "Information only — never used to decide." in html


def test_dashboard_links_to_exports_and_loads_its_stylesheet(reviewer_client):
    html = _get(reviewer_client).content.decode()
    assert 'href="/exports/proposals.csv"' in html
    assert 'href="/exports/proposals.jsonl"' in html
    assert "css/insights.css" in html


# --- agreement ----------------------------------------------------------------


@pytest.fixture
def three_lens_data():
    """Four proposals on a 3-lens panel, verdicts chosen so the kappas are easy by hand.

            alpha  beta  gamma
        P1  pass   pass  pass
        P2  pass   fail  pass
        P3  fail   fail  pass
        P4  fail   fail  fail

    Cohen alpha×beta: po = 3/4, pe = .5·.25 + .5·.75 = .5        → κ = .25/.5   = 0.5
    Cohen alpha×gamma: po = 3/4, pe = .5·.75 + .5·.25 = .5       → κ = 0.5
    Cohen beta×gamma: po = 2/4, pe = .25·.75 + .75·.25 = .375    → κ = .125/.625 = 0.2
    Fleiss: P_i = 1, 1/3, 1/3, 1 → P̄ = 2/3; p_pass = p_fail = .5 → P̄e = .5 → κ = 1/3
    """
    panel = make_panel("alpha", "beta", "gamma", need=2)
    rows = [
        ("pass", "pass", "pass"),
        ("pass", "fail", "pass"),
        ("fail", "fail", "pass"),
        ("fail", "fail", "fail"),
    ]
    for a, b, c in rows:
        judged(panel, {"alpha": a, "beta": b, "gamma": c})
    return panel


def test_cohen_and_fleiss_kappa_equal_hand_computed_values(reviewer_client, three_lens_data):
    response = _get(reviewer_client)
    pairs = {(p.first, p.second): p for p in response.context["insights"].pairs}
    assert set(pairs) == {("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")}
    assert pairs["alpha", "beta"].kappa == pytest.approx(0.5)
    assert pairs["alpha", "gamma"].kappa == pytest.approx(0.5)
    assert pairs["beta", "gamma"].kappa == pytest.approx(0.2)
    beta_gamma = pairs["beta", "gamma"].table
    assert (beta_gamma.pass_pass, beta_gamma.fail_pass) == (1, 2)
    assert all(p.items == 4 for p in pairs.values())

    [panel] = response.context["insights"].panels
    assert (panel.items, panel.raters) == (4, 3)
    assert panel.kappa == pytest.approx(1 / 3)

    html = response.content.decode()
    assert _cell(html, "data-pair", "alpha|beta", "kappa") == "0.500"
    assert _cell(html, "data-pair", "alpha|gamma", "kappa") == "0.500"
    assert _cell(html, "data-pair", "beta|gamma", "kappa") == "0.200"
    assert _cell(html, "data-panel", three_lens_data.name, "kappa") == "0.333"


def test_fleiss_counts_only_proposals_every_lens_judged(reviewer_client, three_lens_data):
    # gamma fails on a fifth proposal: alpha×beta gain an item, Fleiss does not.
    judged(three_lens_data, {"alpha": "pass", "beta": "pass"})
    insights = _get(reviewer_client).context["insights"]
    pairs = {(p.first, p.second): p for p in insights.pairs}
    assert pairs["alpha", "beta"].items == 5
    assert pairs["alpha", "gamma"].items == 4
    assert insights.panels[0].items == 4
    assert insights.panels[0].kappa == pytest.approx(1 / 3)


def test_undefined_kappa_is_a_dash_with_an_explanation(reviewer_client):
    panel = make_panel("always-a", "always-b", need=2)
    for _ in range(3):
        judged(panel, {"always-a": "pass", "always-b": "pass"})
    response = _get(reviewer_client)
    [pair] = response.context["insights"].pairs
    assert pair.items == 3 and pair.kappa is None
    assert response.context["insights"].panels[0].kappa is None
    html = response.content.decode()
    assert _cell(html, "data-pair", "always-a|always-b", "kappa") == "—"
    assert _cell(html, "data-panel", panel.name, "kappa") == "—"
    assert "kappa is undefined" in html
    assert "chance agreement is 1" in html


def test_pairs_never_cross_panels(reviewer_client, three_lens_data):
    other = make_panel("delta", "epsilon", need=2)
    judged(other, {"delta": "pass", "epsilon": "fail"})
    pairs = _get(reviewer_client).context["insights"].pairs
    assert {(p.panel, p.first, p.second) for p in pairs} == {
        (three_lens_data.name, "alpha", "beta"),
        (three_lens_data.name, "alpha", "gamma"),
        (three_lens_data.name, "beta", "gamma"),
        (other.name, "delta", "epsilon"),
    }


def _larger_side_cell(html: str, col: str) -> str:
    table = html.split('id="table-larger-side"', 1)[1].split("</table>", 1)[0]
    cell = re.search(rf'<td data-col="{col}">(.*?)</td>', table, re.S)
    return re.sub(r"<[^>]+>", "", cell.group(1)).strip()


# --- human adjudication against the larger side ------------------------------------------


def test_human_vs_larger_side_on_no_quorum(reviewer_client, reviewer):
    unanimous = make_panel("u1", "u2", "u3", need=3)
    pass_side = judged(unanimous, {"u1": "pass", "u2": "pass", "u3": "fail"})
    fail_side = judged(unanimous, {"u1": "pass", "u2": "fail", "u3": "fail"})
    pass_side_rejected = judged(unanimous, {"u1": "pass", "u2": "pass", "u3": "fail"})
    still_open = judged(unanimous, {"u1": "pass", "u2": "fail", "u3": "fail"})
    pair = make_panel("t1", "t2", need=2)
    tie = judged(pair, {"t1": "pass", "t2": "fail"})
    sign_off = make_panel("s1", "s2", "s3", need=2, requires_sign_off=True)
    signed = judged(sign_off, {"s1": "pass", "s2": "pass", "s3": "fail"})
    for p in (pass_side, fail_side, pass_side_rejected, still_open, tie, signed):
        assert p.status == Proposal.Status.ESCALATED
    assert signed.tally["outcome"] == "reached_pass"

    decide(pass_side, reviewer, "approved")  # agrees with pass
    decide(fail_side, reviewer, "approved")  # disagrees with fail
    decide(pass_side_rejected, reviewer, "rejected")  # disagrees with pass
    decide(tie, reviewer, "approved")  # a tie: no larger side
    decide(signed, reviewer, "approved")  # reached a quorum: not counted

    response = _get(reviewer_client)
    larger = response.context["insights"].larger_side
    assert (larger.decided, larger.agreed, larger.disagreed, larger.ties) == (4, 1, 2, 1)
    assert larger.agreement_rate == pytest.approx(1 / 3)
    html = response.content.decode()
    cells = {col: _larger_side_cell(html, col) for col in ("agreed", "disagreed", "ties", "rate")}
    assert cells == {"agreed": "1", "disagreed": "2", "ties": "1", "rate": "33.3%"}
    assert "never used to decide" in html


# --- time to decision ------------------------------------------------------------------------


def test_median_time_to_decision_machine_vs_human(reviewer_client, reviewer):
    panel = make_panel("m1", "m2", need=2)
    for minutes in (10, 30, 20):
        backdate(judged(panel, {"m1": "pass", "m2": "pass"}), minutes=minutes)
    for hours in (1, 3):
        proposal = judged(panel, {"m1": "pass", "m2": "fail"})
        decide(proposal, reviewer, "rejected")
        backdate(proposal, hours=hours)

    medians = {m.basis: m for m in _get(reviewer_client).context["insights"].medians}
    assert medians["system"].decisions == 3
    assert medians["system"].median.total_seconds() == pytest.approx(20 * 60, abs=30)
    assert medians["reviewer"].decisions == 2
    # An even count: the mean of the middle two (1 h and 3 h).
    assert medians["reviewer"].median.total_seconds() == pytest.approx(2 * 3600, abs=30)
    html = _get(reviewer_client).content.decode()
    assert re.search(r'data-basis="system">.*?<td><a [^>]*>3</a></td><td>20 min', html, re.S)
    assert re.search(r'data-basis="reviewer">.*?<td><a [^>]*>2</a></td><td>2 h', html, re.S)


# --- lenses -----------------------------------------------------------------------------------


def test_lens_pass_rate_unresolved_rate_and_failures(reviewer_client):
    panel = make_panel("alpha", "beta", "gamma", need=2)
    first = judged(panel, {"alpha": "pass", "beta": "pass"}, cites={"alpha": (GOOD_CITE, BAD_CITE)})
    judged(panel, {"alpha": "fail", "beta": "pass"})
    # A cite the reject policy dropped still counts as unresolved.
    alpha_first = Judgement.objects.get(proposal=first, lens_name="alpha")
    Claim.objects.create(
        judgement=alpha_first,
        position=99,
        cite="Never said.",
        assessment=Claim.Assessment.VERIFIED,
        anchor_kind=Claim.AnchorKind.UNRESOLVED,
        dropped=True,
    )

    response = _get(reviewer_client)
    lenses = {lens.name: lens for lens in response.context["insights"].lenses}
    alpha, beta, gamma = lenses["alpha"], lenses["beta"], lenses["gamma"]
    assert (alpha.judgements, alpha.passed, alpha.claims, alpha.unresolved) == (2, 1, 4, 2)
    assert alpha.pass_rate == 0.5 and alpha.unresolved_rate == 0.5
    assert (beta.pass_rate, beta.unresolved_rate, beta.failures) == (1.0, 0.0, 0)
    assert (gamma.judgements, gamma.failures, gamma.pass_rate) == (0, 2, None)
    html = response.content.decode()
    assert _cell(html, "data-lens", "alpha", "pass_rate") == "50.0%"
    assert _cell(html, "data-lens", "alpha", "unresolved_rate").startswith("50.0%")
    assert _cell(html, "data-lens", "gamma", "pass_rate") == "—"
    assert _cell(html, "data-lens-failures", "gamma", "failures") == "2"


# --- outcomes per day ---------------------------------------------------------------------------


def test_proposals_per_day_and_escalation_rate(reviewer_client, reviewer):
    panel = make_panel("d1", "d2", "d3", need=2)
    old_approved = judged(panel, {"d1": "pass", "d2": "pass", "d3": "pass"})
    old_escalated = judged(panel, {"d1": "pass", "d2": "pass"})  # d3 failed: escalated
    for p in (old_approved, old_escalated):
        backdate(p, days=2)
    judged(panel, {"d1": "fail", "d2": "fail", "d3": "fail"})  # rejected
    judged(panel, {"d1": "fail", "d2": "fail", "d3": "pass"})  # rejected
    submit(panel, "Not evaluated yet.")  # pending
    decide(judged(panel, {"d1": "pass", "d3": "pass"}), reviewer, "approved")

    days = {d.day: d for d in _get(reviewer_client).context["insights"].days}
    today = timezone.localdate()
    old, new = days[today - timedelta(days=2)], days[today]
    assert (old.approved, old.rejected, old.escalated_open, old.pending) == (1, 0, 1, 0)
    assert (new.approved, new.rejected, new.escalated_open, new.pending) == (1, 2, 0, 1)
    # An open escalation counts at once; the pending proposal is not judged yet.
    assert (old.routed, old.escalated, old.escalation_rate) == (2, 1, 0.5)
    assert (new.routed, new.escalated) == (3, 1)
    assert new.escalation_rate == pytest.approx(1 / 3)
    assert len(days) == 2

    response = _get(reviewer_client)
    assert response.context["totals"] == {
        "approved": 2,
        "rejected": 2,
        "escalated_open": 1,
        "pending": 1,
        "total": 6,
        "routed": 5,
        "escalated": 2,
        "escalation_rate": 0.4,
    }
    # The chart fills the empty day between with zeros; the table lists the days with data.
    html = response.content.decode()
    assert _cell(html, "data-rate-day", today.isoformat(), "rate") == "33.3%"
    assert _cell(html, "data-rate-day", (today - timedelta(days=2)).isoformat(), "rate") == "50.0%"
    assert html.count('<tr><th scope="row"><time') == 2


def test_the_escalation_rate_counts_open_escalations_and_is_defined_beside_it(
    reviewer_client, reviewer
):
    # 54 proposals: 28 decided by the system, 2 escalated and decided by a
    # reviewer, 24 in open escalations. Counting only decided proposals read
    # 2 / 30 = 6.7 %; 26 of the 54 went to a human.
    panel = make_panel("solo", need=1)
    for verdict in ["pass"] * 14 + ["fail"] * 14:
        judged(panel, {"solo": verdict})
    for _ in range(2):
        decide(judged(panel, {}), reviewer, "approved")
    for _ in range(24):
        judged(panel, {})  # the lens fails: escalated, left open

    html = _get(reviewer_client).content.decode()

    assert re.search(r'data-total="escalation_rate">48\.1%<', html)
    assert "6.7%" not in html
    definition = re.search(r'id="escalation-rate-definition"[^>]*>(.*?)</span>', html, re.S)
    words = re.sub(r"<[^>]+>", "", definition.group(1))
    assert words.startswith("26 of 54 judged proposals sent to a human.")
    assert "whether the escalation is still open or a reviewer has decided it" in html


# --- workload ------------------------------------------------------------------------------------


def test_reviewer_workload(reviewer_client, reviewer, second_reviewer):
    panel = make_panel("w1", "w2", need=2)
    split = [judged(panel, {"w1": "pass", "w2": "fail"}) for _ in range(4)]
    escalations = [Escalation.objects.get(proposal=p) for p in split]
    escalation_claim(escalation_id=escalations[1].pk, user=reviewer)
    decide(split[2], second_reviewer, "approved")
    decide(split[3], reviewer, "rejected")

    rows = {w.reviewer: w for w in _get(reviewer_client).context["insights"].workload}
    assert set(rows) == {"", "rita", "sam"}
    assert (rows[""].open, rows[""].claimed, rows[""].resolved) == (1, 0, 0)
    assert (rows["rita"].open, rows["rita"].claimed, rows["rita"].resolved) == (0, 1, 1)
    assert (rows["sam"].open, rows["sam"].claimed, rows["sam"].resolved) == (0, 0, 1)
    html = _get(reviewer_client).content.decode()
    assert _cell(html, "data-reviewer", "rita", "claimed") == "1"
    assert _cell(html, "data-reviewer", "", "open") == "1"


# --- filters -------------------------------------------------------------------------------------


@pytest.fixture
def two_panels():
    first = make_panel("f1", "f2", need=2)
    second = make_panel("g1", "g2", need=2)
    backdate(judged(first, {"f1": "pass", "f2": "pass"}), days=10)
    judged(first, {"f1": "fail", "f2": "fail"})
    judged(second, {"g1": "pass", "g2": "fail"})
    return first, second


def test_filter_by_panel(reviewer_client, two_panels):
    first, second = two_panels
    response = _get(reviewer_client, panel=second.pk)
    assert response.context["totals"]["total"] == 1
    assert response.context["totals"]["escalated_open"] == 1
    assert {p.panel for p in response.context["insights"].pairs} == {second.name}
    assert {lens.name for lens in response.context["insights"].lenses} == {"g1", "g2"}
    assert f'<option value="{second.pk}" selected>' in response.content.decode()
    assert f"panel={second.pk}" in response.context["export_csv"]


def test_filter_by_date_range(reviewer_client, two_panels):
    today = timezone.localdate()
    recent = _get(reviewer_client, start=(today - timedelta(days=1)).isoformat())
    assert recent.context["totals"]["total"] == 2
    old = _get(
        reviewer_client,
        start=(today - timedelta(days=11)).isoformat(),
        end=(today - timedelta(days=9)).isoformat(),
    )
    assert old.context["totals"] == {
        "approved": 1,
        "rejected": 0,
        "escalated_open": 0,
        "pending": 0,
        "total": 1,
        "routed": 1,
        "escalated": 0,
        "escalation_rate": 0.0,
    }
    assert old.context["insights"].medians[0].decisions == 1
    up_to_today = _get(reviewer_client, end=today.isoformat())
    assert up_to_today.context["totals"]["total"] == 3


def test_the_last_date_there_is_as_end_covers_everything(reviewer_client, two_panels):
    # The day after 9999-12-31 does not exist: the end must bound nothing, not overflow.
    response = _get(reviewer_client, start="0001-01-01", end="9999-12-31")
    assert response.status_code == 200
    assert response.context["totals"]["total"] == 3


def test_invalid_filters_answer_400_and_show_no_figures(reviewer_client, two_panels):
    today = timezone.localdate()
    response = reviewer_client.get(
        reverse("dashboard"),
        {
            "panel": "999999",
            "start": today.isoformat(),
            "end": (today - timedelta(days=3)).isoformat(),
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "The end date is before the start date." in html
    assert 'role="alert"' in html
    # No figures for some other range that could be mistaken for the answer.
    assert 'data-total="total"' not in html and 'role="img"' not in html


@pytest.mark.parametrize("params", [{"start": "2024-02-30"}, {"end": "soon"}, {"panel": "x"}])
def test_a_bad_date_or_panel_is_an_error_not_ignored(reviewer_client, two_panels, params):
    response = reviewer_client.get(reverse("dashboard"), params)
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


def test_htmx_gets_only_the_dashboard_body_and_the_url_is_pushed(reviewer_client, two_panels):
    _, second = two_panels
    page = _get(reviewer_client).content.decode()
    form = re.search(r"<form[^>]*aria-label=\"Filter the dashboard\"[^>]*>", page).group(0)
    assert 'method="get"' in form and 'action="/dashboard"' in form  # works without JS
    assert 'hx-get="/dashboard"' in form
    assert 'hx-target="#dashboard-body"' in form
    assert 'hx-push-url="true"' in form

    response = reviewer_client.get(
        reverse("dashboard"), {"panel": second.pk}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="dashboard-body"')
    assert "<html" not in html and "<form" not in html
    assert html.count('role="img"') == CHARTS
    assert response.context["totals"]["total"] == 1
    assert "HX-Request" in response["Vary"]


def test_a_pushed_url_restored_from_the_server_is_the_whole_page(reviewer_client, two_panels):
    # htmx re-asks the server for a history entry its cache lost, as an htmx request.
    _, second = two_panels
    restore = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
    response = reviewer_client.get(reverse("dashboard"), {"panel": second.pk}, headers=restore)
    html = response.content.decode()
    assert "<html" in html and 'aria-label="Filter the dashboard"' in html


# --- query count ---------------------------------------------------------------------------------

DASHBOARD_QUERIES = 20  # session, user, reviewer group + panels + 12 aggregates + 4 calibration


def _mixed_proposals(count: int, reviewer) -> None:
    panel = make_panel("q1", "q2", "q3", need=2)
    kinds = [
        {"q1": "pass", "q2": "pass", "q3": "pass"},  # approved
        {"q1": "fail", "q2": "fail", "q3": "pass"},  # rejected
        {"q1": "pass", "q2": "fail"},  # q3 failed: escalated
        {"q1": "pass", "q2": "fail"},  # escalated, then decided by a reviewer
    ]
    for i in range(count):
        proposal = judged(panel, kinds[i % 4], cites={"q1": (GOOD_CITE, BAD_CITE)})
        if i % 4 == 3:
            decide(proposal, reviewer, "approved")
        if i % 3 == 0:
            backdate(proposal, days=i % 5)


@pytest.mark.parametrize("count", [2, 20])
def test_query_count_does_not_grow_with_proposals(
    reviewer_client, reviewer, django_assert_num_queries, count
):
    _mixed_proposals(count, reviewer)
    with django_assert_num_queries(DASHBOARD_QUERIES):
        response = reviewer_client.get(reverse("dashboard"))
    assert response.context["totals"]["total"] == count


@pytest.mark.parametrize("count", [2, 20])
def test_query_count_with_filters_and_htmx(
    reviewer_client, reviewer, django_assert_num_queries, count
):
    _mixed_proposals(count, reviewer)
    panel_id = Proposal.objects.values_list("panel_id", flat=True).first()
    today = timezone.localdate()
    params = {"panel": panel_id, "start": (today - timedelta(days=7)).isoformat(), "end": today}
    with django_assert_num_queries(DASHBOARD_QUERIES):
        response = reviewer_client.get(reverse("dashboard"), params, headers={"HX-Request": "true"})
    assert response.context["totals"]["total"] == count


def test_query_count_with_zero_proposals(reviewer_client, django_assert_num_queries):
    with django_assert_num_queries(DASHBOARD_QUERIES):
        reviewer_client.get(reverse("dashboard"))


# --- every count links to the proposals it counts ------------------------------------------------


def _list_count(client, href: str) -> int:
    page = client.get(unescape(href)).content.decode()
    return int(re.search(r"(\d+) proposals? ·", page).group(1))


def test_every_linked_count_opens_the_list_of_exactly_those_proposals(reviewer_client, reviewer):
    panel = make_panel("k1", "k2", "k3", need=2)
    backdate(judged(panel, {"k1": "pass", "k2": "pass", "k3": "pass"}), days=3)  # approved
    judged(panel, {"k1": "fail", "k2": "fail", "k3": "pass"})  # rejected
    judged(panel, {"k1": "pass", "k2": "pass"})  # k3 failed: escalated, open
    decide(judged(panel, {"k1": "pass", "k3": "fail"}), reviewer, "rejected")
    submit(panel, "Not evaluated yet.")  # pending
    other = make_panel("solo", need=1)
    judged(other, {"solo": "pass"})  # another panel: outside the panel filter

    for params in ({}, {"panel": panel.pk}):
        html = _get(reviewer_client, **params).content.decode()
        links = re.findall(r'<a [^>]*href="(/proposals\?[^"]*)"[^>]*>(\d+)</a>', html)
        # Totals (5 + 2 in the rate), per day (2 days × 5 + 2), per lens (judgements,
        # failures, claims, unresolved cites), per pair of lenses (items and the four
        # cells), Fleiss' items (one panel of 2+ lenses), the larger side (4), the
        # workload (nobody's and rita's rows: open, claimed, resolved).
        lenses = 3 if params else 4
        # Lenses against the reviewer (k1 and k3 on the decided proposal: decided, escalations,
        # audits) and the proposals where that pair was both wrong.
        assert len(links) == 7 + 2 * 7 + 4 * lenses + 3 * 5 + 1 + 4 + 2 * 3 + 2 * 3 + 1
        for href, count in links:
            assert _list_count(reviewer_client, href) == int(count), href

    html = _get(reviewer_client, panel=panel.pk).content.decode()
    assert re.search(r'data-total="escalated_open" href="[^"]*set=escalated_open[^"]*">1<', html)
    passed = re.search(r'data-lens="k1">.*?data-col="pass_rate"><a href="([^"]+)"', html, re.S)
    assert _list_count(reviewer_client, passed.group(1)) == 3
    page = reviewer_client.get(unescape(re.search(r'href="([^"]*lens2[^"]*)"', html).group(1)))
    assert "From the dashboard: proposals judged by lens k1 and lens k2" in page.content.decode()
    # The decisions behind the medians: one per basis.
    decisions = re.findall(r'<a href="(/decisions\?[^"]*)">(\d+)</a>', html)
    assert [count for _, count in decisions] == ["2", "1"]  # system, reviewer
    for href, count in decisions:
        page = reviewer_client.get(unescape(href)).content.decode()
        assert len(re.findall(r"data-row data-id=", page)) == int(count), href


def test_a_list_opened_from_the_dashboard_says_what_it_shows(reviewer_client):
    panel = make_panel("k1", need=1)
    judged(panel, {"k1": "pass"})
    today = timezone.localdate().isoformat()

    page = reviewer_client.get(
        reverse("proposal_list"), {"set": "sent_to_human", "start": today, "end": today}
    ).content.decode()

    assert (
        f"From the dashboard: proposals submitted on {today}, sent to a human "
        "(open or decided since)." in page
    )
    assert "0 proposals ·" in page


def test_workload_agreement_and_claim_counts_open_the_list_of_exactly_those_proposals(
    reviewer_client, reviewer, second_reviewer
):
    panel = make_panel("u1", "u2", "u3", need=3)
    agreed = judged(panel, {"u1": "pass", "u2": "pass", "u3": "fail"})
    disagreed = judged(panel, {"u1": "pass", "u2": "fail", "u3": "fail"})
    held = judged(panel, {"u1": "pass", "u2": "fail", "u3": "fail"})
    lapsed = judged(panel, {"u1": "pass", "u2": "pass", "u3": "fail"})
    judged(panel, {"u1": "pass", "u2": "fail"}, cites={"u1": (BAD_CITE,)})  # open, u3 failed
    pair = make_panel("t1", "t2", need=2)
    decide(judged(pair, {"t1": "pass", "t2": "fail"}), second_reviewer, "approved")  # a tie
    decide(agreed, reviewer, "approved")
    decide(disagreed, reviewer, "approved")
    escalation_claim(escalation_id=Escalation.objects.get(proposal=held).pk, user=reviewer)
    lapsed_escalation = Escalation.objects.get(proposal=lapsed)
    escalation_claim(escalation_id=lapsed_escalation.pk, user=second_reviewer)
    Escalation.objects.filter(pk=lapsed_escalation.pk).update(
        claimed_at=timezone.now() - timedelta(hours=2)
    )

    html = _get(reviewer_client).content.decode()
    cells = {
        "workload": html.split('id="table-workload"', 1)[1].split("</table>", 1)[0],
        "larger side": html.split('id="table-larger-side"', 1)[1].split("</table>", 1)[0],
        "fleiss": html.split('id="table-fleiss"', 1)[1].split("</table>", 1)[0],
        "lenses": html.split('id="table-lenses"', 1)[1].split("</table>", 1)[0],
    }
    link = re.compile(r'<a [^>]*href="(/proposals\?[^"]*)"[^>]*>(\d+)</a>')
    expected = {
        # Rows nobody, rita, sam; columns open, claimed, (expired,) resolved.
        "workload": ["1", "0", "0", "0", "1", "2", "0", "1", "1", "1"],
        "larger side": ["3", "1", "1", "1"],  # decided, agreed, disagreed, ties
        "fleiss": ["4", "1"],  # u-panel: the 4 every lens judged; the t-pair's 1
        "lenses": None,
    }
    for table, html_part in cells.items():
        found = link.findall(html_part)
        if expected[table] is not None:
            assert sorted(count for _, count in found) == sorted(expected[table]), table
        for href, count in found:
            assert _list_count(reviewer_client, href) == int(count), (table, href)
    # The claim counts: every lens row links its claims and its unresolved cites.
    u1 = re.search(r'<tr data-lens="u1">(.*?)</tr>', cells["lenses"], re.S).group(1)
    claims = re.search(r'data-col="claims"><a href="([^"]+)"[^>]*>5</a>', u1).group(1)
    assert _list_count(reviewer_client, claims) == 5
    unresolved = re.search(r'\(<a href="([^"]+)"[^>]*>1</a>\)', u1).group(1)
    assert _list_count(reviewer_client, unresolved) == 1
    page = reviewer_client.get(unescape(unresolved)).content.decode()
    assert "with unresolved cites by that lens" in page
    lapsed_link = re.search(r'<a href="([^"]*workload=expired[^"]*)"', cells["workload"]).group(1)
    page = reviewer_client.get(unescape(lapsed_link)).content.decode()
    assert "claimed by sam whose claim has lapsed" in page
