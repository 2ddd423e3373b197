"""Text from checkers and models that a database refuses (NUL, lone surrogates) is stored anyway.

On PostgreSQL a NUL in a text column or ``\\u0000`` in a JSON one is a
DataError on every retry, so the proposal would never finish; run these with
DATABASE_URL pointing at PostgreSQL to see the difference.
"""

import pytest

from reviewapp.ledger.models import LedgerEntry
from reviewapp.review.models import CheckerConfig, Claim, Judgement, Lens, LensFailure, Proposal
from tests.core.openai_stub import Answer
from tests.factories import LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit

pytestmark = pytest.mark.django_db

CONTENT = "The cache is flushed on every deploy."


def printing_checker(output, exit_status):
    return CheckerConfig.objects.create(
        name="prints",
        kind=CheckerConfig.Kind.COMMAND,
        settings={
            "argv": ["/bin/sh", "-c", f"printf '{output}' >&2; exit {exit_status}"],
            "timeout_seconds": 10,
        },
        grants=["proc:exec:/usr/bin/**"],
    )


def passing_panel(*checkers):
    lens = LensFactory()
    recorded(lens, CONTENT, judgement("pass", "flushed on every deploy"))
    return PanelFactory(lenses=[lens], need=1, checkers=list(checkers))


@pytest.mark.parametrize(
    "exit_status, status, route",
    [(1, Proposal.Status.DECIDED, "rejected"), (3, Proposal.Status.ESCALATED, "inconclusive")],
)
def test_a_checker_printing_nul_does_not_wedge_the_proposal(exit_status, status, route):
    checker = printing_checker("before\\000after", exit_status)
    proposal = evaluate_in_process(submit(passing_panel(checker), CONTENT))
    assert proposal.status == status
    reason = proposal.evidence.get().reason
    assert "before\ufffdafter" in reason
    if status == Proposal.Status.DECIDED:
        assert proposal.decision.outcome == route
    else:
        assert proposal.escalations.get().reasons == [route]
        detail = proposal.escalations.get().detail["inconclusive_checkers"][0]["reason"]
        assert "before\ufffdafter" in detail
    assert LedgerEntry.objects.filter(entry__contains="before\ufffdafter").exists()


def test_a_recorded_model_answer_holding_nul_and_half_a_pair_is_stored():
    lens = LensFactory()
    answer = judgement(
        "pass",
        {"cite": "flushed on every deploy", "assessment": "verified", "note": "n\u0000te \ud800"},
        rationale="ra\u0000tionale",
    )
    recorded(lens, CONTENT, answer)
    proposal = evaluate_in_process(submit(PanelFactory(lenses=[lens], need=1), CONTENT))
    assert proposal.status == Proposal.Status.DECIDED
    stored = Judgement.objects.get(proposal=proposal)
    assert stored.rationale == "ra\ufffdtionale"
    assert Claim.objects.get(judgement=stored).note == "n\ufffdte \ufffd"


@pytest.mark.django_db(transaction=True)
def test_an_llm_answer_holding_nul_is_stored(openai_server, llm_loop):
    lens = LensFactory(
        backend=Lens.Backend.LLM, base_url=openai_server.base_url, model="m", timeout_seconds=5
    )
    openai_server.script(
        [Answer(judgement("fail", "flushed on every deploy", rationale="no\u0000pe"))]
    )
    proposal = evaluate_in_process(submit(PanelFactory(lenses=[lens], need=1), CONTENT))
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.decision.outcome == "rejected"
    stored = Judgement.objects.get(proposal=proposal)
    assert stored.rationale == "no\ufffdpe"
    assert "\x00" not in stored.raw_response
    assert not LensFailure.objects.exists()
