"""The sweeper against the real broker: it re-enqueues lost work, but never piles onto a backlog."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp.celery import app as celery_app
from reviewapp.review.evaluation.tasks import (
    broker_backlog,
    evaluate_proposal,
    sweep_stuck_proposals,
)
from reviewapp.review.models import Escalation, Lens, LensFailure, Proposal
from tests.factories import LensFactory, PanelFactory, recorded
from tests.review.helpers import judgement, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def empty_queue():
    celery_app.control.purge()
    yield
    celery_app.control.purge()


def _make_stuck(proposal):
    Proposal.objects.filter(pk=proposal.pk).update(updated_at=timezone.now() - timedelta(hours=1))


def test_a_stuck_proposal_is_re_enqueued_when_the_queue_is_idle(empty_queue):
    proposal = submit(PanelFactory(lenses=[LensFactory()]), "Answer.")
    _make_stuck(proposal)
    assert sweep_stuck_proposals() == 1
    assert broker_backlog() == 1


def test_nothing_is_re_enqueued_while_the_queue_has_a_backlog(empty_queue):
    proposal = submit(PanelFactory(lenses=[LensFactory()]), "Answer.")
    _make_stuck(proposal)
    sweep_stuck_proposals()
    _make_stuck(proposal)
    assert sweep_stuck_proposals() == 0
    assert broker_backlog() == 1


def test_a_proposal_the_sweeper_re_sent_n_times_escalates_naming_why(empty_queue, settings):
    """An LLM lens that never answers (its worker lost every time): after
    REVIEWAPP_SWEEP_ATTEMPTS re-sends, the next one records it as failed, saying why."""
    settings.REVIEWAPP_SWEEP_ATTEMPTS = 2
    silent = LensFactory(backend=Lens.Backend.LLM, base_url="http://127.0.0.1:9/v1", model="m")
    answering = LensFactory()
    recorded(answering, "Answer.", judgement("pass"))
    proposal = submit(PanelFactory(lenses=[silent, answering], need=2), "Answer.")
    evaluate_proposal(proposal.pk, llm_answers=[])  # the recorded lens answers; the LLM one never
    for _ in range(3):
        _make_stuck(proposal)
        assert sweep_stuck_proposals() == 1
        celery_app.control.purge()  # the re-sent task is lost, as its worker was
    assert Proposal.objects.get(pk=proposal.pk).sweeps == 3

    evaluate_proposal(proposal.pk, swept=True)  # the third re-send, run

    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.ESCALATED
    failure = LensFailure.objects.get(proposal=proposal, lens=silent)
    assert failure.kind == "timeout"
    assert "re-sent this proposal 3 times" in failure.error
    assert "REVIEWAPP_SWEEP_ATTEMPTS" in failure.error
    escalation = Escalation.objects.get(proposal=proposal)
    assert Escalation.Reason.LENS_FAILED in escalation.reasons
    assert escalation.detail["failed_lenses"] == [silent.name]


def test_a_re_send_within_the_limit_runs_the_proposal_again(empty_queue, settings):
    settings.REVIEWAPP_SWEEP_ATTEMPTS = 2
    lens = LensFactory()
    recorded(lens, "Answer.", judgement("pass"))
    proposal = submit(PanelFactory(lenses=[lens]), "Answer.")
    for _ in range(2):
        _make_stuck(proposal)
        sweep_stuck_proposals()
        celery_app.control.purge()

    evaluate_proposal(proposal.pk, swept=True)

    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert not LensFailure.objects.filter(proposal=proposal).exists()
