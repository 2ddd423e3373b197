"""A lens whose rolling agreement crosses its floor is flagged, audited and announced once."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.audit.models import AuditEntry
from reviewapp.calibration.models import LensFloor
from reviewapp.calibration.services import drift_evaluate, floor_update
from reviewapp.review.models import Lens
from reviewapp.webhooks.models import Delivery, Event
from reviewapp.webhooks.sending import deliveries_due, delivery_send
from tests.calibration.builders import adjudicated, agreeing, disagreeing, many, panel_of
from tests.factories import LensFactory
from tests.webhooks.helpers import api_client, subscribe
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.django_db

WINDOW = 10


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def lens_events(receiver):
    client, _ = api_client("read:all")
    endpoint, secret = subscribe(
        client, receiver.url("/hook"), events=(Event.LENS_DRIFT, Event.LENS_RECOVERED)
    )
    receiver.secrets["/hook"] = secret
    return endpoint


def _drifting_lens():
    panel, (lens,) = panel_of("alpha")
    floor_update(lens=lens, floor=0.4, window=WINDOW)
    return panel, lens


def send_due() -> None:
    for pk in deliveries_due():
        delivery_send(delivery_id=pk)


def test_crossing_the_floor_sends_exactly_one_verified_drift_then_one_recovery(
    receiver, lens_events
):
    panel, lens = _drifting_lens()
    many(panel, lens, agreeing(WINDOW))
    many(panel, lens, disagreeing(2 * WINDOW))  # far below the floor, for many decisions
    send_due()
    [drift] = receiver.wait_for(1)
    assert drift.error is None  # standardwebhooks verified the signature
    assert drift.payload["type"] == "lens.drift"
    assert drift.payload["data"]["lens"]["name"] == "alpha"
    assert drift.payload["data"]["kappa"] < 0.4
    assert LensFloor.objects.get(lens=lens).drifting

    many(panel, lens, agreeing(2 * WINDOW))
    send_due()
    received = receiver.wait_for(2)
    assert [r.payload["type"] for r in received] == ["lens.drift", "lens.recovered"]
    assert all(r.error is None for r in received)
    assert not LensFloor.objects.get(lens=lens).drifting
    assert Delivery.objects.count() == 2


def test_a_crossing_writes_an_audit_entry_for_the_lens():
    panel, lens = _drifting_lens()
    many(panel, lens, agreeing(WINDOW) + disagreeing(WINDOW))
    [entry] = AuditEntry.objects.filter(target_type="lens", target_id=str(lens.pk))
    assert entry.changes == {"drifting": {"old": False, "new": True}}
    assert "fell below the floor 0.4" in entry.note


def test_fewer_adjudications_than_the_window_never_flag_a_lens():
    panel, lens = _drifting_lens()
    many(panel, lens, disagreeing(WINDOW - 1))
    floor = LensFloor.objects.get(lens=lens)
    assert (floor.drifting, floor.last_kappa) == (False, None)


def test_a_lens_without_a_floor_set_gets_the_default_one():
    panel, (lens,) = panel_of("beta")
    adjudicated(panel, {lens: "pass"}, "approved")
    floor = LensFloor.objects.get(lens=lens)
    assert (floor.floor, floor.window) == (0.4, 50)


def test_the_drift_check_runs_once_the_decision_has_committed(django_capture_on_commit_callbacks):
    panel, lens = _drifting_lens()
    with django_capture_on_commit_callbacks() as after_commit:
        adjudicated(panel, {lens: "pass"}, "approved", committed=False)
    # Decided and labelled, but the floor not yet evaluated: that waits for the commit.
    assert LensFloor.objects.get(lens=lens).evaluated_at is None
    for callback in after_commit:
        callback()
    assert LensFloor.objects.get(lens=lens).evaluated_at is not None


def test_evaluating_drift_costs_the_same_queries_however_many_adjudications():
    panel, lens = _drifting_lens()
    other = LensFactory()
    many(panel, lens, agreeing(WINDOW))
    with CaptureQueriesContext(connection) as few:
        drift_evaluate(lens_ids=[lens.pk, other.pk])
    many(panel, lens, agreeing(3 * WINDOW))
    with CaptureQueriesContext(connection) as more:
        drift_evaluate(lens_ids=[lens.pk, other.pk])
    assert len(more) == len(few)


def test_every_proposal_the_lens_judged_since_drifting_is_flagged_and_none_before(client):
    from tests.factories import ReviewerFactory

    client.force_login(ReviewerFactory())
    panel, lens = _drifting_lens()
    before = many(panel, lens, agreeing(WINDOW))
    many(panel, lens, disagreeing(WINDOW))
    assert LensFloor.objects.get(lens=lens).drifting
    since = adjudicated(panel, {lens: "pass"}, "rejected")
    assert 'data-drifting="alpha"' in client.get(f"/proposals/{since.pk}").content.decode()
    assert 'data-drifting="alpha"' not in client.get(f"/proposals/{before[0].pk}").content.decode()


def test_audit_verdicts_alone_cross_the_floor_and_send_lens_drift(receiver, lens_events):
    panel, lens = _drifting_lens()
    many(panel, lens, agreeing(WINDOW), audit=True)
    many(panel, lens, disagreeing(WINDOW), audit=True)
    send_due()
    [drift] = receiver.wait_for(1)
    assert drift.error is None
    assert drift.payload["type"] == "lens.drift"
    assert drift.payload["data"]["lens"]["name"] == "alpha"
    floor = LensFloor.objects.get(lens=lens)
    assert floor.drifting and floor.last_kappa < 0.4


LENS_EVENTS = (Event.LENS_DRIFT, Event.LENS_RECOVERED)


def _listening(*scopes: str):
    """An endpoint of a new client holding `scopes`, subscribed to the lens events only."""
    client, _ = api_client(*scopes)
    endpoint, _ = subscribe(client, "http://127.0.0.1:9/hook", events=LENS_EVENTS)
    return endpoint


def _heard(endpoint) -> list[str]:
    return list(Delivery.objects.filter(endpoint=endpoint).values_list("event_type", flat=True))


def test_lens_drift_reaches_a_client_that_may_read_every_lenss_agreement():
    reader = _listening("read:all")
    panel, lens = _drifting_lens()
    many(panel, lens, agreeing(WINDOW) + disagreeing(WINDOW))
    assert _heard(reader) == ["lens.drift"]


def test_lens_drift_never_reaches_a_submit_only_client():
    submitter = _listening("submit")
    panel, lens = _drifting_lens()
    many(panel, lens, agreeing(WINDOW) + disagreeing(WINDOW))
    assert LensFloor.objects.get(lens=lens).drifting
    assert _heard(submitter) == []


def test_lens_drift_never_reaches_a_read_client_the_lens_does_not_name_as_its_judge():
    # Its figures count other clients' proposals, which such a client may not see.
    reader = _listening("read")
    panel, lens = _drifting_lens()
    many(panel, lens, agreeing(WINDOW) + disagreeing(WINDOW))
    assert LensFloor.objects.get(lens=lens).drifting
    assert _heard(reader) == []


def test_lens_drift_of_an_external_lens_reaches_the_read_client_it_names_as_its_judge():
    judge = _listening("read", "judge")
    panel, lens = _drifting_lens()
    Lens.objects.filter(pk=lens.pk).update(backend=Lens.Backend.EXTERNAL)
    lens.judge_clients.add(judge.client)
    many(panel, lens, agreeing(WINDOW) + disagreeing(WINDOW))
    assert _heard(judge) == ["lens.drift"]
