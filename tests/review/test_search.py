"""Open escalations carry their proposal's search vector, and lose it once resolved."""

import pytest
from django.contrib.postgres.search import SearchQuery
from django.db import connection

from reviewapp.review.models import Escalation
from reviewapp.review.services.escalations import escalation_decide
from reviewapp.review.services.final_step import proposal_escalate_final_step
from tests.factories import ReviewerFactory
from tests.web.builders import make_panel, split_panel_proposal

from .helpers import submit

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: the search vector is PostgreSQL's (NULL on SQLite)",
    ),
]


def _found(word: str) -> set[int]:
    query = SearchQuery(word, config="simple", search_type="websearch")
    return set(Escalation.objects.filter(search=query).values_list("pk", flat=True))


def test_an_escalation_is_searchable_by_its_proposals_title_and_content():
    proposal = split_panel_proposal(
        content="Refunds go to Rotterdam. The sky is blue. Water is wet.", title="Harbour"
    )
    escalation = Escalation.objects.get(proposal=proposal)
    assert _found("rotterdam") == _found("harbour") == {escalation.pk}
    assert _found("amsterdam") == set()


def test_an_escalation_of_a_failed_final_step_is_searchable_too():
    proposal = submit(make_panel("a", "b"), "Customs papers for Rotterdam.")
    escalation = proposal_escalate_final_step(proposal_id=proposal.pk, attempts=3)
    assert _found("customs") == {escalation.pk}


def test_a_resolved_escalation_is_no_longer_searched():
    escalation = Escalation.objects.get(
        proposal=split_panel_proposal(content="Rotterdam. The sky is blue. Water is wet.")
    )
    escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Fine.",
        user=ReviewerFactory(),
        decided_by_name="rita",
    )
    assert _found("rotterdam") == set()
    assert Escalation.objects.filter(pk=escalation.pk, search__isnull=True).exists()
