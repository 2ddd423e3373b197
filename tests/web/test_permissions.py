"""Every review page: anonymous → login, non-reviewer → 403, reviewer and staff → allowed."""

import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.review.models import Decision

pytestmark = pytest.mark.django_db


@pytest.fixture
def decision(escalation, second_reviewer):
    from reviewapp.review.services.escalations import escalation_claim, escalation_decide

    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    return escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Fine.",
        user=second_reviewer,
        decided_by_name=second_reviewer.username,
    )


GET_VIEWS = [
    ("inbox", None),
    ("proposal_list", None),
    ("decision_list", None),
    ("proposal_detail", "proposal"),
    ("proposal_progress", "queued"),
    ("decision_verify", "decision"),
]
POST_VIEWS = ["escalation_claim", "escalation_release", "escalation_decide"]


def _get_url(name, arg, escalated, decision_factory):
    if arg == "queued":
        from reviewapp.review.services.proposals import proposal_submit

        queued, _ = proposal_submit(panel_name=escalated.panel.name, content="Still waiting.")
        return reverse(name, args=[queued.pk])
    if arg == "proposal":
        return reverse(name, args=[escalated.pk])
    if arg == "decision":
        return reverse(name, args=[decision_factory().pk])
    return reverse(name)


@pytest.fixture
def url_for(escalated, request):
    def build(name, arg):
        return _get_url(name, arg, escalated, lambda: request.getfixturevalue("decision"))

    return build


@pytest.mark.parametrize(("name", "arg"), GET_VIEWS)
def test_anonymous_visitors_are_sent_to_login(client, url_for, name, arg):
    url = url_for(name, arg)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize(("name", "arg"), GET_VIEWS)
def test_non_reviewers_are_forbidden(client, outsider, url_for, name, arg):
    client.force_login(outsider)
    response = client.get(url_for(name, arg))
    assert response.status_code == 403
    assert b"Only reviewers" in response.content


@pytest.mark.parametrize(("name", "arg"), GET_VIEWS)
def test_reviewers_are_allowed(client, reviewer, url_for, name, arg):
    client.force_login(reviewer)
    assert client.get(url_for(name, arg)).status_code == 200


@pytest.mark.parametrize(("name", "arg"), GET_VIEWS)
def test_staff_are_allowed_without_the_group(client, staff_user, url_for, name, arg):
    client.force_login(staff_user)
    assert client.get(url_for(name, arg)).status_code == 200


@pytest.mark.parametrize("name", POST_VIEWS)
def test_anonymous_posts_change_nothing(client, escalation, name):
    response = client.post(
        reverse(name, args=[escalation.pk]), {"outcome": "approved", "rationale": "x"}
    )
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    escalation.refresh_from_db()
    assert escalation.status == "open" and not Decision.objects.exists()


@pytest.mark.parametrize("name", POST_VIEWS)
def test_non_reviewer_posts_are_forbidden(client, outsider, escalation, name):
    client.force_login(outsider)
    response = client.post(
        reverse(name, args=[escalation.pk]), {"outcome": "approved", "rationale": "x"}
    )
    assert response.status_code == 403
    escalation.refresh_from_db()
    assert escalation.status == "open" and not Decision.objects.exists()


def test_staff_outside_the_reviewers_group_may_not_claim(client, staff_user, escalation):
    # The API's rule too (tests/api/test_auth.py): staff read, reviewers sign.
    client.force_login(staff_user)
    response = client.post(reverse("escalation_claim", args=[escalation.pk]))
    assert response.status_code == 403
    escalation.refresh_from_db()
    assert escalation.status == "open"


def test_staff_outside_the_reviewers_group_may_not_sign_even_holding_a_claim(
    client, staff_user, escalation
):
    # A claim taken before the rule (or written by hand) does not make staff a reviewer.
    type(escalation).objects.filter(pk=escalation.pk).update(
        status="claimed", claimed_by=staff_user, claimed_at=timezone.now()
    )
    client.force_login(staff_user)
    response = client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        {"outcome": "approved", "rationale": "Looks right."},
    )
    assert response.status_code == 403
    assert not Decision.objects.exists()


def test_staff_outside_the_reviewers_group_are_offered_no_claim_they_cannot_use(
    client, staff_user, escalation
):
    client.force_login(staff_user)
    inbox = client.get(reverse("inbox")).content.decode()
    page = client.get(reverse("proposal_detail", args=[escalation.proposal_id])).content.decode()
    claim_url = reverse("escalation_claim", args=[escalation.pk])
    assert claim_url not in inbox and claim_url not in page
    assert "signing decisions takes membership of the reviewers group" in page


def test_reviewers_are_offered_the_claim(reviewer_client, escalation):
    claim_url = reverse("escalation_claim", args=[escalation.pk])
    assert claim_url in reviewer_client.get(reverse("inbox")).content.decode()


def test_actions_refuse_get(reviewer_client, escalation):
    assert reviewer_client.get(reverse("escalation_claim", args=[escalation.pk])).status_code == 405


def test_login_page_renders_for_anonymous(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content and b'name="password"' in response.content


def test_login_form_signs_a_reviewer_in_and_lands_on_the_inbox(client, reviewer):
    response = client.post(reverse("login"), {"username": "rita", "password": "pw-for-tests"})
    assert response.status_code == 302 and response["Location"] == reverse("inbox")
    assert client.get(reverse("inbox")).status_code == 200


def test_logout_is_a_post_and_ends_the_session(reviewer_client):
    response = reviewer_client.post(reverse("logout"))
    assert response.status_code == 302
    assert reviewer_client.get(reverse("inbox")).status_code == 302
