"""Which proposals an API client may see (reviewapp/review/services/visibility.py)."""

import pytest

from reviewapp.review.models import Lens
from reviewapp.review.services.clients import api_client_create
from reviewapp.review.services.proposals import proposal_submit
from reviewapp.review.services.visibility import client_may_see, proposals_visible_to
from tests.factories import LensFactory, PanelFactory

pytestmark = pytest.mark.django_db


def _client(name: str, *scopes: str):
    return api_client_create(name=name, scopes=list(scopes or ["read"]))[0]


@pytest.fixture
def setup():
    judge = _client("judge", "judge")
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(judge)
    panel = PanelFactory(lenses=[LensFactory(), outside], need=2)
    plain = PanelFactory(lenses=[LensFactory()])
    owner = _client("owner", "submit", "read")
    mine, _ = proposal_submit(panel_name=plain.name, content="mine", client=owner)
    to_judge, _ = proposal_submit(panel_name=panel.name, content="to judge")
    other, _ = proposal_submit(panel_name=plain.name, content="other")
    return {"judge": judge, "owner": owner, "mine": mine, "to_judge": to_judge, "other": other}


def test_a_client_sees_what_it_submitted_and_nothing_else_it_is_not_bound_to(setup):
    visible = set(proposals_visible_to(setup["owner"]).values_list("pk", flat=True))
    assert visible == {setup["mine"].pk}


def test_a_client_sees_proposals_awaiting_a_lens_that_names_it(setup):
    visible = set(proposals_visible_to(setup["judge"]).values_list("pk", flat=True))
    assert visible == {setup["to_judge"].pk}


def test_read_all_sees_every_proposal(setup):
    everything = _client("auditor", "read", "read:all")
    assert proposals_visible_to(everything).count() == 3


def test_a_browser_session_passes_no_client_and_sees_every_proposal(setup):
    assert proposals_visible_to(None).count() == 3


def test_client_may_see_agrees_with_the_queryset(setup):
    for name in ("judge", "owner"):
        for key in ("mine", "to_judge", "other"):
            expected = proposals_visible_to(setup[name]).filter(pk=setup[key].pk).exists()
            assert client_may_see(client=setup[name], proposal=setup[key]) is expected
            assert client_may_see(client=setup[name], proposal=setup[key].pk) is expected
