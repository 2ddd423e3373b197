"""A change of trust reaches a real receiver, sent by a real worker, verified with
`standardwebhooks`."""

import pytest
from django.db import transaction

from reviewapp.core.guarantee.configuration import configuration_key
from reviewapp.guarantee.evidence import label_add
from reviewapp.review.services.proposals import panel_snapshot
from reviewapp.webhooks.models import Delivery
from tests.webhooks.helpers import api_client, subscribe
from tests.webhooks.receiver import Receiver

from .builders import UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.worker


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


def test_the_label_that_earns_trust_is_announced_once_and_verifies(start_worker, receiver):
    client, _ = api_client("read", "read:all")
    _, secret = subscribe(client, receiver.url("/hook"), ["panel.guarantee"])
    receiver.secrets["/hook"] = secret
    start_worker()
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=104, agreed=104)
    detail = {
        "pattern": UNANIMOUS,
        "configuration": configuration_key(panel_snapshot(panel)),
        "need": panel.need,
        "would_be": "approved",
    }
    for _ in range(3):  # the first earns trust; the others change nothing
        with transaction.atomic():
            label_add(panel_id=panel.pk, detail=detail, agreed=True, audit=True)
    [got] = receiver.wait_for(1)
    assert got.error is None  # the standardwebhooks library verified it
    assert got.payload["type"] == "panel.guarantee"
    data = got.payload["data"]
    assert data["panel"]["name"] == panel.name
    assert data["pattern"] == {
        "key": UNANIMOUS,
        "votes": "3 of 3 pass, no checkers",
        "outcome": "approved",
        "labels": 105,
        "agreed": 105,
        "lower_bound": pytest.approx(data["pattern"]["lower_bound"]),
        "trusted": True,
        "routed": "machine",
    }
    assert data["pattern"]["lower_bound"] >= 0.95
    # Once per change: the two labels after it wrote no delivery.
    assert Delivery.objects.filter(event_type="panel.guarantee").count() == 1
