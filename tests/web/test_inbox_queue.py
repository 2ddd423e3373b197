"""The inbox as a shared queue: "assigned to me", "my groups", and panel priority order."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from reviewapp.review.models import Escalation, Panel

from .builders import make_panel
from .test_inbox import INBOX_QUERIES, _escalations, _row_ids

pytestmark = pytest.mark.django_db


@pytest.fixture
def legal(reviewer):
    group = Group.objects.create(name="legal")
    reviewer.groups.add(group)
    return group


def _assign(escalation, **fields):
    Escalation.objects.filter(pk=escalation.pk).update(**fields)


def test_assigned_to_me_lists_only_what_is_assigned_to_me(
    reviewer_client, reviewer, second_reviewer, panel
):
    mine, theirs, _nobodys = _escalations(panel, 3)
    _assign(mine, assigned_user=reviewer)
    _assign(theirs, assigned_user=second_reviewer)

    response = reviewer_client.get(reverse("inbox"), {"assigned": "me"})

    assert _row_ids(response) == [mine.pk]
    assert "assigned to you" in response.content.decode()


def test_my_groups_lists_what_is_assigned_to_a_group_i_am_in(reviewer_client, legal, panel):
    ours, others, _nobodys = _escalations(panel, 3)
    _assign(ours, assigned_group=legal)
    _assign(others, assigned_group=Group.objects.create(name="finance"))

    response = reviewer_client.get(reverse("inbox"), {"assigned": "groups"})

    assert _row_ids(response) == [ours.pk]
    assert "assigned to group legal" in response.content.decode()


def test_an_unknown_assigned_value_is_ignored(reviewer_client, panel):
    rows = _escalations(panel, 2)

    response = reviewer_client.get(reverse("inbox"), {"assigned": "everyone"})

    assert sorted(_row_ids(response)) == sorted(e.pk for e in rows)


@pytest.mark.parametrize("rows", [3, 30])
@pytest.mark.parametrize("assigned", ["me", "groups"])
def test_the_assigned_filters_cost_no_extra_query(
    reviewer_client, reviewer, legal, panel, django_assert_num_queries, rows, assigned
):
    for escalation in _escalations(panel, rows):
        _assign(escalation, assigned_user=reviewer, assigned_group=legal)

    with django_assert_num_queries(INBOX_QUERIES):
        response = reviewer_client.get(reverse("inbox"), {"assigned": assigned})
    assert len(_row_ids(response)) == min(rows, 25)


def test_priority_order_lists_higher_priority_panels_first_then_oldest(reviewer_client, panel):
    urgent = make_panel("urgent-a", "urgent-b")
    Panel.objects.filter(pk=urgent.pk).update(priority=5)
    old_low, new_low = _escalations(panel, 2, prefix="low")
    old_high, new_high = _escalations(urgent, 2, prefix="high")

    response = reviewer_client.get(reverse("inbox"), {"sort": "priority"})

    assert _row_ids(response) == [old_high.pk, new_high.pk, old_low.pk, new_low.pk]
    assert "priority 5" in response.content.decode()


def test_priority_order_with_a_search_keeps_the_priority_order(reviewer_client, panel):
    urgent = make_panel("urgent-a", "urgent-b")
    Panel.objects.filter(pk=urgent.pk).update(priority=5)
    [low] = _escalations(panel, 1, prefix="low")
    [high] = _escalations(urgent, 1, prefix="high")

    response = reviewer_client.get(reverse("inbox"), {"sort": "priority", "q": "sky"})

    assert _row_ids(response) == [high.pk, low.pk]
