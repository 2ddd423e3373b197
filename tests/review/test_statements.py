"""Every statement a proposal makes on its way is composed once and kept
(reviewapp/review/statements.py): one that never composes still runs, slowly."""

import pytest

from reviewapp.ledger import keys
from reviewapp.review import statements
from reviewapp.review.models import client as client_model
from reviewapp.review.services.clients import api_client_for_token
from tests.api.conftest import make_token
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit

pytestmark = pytest.mark.django_db

CONTENT = "The algorithm sorts in O(n log n) time and is stable."
HOT = {
    "proposal_row": statements.proposal_row,
    "proposal_counter_locked": statements.proposal_counter_locked,
    "active_panel_named": statements.active_panel_named,
    "lenses_by_pk": statements.lenses_by_pk,
    "checkers_by_pk": statements.checkers_by_pk,
    "proposal_begin": statements.proposal_begin,
    "proposal_insert": statements.proposal_insert,
    "judgement_insert": statements.judgement_insert,
    "claim_insert": statements.claim_insert,
    "evidence_insert": statements.evidence_insert,
    "proposal_final_save": statements.proposal_final_save,
    "an API client by its token's hash": client_model._unrevoked_with_hash,
    "the signing key's row": keys._registered,
}


def test_a_submitted_and_decided_proposal_composes_every_statement_on_its_way():
    for query in HOT.values():
        query._plans.clear()  # composed by earlier tests in this process, maybe
    lenses = [LensFactory(), LensFactory()]
    panel = PanelFactory(lenses=lenses, need=2, checkers=[CheckerFactory()])
    for lens in lenses:
        recorded(lens, CONTENT, judgement("pass", "sorts in O(n log n) time"))

    assert api_client_for_token(make_token("submit")) is not None
    proposal = evaluate_in_process(submit(panel, CONTENT))

    assert proposal.status == "decided"
    assert [name for name, query in HOT.items() if not query.composed] == []
