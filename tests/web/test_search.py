"""What a search finds, the same on SQLite and PostgreSQL, and what it refuses.

The proposals list shows every match, so it is where the meaning is checked;
the inbox and the exports share the same parsing (test_inbox, test_exports).
"""

import re

import pytest
from django.db import connection
from django.urls import reverse

from reviewapp.core.search_query import MAX_CHARS, MAX_WORDS
from tests.review.helpers import submit

from .builders import make_panel, split_panel_proposal

pytestmark = pytest.mark.django_db

needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: websearch_to_tsquery and its operator stack are PostgreSQL's",
)


def _row_ids(response) -> set[int]:
    return {int(i) for i in re.findall(rb'data-row data-id="(\d+)"', response.content)}


def _found(client, q: str) -> set[int]:
    response = client.get(reverse("proposal_list"), {"q": q})
    assert response.status_code == 200
    return _row_ids(response)


@pytest.fixture
def texts(db):
    panel = make_panel("p1", "p2")

    def pk(content: str, title: str = "") -> int:
        return submit(panel, content, title=title).pk

    return {
        "phrase": pk("We sent the breach notification today."),
        "apart": pk("The breach was found; a notification follows."),
        "punctuated": pk("Breach, notification and apology."),
        "plural": pk("Refunds are processed weekly."),
        "refund": pk("A refund was issued.", title="Refund"),
        "other": pk("Nothing related."),
    }


def test_a_phrase_finds_its_words_one_after_the_other(reviewer_client, texts):
    assert _found(reviewer_client, '"breach notification"') == {
        texts["phrase"],
        texts["punctuated"],
    }


def test_the_same_words_unquoted_are_found_anywhere(reviewer_client, texts):
    assert _found(reviewer_client, "breach notification") == {
        texts["phrase"],
        texts["apart"],
        texts["punctuated"],
    }


def test_a_word_matches_whole_words_in_any_case(reviewer_client, texts):
    assert _found(reviewer_client, "REFUND") == {texts["refund"]}
    assert _found(reviewer_client, "refunds") == {texts["plural"]}


def test_a_dash_excludes_a_term(reviewer_client, texts):
    assert _found(reviewer_client, 'breach -"breach notification"') == {texts["apart"]}


def test_or_offers_alternatives(reviewer_client, texts):
    assert _found(reviewer_client, "refunds or apology") == {
        texts["plural"],
        texts["punctuated"],
    }


@pytest.mark.parametrize("url_name", ["inbox", "proposal_list"])
def test_a_search_too_long_answers_400_saying_the_limit(reviewer_client, url_name):
    response = reviewer_client.get(reverse(url_name), {"q": "x" * 100_000})
    assert response.status_code == 400
    assert f"at most {MAX_CHARS:,} characters (this one has 100,000)" in response.content.decode()
    assert "Retry-After" not in response


@pytest.mark.parametrize("url_name", ["inbox", "proposal_list"])
def test_a_search_with_too_many_words_answers_400_saying_the_limit(reviewer_client, url_name):
    words = " ".join(f"w{i}" for i in range(MAX_WORDS + 1))
    response = reviewer_client.get(reverse(url_name), {"q": words})
    assert response.status_code == 400
    assert f"at most {MAX_WORDS} (this one has {MAX_WORDS + 1})" in response.content.decode()


@pytest.mark.parametrize("url_name", ["inbox", "proposal_list"])
def test_the_refused_search_stays_in_the_box_with_its_reason(reviewer_client, url_name):
    response = reviewer_client.get(reverse(url_name), {"q": "---"})
    html = response.content.decode()
    assert response.status_code == 400
    assert 'value="---"' in html and 'aria-invalid="true"' in html
    assert 'role="alert">The search has no word to look for' in html


@needs_postgresql
@pytest.mark.parametrize("url_name", ["inbox", "proposal_list"])
@pytest.mark.parametrize("q", ["-" * 33, "- " * 2000])
def test_runs_of_dashes_answer_400_not_a_tsquery_stack_error(reviewer_client, url_name, q):
    response = reviewer_client.get(reverse(url_name), {"q": q})
    assert response.status_code == 400


@needs_postgresql
def test_twenty_thousand_distinct_words_answer_400_not_503(reviewer_client):
    q = " ".join(f"word{i}" for i in range(20_000))
    response = reviewer_client.get(reverse("proposal_list"), {"q": q})
    assert response.status_code == 400
    assert "too long" in response.content.decode()


@needs_postgresql
@pytest.mark.parametrize("url_name", ["inbox", "proposal_list"])
def test_a_long_run_of_dashes_before_a_word_is_one_exclusion(reviewer_client, url_name):
    panel = make_panel("d1", "d2")
    kept = split_panel_proposal(panel, content="Water is wet. The sky is blue.")
    split_panel_proposal(panel, content="Refunds are late. The sky is blue. Water is wet.")
    ids = _row_ids(reviewer_client.get(reverse(url_name), {"q": "sky " + "-" * 41 + "refunds"}))
    if url_name == "inbox":
        kept = kept.escalations.get()
    assert ids == {kept.pk}
    assert len(_row_ids(reviewer_client.get(reverse(url_name), {"q": "-" * 40 + "sky"}))) == 2
