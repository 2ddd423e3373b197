"""The pipeline on real worker processes, through the real broker."""

import pytest

from reviewapp.review.models import Decision, Escalation, Lens, Proposal
from tests.conftest import wait_for
from tests.core.openai_stub import Answer, Slow
from tests.factories import LensFactory, PanelFactory, recorded
from tests.review.helpers import judgement, submit

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CONTENT = "The migration is reversible and takes under a minute."


def _final(proposal_id):
    proposal = Proposal.objects.get(pk=proposal_id)
    return proposal if proposal.is_final else None


def test_a_submitted_proposal_is_evaluated_by_a_real_worker(worker):
    lenses = [LensFactory() for _ in range(3)]
    for lens in lenses:
        recorded(lens, CONTENT, judgement("pass", "The migration is reversible"))
    panel = PanelFactory(lenses=lenses, need=3)
    proposal = submit(panel, CONTENT)
    done = wait_for(lambda: _final(proposal.pk), message=worker.log())
    assert done.status == Proposal.Status.DECIDED
    assert done.decision.outcome == "approved"
    assert done.judgements.count() == 3


def test_a_worker_killed_mid_evaluation_does_not_lose_the_proposal(start_worker, openai_server):
    lens = LensFactory(
        backend=Lens.Backend.LLM, base_url=openai_server.base_url, model="m", timeout_seconds=30
    )
    panel = PanelFactory(lenses=[lens], need=1)
    openai_server.script([Slow(20, judgement("pass")), Answer(judgement("pass"))])
    first = start_worker()
    proposal = submit(panel, CONTENT)
    wait_for(lambda: openai_server.requests, message="the lens never called the model")
    first.kill()  # SIGKILL, mid-request: no chance to ack, retry or clean up

    start_worker(
        beat=True,
        extra_env={"REVIEWAPP_STUCK_AFTER_SECONDS": "2", "REVIEWAPP_SWEEP_EVERY_SECONDS": "1"},
    )
    done = wait_for(lambda: _final(proposal.pk), timeout=60)
    assert done.status == Proposal.Status.DECIDED
    assert Decision.objects.filter(proposal=proposal).count() == 1
    assert not Escalation.objects.filter(proposal=proposal).exists()
    assert done.judgements.count() == 1
