"""GET /api/lenses/{name}/agreement: a lens against the reviewers, over a window."""

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.calibration.models import HumanLabel, LensAgreementDay, LensLabel
from reviewapp.core.calibration import HumanTable, kappa_with_interval
from tests.api.conftest import api_with
from tests.calibration.builders import adjudicated, agreeing, disagreeing, many, panel_of

pytestmark = pytest.mark.django_db

KEYS = {
    "lens",
    "n",
    "n_by_kind",
    "agreement",
    "kappa",
    "kappa_ci",
    "kappa_undefined_reason",
    "true_pass_rate",
    "true_fail_rate",
    "claims_marked",
    "claims_marked_incorrect",
    "claims_marked_incorrect_reason",
    "drifting",
    "window",
}


def _move_to(day: datetime.date, lens) -> None:
    """Date every label and day row of `lens` on `day` (decisions themselves are append-only)."""
    at = datetime.datetime.combine(day, datetime.time(12), tzinfo=datetime.UTC)
    LensLabel.objects.filter(lens=lens).update(decided_at=at)
    HumanLabel.objects.update(decided_at=at)
    LensAgreementDay.objects.filter(lens=lens).update(day=day)


def test_agreement_answers_the_issues_shape_with_kappa_and_its_interval():
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(12) + disagreeing(3))
    many(panel, lens, [("pass", "approved")], audit=True)
    body = api_with("read:all").get("/api/lenses/alpha/agreement").json()
    assert set(body) == KEYS
    table = HumanTable(pass_approved=7, pass_rejected=1, fail_approved=2, fail_rejected=6)
    expected = kappa_with_interval(table)
    assert (body["n"], body["n_by_kind"]) == (16, {"escalation": 15, "audit": 1})
    assert body["agreement"] == pytest.approx(13 / 16)
    assert body["kappa"] == pytest.approx(expected.value)
    assert body["kappa_ci"] == pytest.approx([expected.low, expected.high])
    assert body["true_pass_rate"] == pytest.approx(7 / 9)
    assert body["true_fail_rate"] == pytest.approx(6 / 7)
    assert body["claims_marked_incorrect"] is None


def test_claims_marked_incorrect_is_null_with_a_reason_when_none_of_the_lens_was_marked():
    panel, (a, b) = panel_of("alpha", "beta")
    adjudicated(panel, {a: "pass", b: "pass"}, "approved", marks={b: ["incorrect"]})
    body = api_with("read:all").get("/api/lenses/alpha/agreement").json()
    assert (body["claims_marked"], body["claims_marked_incorrect"]) == (0, None)
    assert "no claim of this lens was marked" in body["claims_marked_incorrect_reason"]


def test_claims_marked_in_decisions_give_the_share_marked_incorrect():
    panel, (a, b) = panel_of("alpha", "beta")
    adjudicated(panel, {a: "pass", b: "fail"}, "rejected", marks={a: ["incorrect", "correct"]})
    adjudicated(
        panel,
        {a: "pass", b: "pass"},
        "approved",
        marks={a: ["correct", "irrelevant"], b: ["incorrect"]},
    )
    body = api_with("read:all").get("/api/lenses/alpha/agreement").json()
    assert (body["claims_marked"], body["claims_marked_incorrect"]) == (4, 0.25)
    assert body["claims_marked_incorrect_reason"] is None
    beta = api_with("read:all").get("/api/lenses/beta/agreement").json()
    assert (beta["claims_marked"], beta["claims_marked_incorrect"]) == (1, 1.0)


def test_claims_marked_outside_the_window_are_not_counted():
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "rejected", marks={lens: ["incorrect"]})
    tomorrow = datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1)
    body = api_with("read:all").get("/api/lenses/alpha/agreement", {"since": tomorrow}).json()
    assert (body["claims_marked"], body["claims_marked_incorrect"]) == (0, None)


def test_kappa_is_null_with_a_reason_when_too_few_were_decided():
    panel, (lens,) = panel_of("alpha")
    adjudicated(panel, {lens: "pass"}, "approved")
    body = api_with("read:all").get("/api/lenses/alpha/agreement").json()
    assert (body["kappa"], body["kappa_ci"]) == (None, None)
    assert "fewer than" in body["kappa_undefined_reason"]


def test_kappa_is_null_with_a_reason_when_all_fell_in_one_class():
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, [("pass", "approved")] * 12)
    body = api_with("read:all").get("/api/lenses/alpha/agreement").json()
    assert body["kappa"] is None and "one class" in body["kappa_undefined_reason"]


def test_the_window_counts_only_decisions_made_within_it():
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(4))
    _move_to(datetime.date(2026, 1, 5), lens)
    many(panel, lens, agreeing(2))
    api = api_with("read:all")
    old = api.get("/api/lenses/alpha/agreement", {"since": "2026-01-01", "until": "2026-01-31"})
    assert old.json()["n"] == 4
    assert old.json()["window"] == {"since": "2026-01-01", "until": "2026-01-31"}
    assert api.get("/api/lenses/alpha/agreement", {"since": "2026-02-01"}).json()["n"] == 2


def test_a_window_ending_before_it_starts_is_a_422_that_says_so():
    panel_of("alpha")
    response = api_with("read:all").get(
        "/api/lenses/alpha/agreement", {"since": "2026-03-01", "until": "2026-02-01"}
    )
    assert response.status_code == 422
    assert "since" in response.json()["detail"]


def test_a_date_that_is_not_a_date_is_a_422():
    panel_of("alpha")
    response = api_with("read:all").get("/api/lenses/alpha/agreement", {"since": "last week"})
    assert response.status_code == 422


def test_an_unknown_lens_is_a_404():
    assert api_with("read:all").get("/api/lenses/nobody/agreement").status_code == 404


def test_a_name_no_lens_can_have_is_a_404_not_a_server_error():
    # A NUL in the path reached the query: PostgreSQL refused it, and the API answered 500.
    panel_of("alpha")
    assert api_with("read:all").get("/api/lenses/al%00pha/agreement").status_code == 404


def test_the_answer_costs_the_same_queries_however_many_decisions():
    panel, (lens,) = panel_of("alpha")
    api = api_with("read:all")
    many(panel, lens, agreeing(2))
    api.get("/api/lenses/alpha/agreement")  # the token's first use is recorded once
    with CaptureQueriesContext(connection) as few:
        api.get("/api/lenses/alpha/agreement")
    many(panel, lens, agreeing(20), marks={lens: ["incorrect", "correct"]})
    with CaptureQueriesContext(connection) as more:
        body = api.get("/api/lenses/alpha/agreement").json()
    assert body["claims_marked"] == 40
    assert len(more) == len(few)


def test_a_read_token_is_refused_a_lens_whose_figures_count_proposals_it_may_not_see():
    # Another client's decisions are in the lens's figures; a day's window would give
    # their outcomes one by one.
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(12))
    response = api_with("read").get("/api/lenses/alpha/agreement")
    assert response.status_code == 404
    assert "read:all" in response.json()["detail"]


def test_a_read_token_reads_the_agreement_of_the_external_lens_that_names_its_client():
    from reviewapp.review.models import Lens
    from tests.api.conftest import Api, client_of, make_token

    panel, (lens,) = panel_of("alpha")
    Lens.objects.filter(pk=lens.pk).update(backend=Lens.Backend.EXTERNAL)
    token = make_token("read", "judge")
    lens.judge_clients.add(client_of(token))
    many(panel, lens, agreeing(12))
    response = Api(token).get("/api/lenses/alpha/agreement")
    assert (response.status_code, response.json().get("n")) == (200, 12)
