import pytest
from django.contrib.auth.models import Group

from reviewapp.audit.models import AuditEntry
from reviewapp.review.models import AssignmentRule, Escalation
from reviewapp.review.services.assignments import (
    AssignmentClosed,
    NotStaffToAssign,
    escalation_assign,
    escalation_assign_by_rules,
)
from reviewapp.review.services.escalations import escalation_review
from tests.api.conftest import evaluated
from tests.web.builders import make_panel, split_panel_proposal


@pytest.fixture
def panel(db):
    return make_panel("accuracy", "tone")


@pytest.fixture
def escalation(panel):
    return Escalation.objects.get(proposal=split_panel_proposal(panel))


@pytest.fixture
def team(db):
    return Group.objects.create(name="legal")


def _entries(escalation):
    return list(
        AuditEntry.objects.filter(target_type="escalation", target_id=str(escalation.pk))
        .exclude(action__in=["claim", "release"])
        .order_by("id")
    )


def test_staff_assigning_a_person_stores_it_and_writes_an_assign_entry(
    escalation, staff_user, reviewer
):
    escalation_assign(escalation=escalation, user=reviewer, by=staff_user)

    escalation.refresh_from_db()
    assert escalation.assigned_user == reviewer
    [entry] = _entries(escalation)
    assert entry.action == AuditEntry.Action.ASSIGN
    assert entry.actor == staff_user
    assert entry.changes == {"assigned_user": {"old": None, "new": "rita"}}


def test_reassigning_to_a_group_writes_a_reassign_entry_with_both_sides(
    escalation, staff_user, reviewer, team
):
    escalation_assign(escalation=escalation, user=reviewer, by=staff_user)
    escalation_assign(escalation=escalation, group=team, by=staff_user)

    escalation.refresh_from_db()
    assert (escalation.assigned_user, escalation.assigned_group) == (None, team)
    entry = _entries(escalation)[-1]
    assert entry.action == AuditEntry.Action.REASSIGN
    assert entry.changes == {
        "assigned_user": {"old": "rita", "new": None},
        "assigned_group": {"old": None, "new": "legal"},
    }


def test_unassigning_writes_an_unassign_entry(escalation, staff_user, team):
    escalation_assign(escalation=escalation, group=team, by=staff_user)
    escalation_assign(escalation=escalation, by=staff_user)

    escalation.refresh_from_db()
    assert escalation.assigned_group is None
    assert [e.action for e in _entries(escalation)] == ["assign", "unassign"]


def test_assigning_the_same_again_writes_no_entry(escalation, staff_user, reviewer):
    escalation_assign(escalation=escalation, user=reviewer, by=staff_user)
    escalation_assign(escalation=escalation, user=reviewer, by=staff_user)

    assert len(_entries(escalation)) == 1


def test_a_reviewer_cannot_assign_and_nothing_is_written(escalation, reviewer):
    with pytest.raises(NotStaffToAssign):
        escalation_assign(escalation=escalation, user=reviewer, by=reviewer)

    escalation.refresh_from_db()
    assert escalation.assigned_user is None
    assert _entries(escalation) == []


def test_a_decided_escalation_cannot_be_assigned(escalation, staff_user, reviewer):
    Escalation.objects.filter(pk=escalation.pk).update(status=Escalation.Status.RESOLVED)

    with pytest.raises(AssignmentClosed):
        escalation_assign(escalation=escalation, user=reviewer, by=staff_user)
    assert _entries(escalation) == []


def test_a_panel_rule_assigns_the_escalation_when_it_opens_and_is_audited(panel, team):
    AssignmentRule.objects.create(panel=panel, assigned_group=team)

    escalation = Escalation.objects.get(proposal=split_panel_proposal(panel))

    assert escalation.assigned_group == team
    [entry] = _entries(escalation)
    assert (entry.action, entry.actor_name) == ("assign", "assignment rule")


def test_the_panel_and_reason_rule_wins_over_a_reason_only_rule(panel, team, reviewer):
    AssignmentRule.objects.create(reason="no_quorum", assigned_group=team)
    AssignmentRule.objects.create(panel=panel, reason="no_quorum", assigned_user=reviewer)

    escalation = Escalation.objects.get(proposal=split_panel_proposal(panel))

    assert (escalation.assigned_user, escalation.assigned_group) == (reviewer, None)


def test_a_rule_for_another_reason_leaves_the_escalation_unassigned(panel, team):
    AssignmentRule.objects.create(panel=panel, reason="sign_off", assigned_group=team)

    escalation = Escalation.objects.get(proposal=split_panel_proposal(panel))

    assert escalation.assigned_group is None
    assert _entries(escalation) == []


def _disagreeing_reviews(escalation, first, second):
    for user, outcome in ((first, "approved"), (second, "rejected")):
        escalation_review(
            escalation_id=escalation.pk,
            outcome=outcome,
            rationale=f"{user.username} looked.",
            user=user,
            decided_by_name=user.username,
        )


@pytest.fixture
def two_needed(db):
    proposal = evaluated("Close account 7731 today.", requires_sign_off=True, reviews_needed=2)
    return Escalation.objects.get(proposal=proposal)


def test_a_reviewers_disagree_rule_assigns_the_escalation_when_it_enters_reconcile(
    two_needed, reviewer, second_reviewer
):
    reconcilers = Group.objects.create(name="reconcilers")
    AssignmentRule.objects.create(
        panel=two_needed.proposal.panel, reason="reviewers_disagree", assigned_group=reconcilers
    )

    _disagreeing_reviews(two_needed, reviewer, second_reviewer)

    two_needed.refresh_from_db()
    assert two_needed.status == Escalation.Status.RECONCILE
    assert two_needed.assigned_group == reconcilers
    [entry] = _entries(two_needed)
    assert (entry.action, entry.actor_name) == ("assign", "assignment rule")
    assert entry.changes == {"assigned_group": {"old": None, "new": "reconcilers"}}


def test_the_reconcile_rule_replaces_the_assignment_made_on_open_and_says_so(
    two_needed, reviewer, second_reviewer, team
):
    AssignmentRule.objects.create(panel=two_needed.proposal.panel, assigned_group=team)
    reconcilers = Group.objects.create(name="reconcilers")
    AssignmentRule.objects.create(reason="reviewers_disagree", assigned_group=reconcilers)
    escalation_assign_by_rules(escalation=two_needed, panel_id=two_needed.proposal.panel_id)

    _disagreeing_reviews(two_needed, reviewer, second_reviewer)

    two_needed.refresh_from_db()
    assert two_needed.assigned_group == reconcilers
    entry = _entries(two_needed)[-1]
    assert entry.action == "reassign"
    assert entry.changes == {"assigned_group": {"old": "legal", "new": "reconcilers"}}


def test_without_a_reviewers_disagree_rule_reconcile_keeps_the_assignment(
    two_needed, reviewer, second_reviewer, team
):
    AssignmentRule.objects.create(panel=two_needed.proposal.panel, assigned_group=team)
    escalation_assign_by_rules(escalation=two_needed, panel_id=two_needed.proposal.panel_id)

    _disagreeing_reviews(two_needed, reviewer, second_reviewer)

    two_needed.refresh_from_db()
    assert two_needed.assigned_group == team
    assert len(_entries(two_needed)) == 1
