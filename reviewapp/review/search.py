"""What full-text search reads (PostgreSQL): a tsvector per proposal, copied onto open escalations.

The vector covers the title and the first SEARCH_CONTENT_CHARS characters of
the content: a tsvector is limited to 1 MB, and a 1 MB proposal must still be
storable. Words are taken as written ('simple': no stemming, proposals come
in every language).

Proposals are searched through a GIN expression index on this vector. The
inbox searches only open escalations, so each one carries a copy of its
proposal's vector while it is open (Escalation.search, cleared when it is
resolved): its GIN index holds the open escalations alone, however many
proposals there are.
"""

from django.contrib.postgres.search import SearchVector
from django.db import connection
from django.db.models import Subquery
from django.db.models.functions import Left

SEARCH_CONFIG = "simple"
SEARCH_CONTENT_CHARS = 100_000


def proposal_search_vector() -> SearchVector:
    """The indexed expression; the index of migration 0008 is built from this same call."""
    return SearchVector("title", Left("content", SEARCH_CONTENT_CHARS), config=SEARCH_CONFIG)


def escalation_search_vector(proposal_id: int) -> Subquery | None:
    """The value of Escalation.search for an escalation of `proposal_id` (None off PostgreSQL).

    A subquery, so the content is read inside the database, never into Python.
    """
    from .models import Proposal

    if connection.vendor != "postgresql":
        return None
    return Subquery(Proposal.objects.filter(pk=proposal_id).values(v=proposal_search_vector()))
