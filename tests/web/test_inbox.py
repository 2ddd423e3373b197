import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.review.models import Escalation
from reviewapp.review.services.escalations import escalation_claim
from reviewapp.web import inbox

from .builders import judgement, make_panel, run_panel, split_panel_proposal

pytestmark = pytest.mark.django_db


def _row_ids(response) -> list[int]:
    return [int(i) for i in re.findall(rb'data-row data-id="(\d+)"', response.content)]


def _escalations(panel, n: int, prefix: str = "p") -> list[Escalation]:
    return [
        Escalation.objects.get(
            proposal=split_panel_proposal(
                panel, content=f"{prefix} {i}. The sky is blue. Water is wet."
            )
        )
        for i in range(n)
    ]


def _lens_failed(content: str = "Two of three answered.") -> Escalation:
    """Two lenses pass, the third never answers: escalated for the failed lens only."""
    panel = make_panel("x-lens", "y-lens", "z-lens", need=2)
    responses = {"x-lens": judgement("pass"), "y-lens": judgement("pass")}
    return Escalation.objects.get(proposal=run_panel(panel, content, responses))


def test_lists_open_and_claimed_escalations_newest_first(reviewer_client, panel, second_reviewer):
    first, second, third = _escalations(panel, 3)
    escalation_claim(escalation_id=second.pk, user=second_reviewer)
    response = reviewer_client.get(reverse("inbox"))
    assert _row_ids(response) == [third.pk, second.pk, first.pk]


def test_resolved_escalations_leave_the_inbox(reviewer_client, escalation):
    Escalation.objects.filter(pk=escalation.pk).update(status="resolved")
    response = reviewer_client.get(reverse("inbox"))
    assert _row_ids(response) == []
    assert b"Nothing is waiting" in response.content


def test_row_shows_reason_badge_panel_tally_and_title(reviewer_client, escalation):
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert 'class="badge badge--no_quorum">No quorum<' in content
    assert "Split verdict" in content and "accuracy" not in content.split("<tbody>")[0]
    assert escalation.proposal.panel.name in content
    assert "1 pass · 1 fail of 2, need 2 → no quorum" in content


def test_row_shows_who_claimed_it(reviewer_client, escalation, second_reviewer):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert '<span class="holder">sam</span>' in content


def test_an_expired_claim_shows_as_expired(reviewer_client, escalation, second_reviewer):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    Escalation.objects.filter(pk=escalation.pk).update(
        claimed_at=timezone.now() - timedelta(hours=5)
    )
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert "expired (sam)" in content


def test_lens_failure_escalation_has_its_badge(reviewer_client):
    escalation = _lens_failed()
    assert escalation.reasons == ["lens_failed"]
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert 'badge--lens_failed">Lens failed<' in content


def test_filter_by_reason(reviewer_client, panel):
    split = _escalations(panel, 1)[0]
    failed = _lens_failed()
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"reason": "lens_failed"})) == [failed.pk]
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"reason": "no_quorum"})) == [split.pk]


def test_filter_by_panel(reviewer_client, panel):
    split = _escalations(panel, 1)[0]
    failed = _lens_failed()
    other = failed.proposal.panel
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"panel": other.pk})) == [failed.pk]
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"panel": panel.pk})) == [split.pk]


def test_counts_per_reason(reviewer_client, panel):
    _escalations(panel, 2)
    _lens_failed()
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert 'data-count="all">3<' in content
    assert 'data-count="no_quorum">2<' in content
    assert 'data-count="lens_failed">1<' in content
    assert 'data-count="inconclusive">0<' in content
    assert 'data-count="sign_off">0<' in content


def test_sign_off_escalation_is_counted(reviewer_client):
    panel = make_panel("only", need=1, requires_sign_off=True)
    run_panel(panel, "All good here.", {"only": judgement("pass", "All good here.")})
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert 'data-count="sign_off">1<' in content and 'badge--sign_off">Sign-off<' in content


