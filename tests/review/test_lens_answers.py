"""Recording several lenses' answers at once (reviewapp/review/services/judgements.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.core.judging import FailureKind
from reviewapp.review.models import Judgement, LensFailure, Proposal
from reviewapp.review.services.judgements import (
    judgement_answer,
    judgement_record,
    lens_answers_record,
    lens_failure_answer,
)
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db

CONTENT = "The migration is reversible and takes under a minute."


def _passes(*lenses):
    return [
        judgement_answer(lens=lens, verdict="pass", rationale="ok", claims=[]) for lens in lenses
    ]


def test_answers_arriving_together_are_recorded_and_counted_at_once():
    lenses = [LensFactory() for _ in range(3)]
    proposal = submit(PanelFactory(lenses=lenses, need=2), CONTENT)
    answers = [
        *_passes(*lenses[:2]),
        lens_failure_answer(
            lens=lenses[2], error="down", attempts=4, kind=FailureKind.TRANSPORT_ERROR
        ),
    ]
    counted = lens_answers_record(proposal_id=proposal.pk, answers=answers)
    assert counted.lenses_answered == 3 and counted.all_lenses_answered
    assert Judgement.objects.filter(proposal=proposal).count() == 2
    assert LensFailure.objects.get(proposal=proposal).error == "down"


def test_a_lens_that_had_answered_is_skipped_and_not_counted_twice():
    lenses = [LensFactory() for _ in range(3)]
    proposal = submit(PanelFactory(lenses=lenses, need=2), CONTENT)
    judgement_record(
        proposal_id=proposal.pk, lens=lenses[0], verdict="fail", rationale="no", claims=[]
    )
    counted = lens_answers_record(proposal_id=proposal.pk, answers=_passes(*lenses))
    assert counted.lenses_answered == 3
    assert Judgement.objects.get(proposal=proposal, lens=lenses[0]).verdict == "fail"


def test_nothing_is_written_once_every_lens_had_answered():
    lens = LensFactory()
    proposal = submit(PanelFactory(lenses=[lens], need=1), CONTENT)
    assert lens_answers_record(proposal_id=proposal.pk, answers=_passes(lens)) is not None
    assert lens_answers_record(proposal_id=proposal.pk, answers=_passes(lens)) is None
    assert Judgement.objects.filter(proposal=proposal).count() == 1


def test_a_final_proposal_takes_no_answer():
    lens = LensFactory()
    proposal = submit(PanelFactory(lenses=[lens], need=1), CONTENT)
    Proposal.objects.filter(pk=proposal.pk).update(status=Proposal.Status.ESCALATED)
    assert lens_answers_record(proposal_id=proposal.pk, answers=_passes(lens)) is None
    assert not Judgement.objects.filter(proposal=proposal).exists()


def test_three_answers_together_take_fewer_queries_than_one_by_one():
    together, one_by_one = [LensFactory() for _ in range(3)], [LensFactory() for _ in range(3)]
    a = submit(PanelFactory(lenses=together, need=2), CONTENT)
    b = submit(PanelFactory(lenses=one_by_one, need=2), CONTENT)
    with CaptureQueriesContext(connection) as batched:
        lens_answers_record(proposal_id=a.pk, answers=_passes(*together))
    with CaptureQueriesContext(connection) as single:
        for answer in _passes(*one_by_one):
            lens_answers_record(proposal_id=b.pk, answers=[answer])
    assert Proposal.objects.get(pk=a.pk).lenses_answered == 3
    assert Proposal.objects.get(pk=b.pk).lenses_answered == 3
    # A lock, an answered check and a count once, not once per lens.
    assert len(batched) <= len(single) - 6
