"""A judgement for an external lens deleted under its proposal: a 4xx, and a human decides."""

from django.db import connection

from reviewapp.review.models import AwaitedLens, Escalation, Lens, PanelLens, Proposal
from reviewapp.review.services.proposals import proposal_submit
from tests.conftest import wait_for
from tests.factories import LensFactory, PanelFactory

from .conftest import Api, client_of, make_token


def _escalated(proposal_id: int) -> Escalation | None:
    return Escalation.objects.filter(proposal_id=proposal_id).first()


def test_judging_for_a_lens_deleted_in_the_database_is_409_and_the_proposal_escalates(worker):
    token = make_token("judge", "read")
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(client_of(token))
    panel = PanelFactory(lenses=[outside], need=1)
    proposal, _ = proposal_submit(panel_name=panel.name, content="Awaiting outside.")
    # What a database administrator would do: the rows that protect it first.
    PanelLens.objects.filter(lens=outside).delete()
    AwaitedLens.objects.filter(lens=outside).delete()
    outside.judge_clients.clear()
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Lens._meta.db_table} WHERE id = %s", [outside.pk])

    response = Api(make_token("judge", "read:all")).post(
        f"/api/proposals/{proposal.pk}/judgements",
        {"lens": "outside", "verdict": "pass", "rationale": "", "claims": []},
    )

    assert response.status_code == 409
    assert "'outside' no longer exists" in response.json()["detail"]
    escalation = wait_for(lambda: _escalated(proposal.pk), message=worker.log())
    assert escalation.detail["failed_lenses"] == ["outside"]
    assert Proposal.objects.get(pk=proposal.pk).status == Proposal.Status.ESCALATED