def test_inbox_polls_a_partial_as_often_as_configured(reviewer_client, escalation, settings):
    settings.REVIEWAPP_INBOX_POLL_SECONDS = 7
    page = reviewer_client.get(reverse("inbox")).content.decode()
    assert 'hx-trigger="poll" data-poll="7"' in page
    assert 'id="inbox-results"' in page
    partial = reviewer_client.get(reverse("inbox"), headers={"HX-Request": "true"})
    body = partial.content.decode()
    assert body.lstrip().startswith('<section id="inbox-results"')
    assert "<html" not in body and "Split verdict" in body
    assert "HX-Request" in partial["Vary"]  # the page and its fragment share the URL


def test_a_new_escalation_appears_in_the_polled_partial(reviewer_client, panel):
    _escalations(panel, 1)
    before = _row_ids(reviewer_client.get(reverse("inbox"), headers={"HX-Request": "true"}))
    newer = _escalations(panel, 1, prefix="later")[0]
    after = _row_ids(reviewer_client.get(reverse("inbox"), headers={"HX-Request": "true"}))
    assert after == [newer.pk, *before]


def test_inbox_is_paginated(reviewer_client, panel):
    escalations = _escalations(panel, 27)
    first = _row_ids(reviewer_client.get(reverse("inbox")))
    second = _row_ids(reviewer_client.get(reverse("inbox"), {"page": 2}))
    assert len(first) == 25 and len(second) == 2
    assert set(first) | set(second) == {e.pk for e in escalations}


# session, user, group check, reason counts (also the page count), page ids, rows, panels
INBOX_QUERIES = 7


@pytest.mark.parametrize("rows", [3, 30])
def test_inbox_query_count_does_not_grow_with_rows(
    reviewer_client, panel, second_reviewer, django_assert_num_queries, rows
):
    escalations = _escalations(panel, rows)
    escalation_claim(escalation_id=escalations[0].pk, user=second_reviewer)
    with django_assert_num_queries(INBOX_QUERIES):
        response = reviewer_client.get(reverse("inbox"))
    assert len(_row_ids(response)) == min(rows, 25)


@pytest.mark.parametrize("rows", [3, 30])
def test_polled_partial_query_count_does_not_grow_with_rows(
    reviewer_client, panel, django_assert_num_queries, rows
):
    _escalations(panel, rows)
    with django_assert_num_queries(INBOX_QUERIES - 1):
        reviewer_client.get(reverse("inbox"), headers={"HX-Request": "true"})


def test_mine_shows_only_what_i_hold(reviewer_client, reviewer, second_reviewer, panel):
    mine, theirs, _open = _escalations(panel, 3)
    escalation_claim(escalation_id=mine.pk, user=reviewer)
    escalation_claim(escalation_id=theirs.pk, user=second_reviewer)
    response = reviewer_client.get(reverse("inbox"), {"mine": "1"})
    assert _row_ids(response) == [mine.pk]
    assert 'data-count="all">1<' in response.content.decode()


def test_sort_by_age_oldest_first(reviewer_client, panel):
    first, second, third = _escalations(panel, 3)
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"sort": "oldest"})) == [
        first.pk,
        second.pk,
        third.pk,
    ]
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"sort": "bogus"})) == [
        third.pk,
        second.pk,
        first.pk,
    ]


def test_search_matches_the_content_and_the_title(reviewer_client, panel):
    by_content = Escalation.objects.get(
        proposal=split_panel_proposal(panel, content="Refunds go to Rotterdam. The sky is blue.")
    )
    by_title = Escalation.objects.get(
        proposal=split_panel_proposal(panel, title="Rotterdam shipping", content="Water is wet.")
    )
    _escalations(panel, 2)
    response = reviewer_client.get(reverse("inbox"), {"q": "rotterdam"})
    assert sorted(_row_ids(response)) == sorted([by_content.pk, by_title.pk])
    assert 'data-count="all">2<' in response.content.decode()
    assert _row_ids(reviewer_client.get(reverse("inbox"), {"q": "amsterdam"})) == []


