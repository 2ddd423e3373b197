"""GET /api/panels: what an agent may submit to, and how long a person may take."""

from datetime import timedelta

import pytest

from tests.factories import CheckerFactory, LensFactory, PanelFactory

from .conftest import api_with

pytestmark = pytest.mark.django_db


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
