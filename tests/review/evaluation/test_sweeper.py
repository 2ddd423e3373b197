"""The sweeper against the real broker: it re-enqueues lost work, but never piles onto a backlog."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp.celery import app as celery_app
from reviewapp.review.evaluation.tasks import broker_backlog, sweep_stuck_proposals
from reviewapp.review.models import Proposal
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

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
