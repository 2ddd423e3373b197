import pytest

from reviewapp.review.models import Escalation

from .builders import make_panel, split_panel_proposal


@pytest.fixture
def panel(db):
    return make_panel("accuracy", "tone")


@pytest.fixture
def escalated(panel):
    proposal = split_panel_proposal(panel, title="Split verdict", external_ref="ext-42")
    assert proposal.status == "escalated"
    return proposal


@pytest.fixture
def escalation(escalated):
    return Escalation.objects.get(proposal=escalated)
