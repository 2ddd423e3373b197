"""GET /api/panels (what an agent may submit to, how long a person may take, the guarantee)
and GET /api/panels/{name}/guarantee."""

from datetime import timedelta

import pytest

from reviewapp.review.models import Proposal
from tests.factories import CheckerFactory, LensFactory, PanelFactory
from tests.guarantee.builders import (
    CONTENT,
    MAJORITY,
    UNANIMOUS,
    evidence,
    guaranteed,
    voting_panel,
)
from tests.review.helpers import evaluate_in_process, submit

from .conftest import api_with

pytestmark = pytest.mark.django_db

# The guarantee's answer reads the token, the panel, its settings, its current
# configuration (lenses and checkers, in one statement), its evidence and its day sums.
GUARANTEE_QUERIES = 6


def test_panels_lists_the_active_panels_with_their_lenses_and_review_deadline():
    lenses = [LensFactory(name="accuracy"), LensFactory(name="tone")]
    PanelFactory(
        name="billing", lenses=lenses, need=2, checkers=[CheckerFactory(name="schema")],
        review_deadline=timedelta(hours=4), on_deadline="keep_open",
    )  # fmt: skip
    PanelFactory(name="support", lenses=lenses[:1], need=1)
    PanelFactory(name="retired", lenses=lenses[:1], need=1, active=False)

    body = api_with("submit").get("/api/panels").json()

    by_name = {p["name"]: p for p in body["items"]}
    assert set(by_name) == {"billing", "support"}
    billing = by_name["billing"]
    assert [lens["name"] for lens in billing["lenses"]] == ["accuracy", "tone"]
    assert billing["need"] == 2 and billing["checkers"] == ["schema"]
    assert billing["review_deadline_seconds"] == 4 * 3600
    assert billing["on_deadline"] == "keep_open"
    assert by_name["support"]["review_deadline_seconds"] is None
    assert by_name["support"]["on_deadline"] is None


def test_panels_needs_a_token(client):
    assert client.get("/api/panels").status_code == 401


def test_panels_costs_the_same_queries_however_many_panels(django_assert_num_queries):
    api = api_with("read")
    lens = LensFactory()
    PanelFactory(lenses=[lens], need=1)
    api.get("/api/panels")  # the token's first use records it
    with django_assert_num_queries(5) as first:
        api.get("/api/panels")
    for _ in range(5):
        PanelFactory(lenses=[LensFactory()], need=1, checkers=[CheckerFactory()])
    with django_assert_num_queries(len(first.captured_queries)):
        assert len(api.get("/api/panels").json()["items"]) == 6


def test_panels_say_the_guarantee_each_gives():
    lenses = [LensFactory(name="tone"), LensFactory(name="facts")]
    guaranteed(PanelFactory(name="general", lenses=lenses, need=2, checkers=[CheckerFactory()]))
    PanelFactory(name="retired", lenses=[LensFactory()], active=False)
    PanelFactory(name="plain", lenses=[LensFactory(name="solo")])
    body = api_with("judge").get("/api/panels").json()
    by_name = {p["name"]: p for p in body["items"]}
    assert set(by_name) == {"general", "plain"}
    general = by_name["general"]
    assert [lens["name"] for lens in general["lenses"]] == ["tone", "facts"]
    assert general["need"] == 2 and len(general["checkers"]) == 1
    assert general["guarantee"] == {"target": 0.95, "confidence": 0.95}
    assert by_name["plain"]["guarantee"] is None


def test_the_guarantee_names_every_pattern_with_its_figures_and_who_decides_it():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=199, audited=150)
    assert evaluate_in_process(submit(panel, CONTENT)).status == Proposal.Status.DECIDED
    body = api_with("read", "read:all").get(f"/api/panels/{panel.name}/guarantee").json()
    assert (body["enabled"], body["target"], body["confidence"]) == (True, 0.95, 0.95)
    assert body["promise"] == (
        "With 95 % confidence, at least 95 % of this panel's automatic decisions match what a "
        "reviewer would decide."
    )
    assert "fixed sequence" in body["method"]
    by_key = {p["pattern"]: p for p in body["patterns"]}
    assert len(by_key) == 5  # 3 lenses needing 2: two approvals, three rejections
    unanimous = by_key[UNANIMOUS]
    assert unanimous["votes"] == "3 of 3 pass, no checkers"
    assert (unanimous["automatic"], unanimous["labels"], unanimous["agreed"]) == (1, 200, 199)
    assert unanimous["audited"] == 150
    assert unanimous["trusted"] and unanimous["routed"] == "machine"
    assert unanimous["lower_bound"] > 0.95 and unanimous["labels_to_trust"] == 0
    majority = by_key[MAJORITY]
    assert majority["routed"] == "human" and majority["labels"] == 0
    assert majority["labels_to_trust"] == 105 and majority["waits_on"] is None
    assert body["overall"]["decisions"] == 1
    assert body["overall"]["estimate"] == pytest.approx(199 / 200)
    assert body["overall"]["low"] < 199 / 200 < body["overall"]["high"]
    assert body["configuration"]["text"].endswith("need 2; no checkers")


def test_a_panel_without_a_guarantee_shows_its_evidence_and_the_quorum_deciding():
    panel = voting_panel(["pass", "pass", "pass"])
    evaluate_in_process(submit(panel, CONTENT))
    body = api_with("read:all").get(f"/api/panels/{panel.name}/guarantee").json()
    assert body["enabled"] is False and body["target"] is None
    assert body["promise"].startswith("No guarantee")
    unanimous = {p["pattern"]: p for p in body["patterns"]}[UNANIMOUS]
    assert unanimous["routed"] == "machine" and unanimous["labels_to_trust"] is None


def test_a_read_token_that_cannot_see_every_proposal_is_told_why_it_gets_a_404():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    response = api_with("submit", "read").get(f"/api/panels/{panel.name}/guarantee")
    assert response.status_code == 404
    assert "read:all" in response.json()["detail"]


def test_a_token_without_read_is_refused():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    assert api_with("submit").get(f"/api/panels/{panel.name}/guarantee").status_code == 403


@pytest.mark.parametrize("name", ["nobody", "gen%00eral", "%ED%A0%80"])
def test_a_name_no_panel_has_is_a_404_not_a_server_error(name):
    guaranteed(PanelFactory(name="general", lenses=[LensFactory()]))
    assert api_with("read:all").get(f"/api/panels/{name}/guarantee").status_code == 404


def test_the_guarantee_costs_the_same_queries_however_much_evidence(django_assert_num_queries):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    api = api_with("read:all")
    url = f"/api/panels/{panel.name}/guarantee"
    api.get(url)  # the token's first use is recorded once
    with django_assert_num_queries(GUARANTEE_QUERIES):
        api.get(url)
    evidence(panel, UNANIMOUS, labels=5000, agreed=4990)
    evidence(panel, MAJORITY, labels=3000, agreed=2900)
    for _ in range(3):
        evaluate_in_process(submit(panel, CONTENT))
    with django_assert_num_queries(GUARANTEE_QUERIES):
        body = api.get(url).json()
    assert sum(p["automatic"] + p["held"] for p in body["patterns"]) == 3


def test_both_endpoints_are_in_the_openapi_document():
    paths = api_with("read").get("/api/openapi.json").json()["paths"]
    assert "get" in paths["/api/panels"]
    guarantee = paths["/api/panels/{name}/guarantee"]["get"]
    assert "lower_bound" in guarantee["description"]
    assert "404" in guarantee["responses"]
