"""Assignment rules, escalation assignment and panel priority in the admin, all audited."""

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.urls import reverse

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import AssignmentRule, Escalation, Panel
from reviewapp.review.services.panels import panel_configure
from tests.factories import UserFactory
from tests.web.builders import make_panel, split_panel_proposal

pytestmark = pytest.mark.django_db


@pytest.fixture
def legal(db):
    return Group.objects.create(name="legal")


@pytest.fixture
def escalation(db):
    return Escalation.objects.get(proposal=split_panel_proposal(make_panel("a", "b")))


def test_an_assignment_rule_added_in_the_admin_is_audited(admin_client_ada, legal):
    panel = make_panel("c", "d")

    response = admin_client_ada.post(
        reverse("admin:review_assignmentrule_add"),
        {"panel": panel.pk, "reason": "no_quorum", "assigned_group": legal.pk},
    )

    assert response.status_code == 302
    rule = AssignmentRule.objects.get()
    entry = AuditEntry.objects.get(target_type="assignment rule")
    assert (entry.action, entry.target_id) == ("create", str(rule.pk))
    assert entry.changes["assigned_group"] == {"old": None, "new": "legal"}


def test_a_rule_that_matches_nothing_is_refused_with_a_message(admin_client_ada, legal):
    response = admin_client_ada.post(
        reverse("admin:review_assignmentrule_add"), {"assigned_group": legal.pk}
    )

    assert response.status_code == 200
    assert "Choose a panel, a reason, or both." in response.content.decode()
    assert not AssignmentRule.objects.exists()


def test_assigning_an_escalation_in_the_admin_goes_through_the_audited_service(
    admin_client_ada, superuser, escalation, legal
):
    response = admin_client_ada.post(
        reverse("admin:review_escalation_change", args=[escalation.pk]),
        {"assigned_user": "", "assigned_group": legal.pk},
    )

    assert response.status_code == 302
    escalation.refresh_from_db()
    assert escalation.assigned_group == legal
    entry = AuditEntry.objects.get(action="assign")
    assert entry.actor == superuser
    assert entry.changes == {"assigned_group": {"old": None, "new": "legal"}}


def test_a_decided_escalation_shows_its_assignment_read_only(admin_client_ada, escalation):
    Escalation.objects.filter(pk=escalation.pk).update(status="resolved")

    response = admin_client_ada.get(reverse("admin:review_escalation_change", args=[escalation.pk]))

    assert response.status_code == 200
    assert 'name="assigned_group"' not in response.content.decode()


def test_a_priority_change_in_the_panel_admin_is_audited(admin_client_ada):
    panel = make_panel("e", "f")
    change = reverse("admin:review_panel_change", args=[panel.pk])
    form = admin_client_ada.get(change).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k != "checkers"}
    data.update(priority=7, need=panel.need)
    data.update(
        {
            "panel_lenses-TOTAL_FORMS": 2,
            "panel_lenses-INITIAL_FORMS": 2,
            **{
                f"panel_lenses-{i}-{k}": v
                for i, pl in enumerate(panel.panel_lenses.order_by("position"))
                for k, v in (("id", pl.pk), ("lens", pl.lens_id), ("position", pl.position))
            },
        }
    )

    response = admin_client_ada.post(change, data)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Panel.objects.get(pk=panel.pk).priority == 7
    entry = AuditEntry.objects.filter(target_type="panel", action="update").latest("id")
    assert entry.changes["priority"] == {"old": 0, "new": 7}


def test_panel_configure_sets_the_priority_and_audits_the_change(superuser):
    panel = make_panel("g", "h")
    lenses = panel.ordered_lenses()

    panel_configure(name=panel.name, need=panel.need, lenses=lenses, priority=3, by=superuser)

    assert Panel.objects.get(pk=panel.pk).priority == 3
    entry = AuditEntry.objects.get(target_type="panel")
    assert (entry.action, entry.actor, entry.changes) == (
        "update",
        superuser,
        {"priority": {"old": 0, "new": 3}},
    )


def test_panel_configure_refuses_a_priority_out_of_range_and_writes_nothing():
    panel = make_panel("i", "j")

    with pytest.raises(ValidationError, match="priority"):
        panel_configure(
            name=panel.name, need=panel.need, lenses=panel.ordered_lenses(), priority=10**6
        )
    assert Panel.objects.get(pk=panel.pk).priority == 0


def test_the_admin_offers_only_reviewers_as_assignees(admin_client_ada, escalation, reviewer):
    UserFactory(username="olga")

    response = admin_client_ada.get(reverse("admin:review_escalation_change", args=[escalation.pk]))

    choices = response.context["adminform"].form.fields["assigned_user"].queryset
    assert "rita" in {u.username for u in choices}
    assert "olga" not in {u.username for u in choices}


def test_a_reviewers_disagree_rule_for_a_one_review_panel_is_refused_as_never_firing(
    admin_client_ada, legal
):
    panel = make_panel("c", "d")

    response = admin_client_ada.post(
        reverse("admin:review_assignmentrule_add"),
        {"panel": panel.pk, "reason": "reviewers_disagree", "assigned_group": legal.pk},
    )

    assert response.status_code == 200
    assert "takes one review, so its reviewers never disagree" in response.content.decode()
    assert not AssignmentRule.objects.exists()


def test_a_reviewers_disagree_rule_for_a_two_review_panel_is_taken(admin_client_ada, legal):
    panel = make_panel("c", "d")
    Panel.objects.filter(pk=panel.pk).update(reviews_needed=2)

    response = admin_client_ada.post(
        reverse("admin:review_assignmentrule_add"),
        {"panel": panel.pk, "reason": "reviewers_disagree", "assigned_group": legal.pk},
    )

    assert response.status_code == 302
    assert AssignmentRule.objects.get().reason == "reviewers_disagree"


def test_a_second_rule_for_the_same_panel_and_reason_is_refused_as_never_firing(
    admin_client_ada, legal
):
    AssignmentRule.objects.create(reason="no_quorum", assigned_group=legal)

    response = admin_client_ada.post(
        reverse("admin:review_assignmentrule_add"),
        {"reason": "no_quorum", "assigned_group": Group.objects.create(name="ops").pk},
    )

    assert response.status_code == 200
    assert "already assigns these escalations" in response.content.decode()
    assert AssignmentRule.objects.count() == 1
