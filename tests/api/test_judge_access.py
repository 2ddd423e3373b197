"""Who may answer for an external lens (issue 15 point 1), through the real token auth."""

import pytest

from reviewapp.review.models import Judgement, Lens, Proposal
from reviewapp.review.services.proposals import proposal_submit
from tests.factories import LensFactory, PanelFactory

from .conftest import Api, client_of, make_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    lens = LensFactory(name="team-a-review", backend=Lens.Backend.EXTERNAL)
    panel = PanelFactory(lenses=[lens], need=1)
    team_a = make_token("judge", "read")
    lens.judge_clients.add(client_of(team_a))
    proposal, _ = proposal_submit(panel_name=panel.name, content="Paris is in France.")
    return {"lens": lens, "panel": panel, "team_a": team_a, "proposal": proposal}


def judge(token: str, proposal: Proposal, lens: str = "team-a-review"):
    return Api(token).post(
        f"/api/proposals/{proposal.pk}/judgements",
        {"lens": lens, "verdict": "pass", "rationale": "Checked.", "claims": []},
    )


def test_a_client_the_lens_names_may_judge(setup):
    response = judge(setup["team_a"], setup["proposal"])

    assert response.status_code == 201
    assert Judgement.objects.get().lens_name == "team-a-review"


def test_a_judge_token_the_lens_does_not_name_is_403_naming_the_lens(setup):
    # read:all: it can see the proposal, so the refusal is about the lens, not a 404.
    outsider = make_token("judge", "read", "read:all")

    response = judge(outsider, setup["proposal"])

    assert response.status_code == 403
    assert "team-a-review" in response.json()["detail"]
    assert not Judgement.objects.exists()
    setup["proposal"].refresh_from_db()
    assert setup["proposal"].lenses_answered == 0


def test_a_judge_token_that_may_not_see_the_proposal_gets_404_and_writes_nothing(setup):
    response = judge(make_token("judge"), setup["proposal"])

    assert response.status_code == 404
    assert not Judgement.objects.exists()


def test_a_lens_naming_no_client_accepts_no_judgement(setup):
    setup["lens"].judge_clients.clear()

    response = judge(make_token("judge", "read:all"), setup["proposal"])

    assert response.status_code == 403
    assert "names no API client" in response.json()["detail"]
    assert not Judgement.objects.exists()


def _own_proposal(setup, token: str) -> Proposal:
    setup["lens"].judge_clients.add(client_of(token))
    response = Api(token).post(
        "/api/proposals", {"panel": setup["panel"].name, "content": "Mine, judged by me."}
    )
    assert response.status_code == 202
    return Proposal.objects.get(pk=response.json()["id"])


def test_a_client_never_judges_a_proposal_it_submitted(setup):
    both = make_token("submit", "judge", "read")
    proposal = _own_proposal(setup, both)

    response = judge(both, proposal)

    assert response.status_code == 403
    assert "submitted" in response.json()["detail"]
    assert not Judgement.objects.exists()


def test_a_lens_may_explicitly_let_the_submitter_judge(setup):
    both = make_token("submit", "judge", "read")
    proposal = _own_proposal(setup, both)
    Lens.objects.filter(pk=setup["lens"].pk).update(allow_self_judgement=True)

    assert judge(both, proposal).status_code == 201


def test_self_judgement_is_off_by_default():
    assert Lens().allow_self_judgement is False