def test_the_page_says_reason_counts_overlap(reviewer_client, escalation):
    content = reviewer_client.get(reverse("inbox")).content.decode()
    assert "can have several reasons" in content


def test_filters_keep_each_other_in_the_reason_links(reviewer_client, escalation):
    content = reviewer_client.get(reverse("inbox"), {"q": "sky", "sort": "oldest", "mine": "1"})
    html = content.content.decode()
    assert "q=sky&amp;sort=oldest&amp;mine=1&amp;reason=no_quorum" in html


def test_counts_stop_at_the_limit_and_the_list_at_its_first_rows(
    reviewer_client, panel, monkeypatch
):
    monkeypatch.setattr(inbox, "COUNT_LIMIT", 3)
    escalations = _escalations(panel, 5)
    response = reviewer_client.get(reverse("inbox"))
    html = response.content.decode()
    assert 'data-count="all">3+<' in html and 'data-count="no_quorum">3+<' in html
    assert 'data-count="lens_failed">0<' in html
    assert "Counts stop at 3, and the list shows its first 3" in html
    assert _row_ids(response) == [e.pk for e in reversed(escalations)][:3]
    oldest = _row_ids(reviewer_client.get(reverse("inbox"), {"sort": "oldest"}))
    assert oldest == [e.pk for e in escalations][:3]


def test_a_search_lists_its_few_matches_in_order_with_exact_counts(reviewer_client, panel):
    kiwis = _escalations(panel, 3, prefix="kiwi")
    _escalations(panel, 2, prefix="pear")
    response = reviewer_client.get(reverse("inbox"), {"q": "kiwi", "sort": "oldest"})
    html = response.content.decode()
    assert _row_ids(response) == [e.pk for e in kiwis]
    assert 'data-count="all">3<' in html and 'data-count="no_quorum">3<' in html


def test_a_search_with_more_matches_than_the_limit_lists_the_newest_first(
    reviewer_client, panel, monkeypatch
):
    monkeypatch.setattr(inbox, "COUNT_LIMIT", 2)
    kiwis = _escalations(panel, 4, prefix="kiwi")
    _escalations(panel, 2, prefix="pear")
    response = reviewer_client.get(reverse("inbox"), {"q": "kiwi"})
    html = response.content.decode()
    assert _row_ids(response) == [kiwis[3].pk, kiwis[2].pk]
    assert 'data-count="all">2+<' in html
    # Counted from the first matches found, which need not be all of a reason's.
    assert 'data-count="lens_failed"' not in html


def test_a_search_past_the_limit_costs_no_extra_query(
    reviewer_client, panel, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(inbox, "COUNT_LIMIT", 2)
    _escalations(panel, 5)
    with django_assert_num_queries(INBOX_QUERIES):
        response = reviewer_client.get(reverse("inbox"), {"q": "sky", "reason": "no_quorum"})
    assert len(_row_ids(response)) == 2


def test_a_search_with_a_reason_counts_what_it_lists(reviewer_client, panel, monkeypatch):
    monkeypatch.setattr(inbox, "COUNT_LIMIT", 2)
    _escalations(panel, 3, prefix="kiwi")
    failed = _lens_failed("kiwi, and one lens never answered.")
    response = reviewer_client.get(reverse("inbox"), {"q": "kiwi", "reason": "lens_failed"})
    assert _row_ids(response) == [failed.pk]
    assert "Counts stop at" not in response.content.decode()


@pytest.mark.parametrize("rows", [3, 30])
def test_searching_and_filtering_the_inbox_costs_no_extra_query(
    reviewer_client, reviewer, panel, django_assert_num_queries, rows
):
    escalations = _escalations(panel, rows)
    escalation_claim(escalation_id=escalations[0].pk, user=reviewer)
    with django_assert_num_queries(INBOX_QUERIES):
        reviewer_client.get(reverse("inbox"), {"q": "sky", "sort": "oldest", "mine": "1"})
    with django_assert_num_queries(INBOX_QUERIES):
        reviewer_client.get(reverse("inbox"), {"q": "sky", "reason": "no_quorum"})
