"""Deliveries through real Celery workers: sent after commit, retried, and never lost.

Each test starts its worker with short retry delays and timeouts in its
environment. The Redis outage test runs its own redis-server on a free port,
never the shared one.
"""

import base64
import contextlib
import json
import socket
import subprocess
import threading
import time

import nacl.signing
import pytest
from django.db import transaction

from reviewapp.celery import app as celery_app
from reviewapp.ledger.models import SigningKey
from reviewapp.webhooks.events import webhook_record_ping
from reviewapp.webhooks.models import Delivery
from tests.api.conftest import Api
from tests.conftest import wait_for
from tests.settings import BROKER_KEY_PREFIX
from tests.support.ports import restartable_port

from .helpers import api_client, one_lens_panel, submitted_and_decided, subscribe
from .receiver import Hang, Receiver, Reply, Slow

pytestmark = pytest.mark.worker

FAST_RETRIES = {
    "REVIEWAPP_WEBHOOK_RETRY_DELAYS": "0.3,0.3,0.3",
    "REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS": "1",
    "REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS": "1",
    "REVIEWAPP_WEBHOOK_LEASE_SECONDS": "4",
    "REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS": "1",
}


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def subscribed(receiver, transactional_db):
    client, token = api_client("submit", "read")
    endpoint, secret = subscribe(client, receiver.url("/hook"))
    receiver.secrets["/hook"] = secret
    return endpoint, token


def delivered(delivery_id: int) -> bool:
    return Delivery.objects.get(pk=delivery_id).status == "delivered"


def test_a_decision_made_by_the_worker_arrives_verified(start_worker, receiver, subscribed):
    endpoint, token = subscribed
    start_worker()
    content = "Invoices are due within 30 days."
    panel = one_lens_panel(content)
    response = Api(token).post("/api/proposals", {"panel": panel.name, "content": content})
    assert response.status_code == 202, response.content
    [got] = receiver.wait_for(1)
    assert got.error is None  # the standardwebhooks library verified it
    assert got.payload["type"] == "proposal.decided"
    decision = got.payload["data"]["decision"]
    key = SigningKey.objects.get(key_id=decision["key_id"]).public_key
    nacl.signing.VerifyKey(base64.b64decode(key)).verify(
        decision["payload"].encode(), base64.b64decode(decision["signature"])
    )
    assert json.loads(decision["payload"])["proposal"]["id"] == response.json()["id"]
    wait_for(lambda: Delivery.objects.filter(status="delivered").count() == 1)


def test_the_worker_retries_a_500_and_a_timeout_with_the_same_id(
    start_worker, receiver, subscribed
):
    endpoint, _ = subscribed
    receiver.script("/hook", [Reply(500), Slow(3), Reply(204)])
    start_worker(extra_env=FAST_RETRIES)
    with transaction.atomic():
        delivery = webhook_record_ping(endpoint=endpoint)
    arrivals = receiver.wait_for(3)
    assert {a.webhook_id for a in arrivals} == {delivery.webhook_id}
    assert all(a.error is None for a in arrivals)
    wait_for(lambda: delivered(delivery.pk), message="never marked delivered")
    assert Delivery.objects.get(pk=delivery.pk).attempts == 3


def test_a_worker_killed_mid_delivery_leaves_it_to_be_sent_again(
    start_worker, receiver, subscribed
):
    endpoint, _ = subscribed
    release = threading.Event()
    receiver.script("/hook", [Hang(release)])
    first = start_worker(extra_env=FAST_RETRIES)
    with transaction.atomic():
        delivery = webhook_record_ping(endpoint=endpoint)
    receiver.wait_for(1)  # the worker is in the middle of sending it
    first.kill()
    release.set()
    start_worker(beat=True, extra_env=FAST_RETRIES)
    arrivals = receiver.wait_for(2, timeout=40)
    assert arrivals[0].webhook_id == arrivals[1].webhook_id == delivery.webhook_id
    assert arrivals[1].error is None
    wait_for(lambda: delivered(delivery.pk))


class PrivateRedis:
    def __init__(self, port: int):
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"

    def start(self) -> None:
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "yes",
             "--pidfile", f"/tmp/reviewapp-test-redis-{self.port}.pid"],
            check=True, capture_output=True,
        )  # fmt: skip
        wait_for(self._listening, timeout=10, interval=0.05)

    def stop(self) -> None:
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True
        )
        wait_for(lambda: not self._listening(), timeout=10, interval=0.05)

    def _listening(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
            return True
        return False


@pytest.fixture
def private_broker():
    """This process sends its tasks to a redis-server of its own, which the test may stop."""
    redis = PrivateRedis(restartable_port())  # stopped and started again on it
    redis.start()
    conf = celery_app.conf
    previous = (
        conf.broker_url,
        conf.broker_write_url,
        conf.broker_transport,
        conf.broker_transport_options,
    )

    def point_at(settings):
        # All of them: which a send reads depends on how the broker was configured
        # (the embedded broker names its transport class and its folders).
        (
            conf.broker_url,
            conf.broker_write_url,
            conf.broker_transport,
            conf.broker_transport_options,
        ) = settings
        # Drop the pooled connections and producers made for the previous broker.
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    # The keys' prefix the worker's settings give a Redis broker (tests/settings.py).
    options = {"global_keyprefix": BROKER_KEY_PREFIX} if BROKER_KEY_PREFIX else {}
    point_at((redis.url, redis.url, None, options))
    yield redis
    point_at(previous)
    redis.stop()


def test_a_decision_made_while_redis_is_down_is_delivered_once_it_is_back(
    start_worker, receiver, subscribed, private_broker, caplog
):
    endpoint, _ = subscribed
    private_broker.stop()
    proposal = submitted_and_decided(endpoint.client)  # commits; sending after commit fails
    failed = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any("_record.<locals>" in m and str(private_broker.port) in m for m in failed), failed
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and delivery.attempts == 0
    time.sleep(0.5)
    assert receiver.received == []
    private_broker.start()
    start_worker(beat=True, extra_env={**FAST_RETRIES, "CELERY_BROKER_URL": private_broker.url})
    [got] = receiver.wait_for(1, timeout=40)
    assert got.error is None
    assert got.payload["data"]["proposal"]["id"] == proposal.pk
    wait_for(lambda: delivered(delivery.pk))
