"""A lens or checker deleted under an unfinished proposal escalates it, naming what is gone."""

import pytest
from django.db import connection

from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import CheckerConfig, Escalation, Lens, PanelLens, Proposal
from reviewapp.review.services.proposals import proposal_submit
from tests.api.conftest import lens_answer
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded

pytestmark = pytest.mark.django_db

CONTENT = "The answer is 42."


def _delete_in_the_database(model, pk: int) -> None:
    """What a database administrator would do: no Django delete(), no collector."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE id = %s", [pk])


def test_a_checker_deleted_in_the_database_is_not_skipped_the_proposal_escalates_naming_it():
    lens = LensFactory()
    recorded(lens, CONTENT, lens_answer("pass", "42"))
    checker = CheckerFactory(name="must-run")
    panel = PanelFactory(lenses=[lens], checkers=[checker])
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT)
    panel.checkers.remove(checker)
    _delete_in_the_database(CheckerConfig, checker.pk)

    evaluate_proposal(proposal.pk)

    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.ESCALATED
    escalation = Escalation.objects.get(proposal=proposal)
    assert "inconclusive" in escalation.reasons
    assert [c["checker"] for c in escalation.detail["inconclusive_checkers"]] == ["must-run"]


def test_the_pipeline_escalates_a_proposal_whose_worker_lens_was_deleted_naming_it():
    kept, gone = LensFactory(), LensFactory(name="gone-lens")
    recorded(kept, CONTENT, lens_answer("pass", "42"))
    panel = PanelFactory(lenses=[kept, gone], need=2)
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT)
    PanelLens.objects.filter(lens=gone).delete()
    _delete_in_the_database(Lens, gone.pk)

    evaluate_proposal(proposal.pk)

    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.ESCALATED
    assert "gone-lens" in Escalation.objects.get(proposal=proposal).detail["failed_lenses"]
