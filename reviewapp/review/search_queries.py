"""Searching proposals and open escalations by what they say: title and content.

A search is parsed once (reviewapp.core.search_query: words, "phrases",
-exclusions, `or`; bounded in length and words) and each database is given
the same meaning:

- PostgreSQL: full-text search, the canonical form of the query through
  `websearch_to_tsquery` under the 'simple' configuration (words as written,
  no stemming), against the vectors of reviewapp.review.search: proposals
  through their GIN expression index, the inbox through its open
  escalations' own vectors.
- SQLite: each word or phrase as a case-insensitive regular expression over
  title and content: whole words, a phrase's words one after the other with
  only spaces or punctuation between them.
"""

import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery as PgSearchQuery
from django.contrib.postgres.search import SearchVectorExact
from django.db import connection
from django.db.models import Q

from reviewapp.core.search_query import SearchQuery, SearchQueryError, Term, search_query_parse
from reviewapp.review.search import SEARCH_CONFIG, proposal_search_vector


@dataclass(frozen=True)
class TypedSearch:
    """A search box's content: `text` as typed, and the query it makes or why it makes none."""

    text: str = ""
    query: SearchQuery | None = None  # None: an empty box, or `error`
    error: str = ""


def search_typed(raw: str) -> TypedSearch:
    # PostgreSQL text cannot hold NUL; a search for it could only match nothing.
    text = raw.replace("\x00", "").strip()
    if not text:
        return TypedSearch()
    try:
        return TypedSearch(text, search_query_parse(text))
    except SearchQueryError as exc:
        return TypedSearch(text, error=str(exc))


def _pg_query(query: SearchQuery) -> PgSearchQuery:
    return PgSearchQuery(query.websearch(), config=SEARCH_CONFIG, search_type="websearch")


def _term_pattern(term: Term) -> str:
    words = r"\W+".join(re.escape(word) for word in term.words)
    return rf"(?<!\w){words}(?!\w)"


def _sqlite_q(query: SearchQuery, prefix: str) -> Q:
    def term_q(term: Term) -> Q:
        pattern = _term_pattern(term)
        found = Q(**{f"{prefix}title__iregex": pattern}) | Q(
            **{f"{prefix}content__iregex": pattern}
        )
        return ~found if term.negated else found

    alternatives = Q()
    for terms in query.alternatives:
        every = Q()
        for term in terms:
            every &= term_q(term)
        alternatives |= every
    return alternatives


def _proposals_matching(query: SearchQuery):
    """Ids of the proposals whose title or content match `query`, as a subquery."""
    from reviewapp.review.models import Proposal

    if connection.vendor == "postgresql":
        # Written against the very expression the index is on, so PostgreSQL
        # answers from the GIN index instead of parsing every row.
        rows = Proposal.objects.filter(
            SearchVectorExact(proposal_search_vector(), _pg_query(query))
        )
    else:
        rows = Proposal.objects.filter(_sqlite_q(query, ""))
    return rows.values("pk")


def proposal_text_q(query: SearchQuery, *, reference: str = "") -> Q:
    """Proposals whose title or content match `query`; with `reference`, or whose
    external reference contains that text."""
    found = Q(pk__in=_proposals_matching(query))
    if reference:
        found |= Q(external_ref__icontains=reference)
    return found


def escalation_text_q(query: SearchQuery) -> Q:
    """Open escalations whose proposal's title or content match `query`."""
    if connection.vendor == "postgresql":
        return Q(search=_pg_query(query))
    return _sqlite_q(query, "proposal__")
