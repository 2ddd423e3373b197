"""The guarantee on the dashboard: listed for all panels, in full for one."""

import pytest
from django.urls import reverse

from reviewapp.review.models import Proposal
from tests.factories import ReviewerFactory
from tests.review.helpers import evaluate_in_process, submit

from .builders import CONTENT, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db

# session, user, reviewer group + panel + settings + configuration (1) + evidence + days
GUARANTEE_PAGE_QUERIES = 8


@pytest.fixture
def reviewer_client(client):
    client.force_login(ReviewerFactory())
    return client


def test_the_dashboard_lists_each_panel_that_gives_a_guarantee(reviewer_client):
    guaranteed(voting_panel(["pass", "pass", "pass"], name="billing"), target=0.9)
    voting_panel(["pass", "pass", "pass"], name="plain")
    page = reviewer_client.get(reverse("dashboard")).content.decode()
    assert "billing</a>: With 95 % confidence, at least 90 %" in page
    assert "plain</a>:" not in page


def test_a_panel_scope_loads_the_guarantee_with_a_real_link(reviewer_client):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    page = reviewer_client.get(reverse("dashboard"), {"panel": panel.pk}).content.decode()
    url = f"/dashboard/guarantee?panel={panel.pk}"
    assert f'hx-get="{url}"' in page and f'href="{url}"' in page


def test_the_guarantee_page_shows_the_patterns_and_what_they_still_need(
    reviewer_client, django_assert_num_queries
):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=199)
    assert evaluate_in_process(submit(panel, CONTENT)).status == Proposal.Status.DECIDED
    with django_assert_num_queries(GUARANTEE_PAGE_QUERIES):
        response = reviewer_client.get(reverse("dashboard_guarantee"), {"panel": panel.pk})
    page = response.content.decode()
    assert "With 95 % confidence, at least 95 %" in page
    assert 'data-pattern="approved:3p0f0m:unchecked" data-routed="machine"' in page
    assert "105 more agreeing labels" in page  # the majority pattern, never labelled
    assert "Agreement of all 1 automatic decisions" in page


def test_with_htmx_the_page_answers_with_its_section_alone(reviewer_client):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    response = reviewer_client.get(
        reverse("dashboard_guarantee"), {"panel": panel.pk}, headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith("<section") and "<html" not in body
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize("query", [{}, {"panel": "x"}, {"panel": "0"}, {"panel": "1e99"}])
def test_a_panel_that_cannot_be_read_is_a_400_that_says_what_to_do(reviewer_client, query):
    response = reviewer_client.get(reverse("dashboard_guarantee"), query)
    assert response.status_code == 400
    assert "Choose a panel" in response.content.decode()


def test_an_unknown_panel_is_a_404(reviewer_client):
    assert reviewer_client.get(reverse("dashboard_guarantee"), {"panel": 999}).status_code == 404


def test_the_page_is_for_reviewers(client):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    response = client.get(reverse("dashboard_guarantee"), {"panel": panel.pk})
    assert response.status_code == 302 and "/login/" in response["Location"]
