"""Staff assign an escalation to a person or a group from the proposal page."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import AssignmentRule, Escalation
from reviewapp.review.services.escalations import escalation_review
from tests.api.conftest import evaluated
from tests.factories import ReconcilerFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def chief(db):
    return ReviewerFactory(username="chief", is_staff=True)


def _assign(client, escalation, **data):
    return client.post(reverse("escalation_assign", args=[escalation.pk]), data)


def test_staff_assign_a_person_and_a_group_from_the_proposal_page(
    client, chief, reviewer, escalation
):
    Group.objects.create(name="legal")
    client.force_login(chief)

    response = _assign(client, escalation, user="rita", group="legal")

    assert response.status_code == 302
    escalation.refresh_from_db()
    assert (escalation.assigned_user.username, escalation.assigned_group.name) == ("rita", "legal")
    assert AuditEntry.objects.get(action="assign").actor == chief


def test_the_proposal_page_shows_staff_whom_it_is_assigned_to(client, chief, reviewer, escalation):
    Escalation.objects.filter(pk=escalation.pk).update(assigned_user=reviewer)
    client.force_login(chief)

    page = client.get(reverse("proposal_detail", args=[escalation.proposal_id])).content.decode()

    assert "Assigned to rita." in page


def test_a_reviewer_who_is_not_staff_cannot_assign(reviewer_client, reviewer, escalation):
    response = _assign(reviewer_client, escalation, user="rita")

    assert response.status_code == 403
    escalation.refresh_from_db()
    assert escalation.assigned_user is None
    assert not AuditEntry.objects.filter(action="assign").exists()


def test_assigning_an_unknown_user_is_a_400_that_names_them_and_changes_nothing(
    client, chief, escalation
):
    client.force_login(chief)

    response = _assign(client, escalation, user="nobody")

    assert response.status_code == 400
    assert "No active user is called &#x27;nobody&#x27;" in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.assigned_user is None


def test_assigning_an_unknown_group_is_a_400(client, chief, escalation):
    client.force_login(chief)

    response = _assign(client, escalation, group="ghosts\x00")

    assert response.status_code == 400


def test_assigning_a_decided_escalation_is_a_409(client, chief, reviewer, escalation):
    Escalation.objects.filter(pk=escalation.pk).update(status=Escalation.Status.RESOLVED)
    client.force_login(chief)

    response = _assign(client, escalation, user="rita")

    assert response.status_code == 409


def test_assigning_someone_who_is_not_a_reviewer_is_a_400_that_says_so(
    client, chief, outsider, escalation
):
    client.force_login(chief)

    response = _assign(client, escalation, user="olga")

    assert response.status_code == 400
    assert "olga is not a reviewer" in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.assigned_user is None


def test_a_reconcile_assigned_by_rule_is_in_the_reconcilers_to_my_groups(
    client, reviewer, second_reviewer
):
    rex = ReconcilerFactory(username="rex")
    AssignmentRule.objects.create(
        reason="reviewers_disagree", assigned_group=Group.objects.get(name="reconcilers")
    )
    proposal = evaluated("Close account 7731 today.", requires_sign_off=True, reviews_needed=2)
    escalation = Escalation.objects.get(proposal=proposal)
    for user, outcome in ((reviewer, "approved"), (second_reviewer, "rejected")):
        escalation_review(
            escalation_id=escalation.pk,
            outcome=outcome,
            rationale="Looked.",
            user=user,
            decided_by_name=user.username,
        )
    client.force_login(rex)

    response = client.get(reverse("inbox"), {"assigned": "groups"})

    assert f'data-id="{escalation.pk}"' in response.content.decode()
    assert "assigned to group reconcilers" in response.content.decode()
