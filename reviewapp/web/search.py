"""Searching proposals by what they say: title and content (and external reference).

PostgreSQL uses full-text search over a GIN expression index on the title and
the first SEARCH_CONTENT_CHARS characters of the content (a tsvector is
limited to 1 MB, and a 1 MB proposal must still be storable). The words are
matched with `websearch_to_tsquery` under the 'simple' configuration (no
stemming: proposals come in every language), so "refund policy" finds both
words anywhere, `"refund policy"` the phrase. SQLite has no full-text index
here: a plain case-insensitive substring match.
"""

from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorExact
from django.db import connection
from django.db.models import Q
from django.db.models.functions import Left

SEARCH_CONFIG = "simple"
SEARCH_CONTENT_CHARS = 100_000


def proposal_search_vector() -> SearchVector:
    """The indexed expression; the index in review.Proposal.Meta is built from this same call."""
    return SearchVector("title", Left("content", SEARCH_CONTENT_CHARS), config=SEARCH_CONFIG)


def clean_query(raw: str) -> str:
    # PostgreSQL text cannot hold NUL; a search for it can only match nothing.
    return raw.replace("\x00", "").strip()


def proposals_matching(q: str):
    """Ids of the proposals whose title or content match `q`, as a subquery."""
    from reviewapp.review.models import Proposal

    if connection.vendor == "postgresql":
        # The lookup is written against the very expression the index is on,
        # so PostgreSQL answers from the GIN index instead of parsing every row.
        match = SearchVectorExact(
            proposal_search_vector(),
            SearchQuery(q, config=SEARCH_CONFIG, search_type="websearch"),
        )
        rows = Proposal.objects.filter(match)
    else:
        rows = Proposal.objects.filter(Q(title__icontains=q) | Q(content__icontains=q))
    return rows.values("pk")


def proposal_text_q(q: str, *, id_field: str = "pk", reference: bool = False) -> Q:
    """Rows whose proposal (its id in `id_field`) has a title or content matching `q`.

    With `reference`, a proposal's external reference is matched as a substring too.
    """
    found = Q(**{f"{id_field}__in": proposals_matching(q)})
    if reference:
        found |= Q(external_ref__icontains=q)
    return found
