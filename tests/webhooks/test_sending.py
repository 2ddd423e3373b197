"""Sending deliveries to a real receiver on loopback, in this process (no worker)."""

import base64
import gzip
import json
import time
import tracemalloc

import nacl.signing
import pytest
import zstandard
from django.test import override_settings
from django.utils import timezone

from reviewapp.ledger.models import SigningKey
from reviewapp.webhooks.models import Delivery, Endpoint
from reviewapp.webhooks.sending import deliveries_due, delivery_send

from .helpers import api_client, submitted_and_decided, subscribe
from .receiver import Receiver, Reply, Slow, Trickle

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def endpoint(receiver):
    client, _ = api_client()
    endpoint, secret = subscribe(client, receiver.url("/hook"))
    receiver.secrets["/hook"] = secret
    return endpoint


def send_due() -> list[float | None]:
    return [delivery_send(delivery_id=pk) for pk in deliveries_due()]


def make_due(delivery: Delivery) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


def test_a_decision_arrives_signed_and_its_own_signature_verifies(receiver, endpoint):
    proposal = submitted_and_decided(endpoint.client)
    send_due()
    [got] = receiver.wait_for(1)
    assert got.error is None  # standardwebhooks verified the webhook signature
    decision = got.payload["data"]["decision"]
    public_key = SigningKey.objects.get(key_id=decision["key_id"]).public_key
    # The decision verifies by itself, with the public key, independently of the webhook secret.
    nacl.signing.VerifyKey(base64.b64decode(public_key)).verify(
        decision["payload"].encode(), base64.b64decode(decision["signature"])
    )
    assert json.loads(decision["payload"])["proposal"]["id"] == proposal.pk
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 204)


def test_a_500_is_retried_later_with_the_same_webhook_id(receiver, endpoint):
    receiver.script("/hook", [Reply(500, "database on fire " * 100)])
    submitted_and_decided(endpoint.client)
    [delay] = send_due()
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and delivery.attempts == 1
    assert 4 <= delay <= 6  # the first step of the schedule, with jitter
    assert delivery.next_attempt_at > timezone.now()
    assert delivery.last_error.startswith("HTTP 500: database on fire")
    assert len(delivery.last_error) < 320  # an excerpt, never the whole body
    assert send_due() == []  # not due yet
    make_due(delivery)
    send_due()
    first, second = receiver.wait_for(2)
    assert first.webhook_id == second.webhook_id
    assert first.body == second.body
    assert Delivery.objects.get().status == "delivered"


@override_settings(REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS=0.5)
def test_a_receiver_that_does_not_answer_in_time_is_retried(receiver, endpoint):
    receiver.script("/hook", [Slow(2)])
    submitted_and_decided(endpoint.client)
    [delay] = send_due()
    delivery = Delivery.objects.get()
    assert delay is not None and delivery.status == "pending"
    assert delivery.last_error.startswith("timed out")
    make_due(delivery)
    send_due()
    assert Delivery.objects.get().status == "delivered"
    first, second = receiver.wait_for(2)
    assert first.webhook_id == second.webhook_id


@override_settings(
    REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS=0.5, REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS=0.5
)
def test_a_receiver_trickling_its_answer_is_cut_off_at_the_deadline_and_retried(receiver, endpoint):
    receiver.script("/hook", [Trickle(0.2)])  # each byte within the read timeout, for 10 s
    submitted_and_decided(endpoint.client)
    started = time.monotonic()
    [delay] = send_due()
    assert time.monotonic() - started < 3  # the deadline: connect plus read timeouts, 1 s
    delivery = Delivery.objects.get()
    assert delay is not None and delivery.status == "pending"
    assert delivery.last_error.startswith("timed out")


def gzip_bomb() -> bytes:
    return gzip.compress(bytes(64 << 20), compresslevel=9)  # 64 KiB, 64 MiB once inflated


def zstd_bomb() -> bytes:
    return zstandard.ZstdCompressor().compress(bytes(1 << 20)) * 64  # 64 MiB once inflated


@pytest.mark.parametrize(("encoding", "bomb"), [("gzip", gzip_bomb), ("zstd", zstd_bomb)])
def test_a_compressed_answer_is_never_inflated(receiver, endpoint, encoding, bomb):
    receiver.script("/hook", [Reply(500, bomb(), headers=(("Content-Encoding", encoding),))])
    submitted_and_decided(endpoint.client)
    tracemalloc.start()
    try:
        [delay] = send_due()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024
    delivery = Delivery.objects.get()
    assert delay is not None and delivery.last_error.startswith("HTTP 500: ")
    assert len(delivery.last_error) < 320  # the start of the raw bytes, never the whole body


def test_deliveries_ask_for_an_uncompressed_answer(receiver, endpoint):
    submitted_and_decided(endpoint.client)
    send_due()
    [got] = receiver.wait_for(1)
    assert got.headers["accept-encoding"] == "identity"


def test_410_gone_disables_the_endpoint(receiver, endpoint):
    receiver.script("/hook", [Reply(410)])
    submitted_and_decided(endpoint.client)
    send_due()
    endpoint.refresh_from_db()
    assert not endpoint.active
    assert "410 Gone" in endpoint.disabled_reason
    assert Delivery.objects.get().status == "failed"


@override_settings(REVIEWAPP_WEBHOOK_DISABLE_AFTER_FAILURES=3)
def test_many_consecutive_failures_disable_the_endpoint_with_the_reason(receiver, endpoint):
    receiver.script("/hook", [Reply(503, "down for maintenance")] * 3)
    submitted_and_decided(endpoint.client)
    for _ in range(3):
        make_due(Delivery.objects.get())
        send_due()
    endpoint.refresh_from_db()
    assert not endpoint.active
    assert endpoint.disabled_reason.startswith("3 consecutive failed attempts")
    assert "HTTP 503: down for maintenance" in endpoint.disabled_reason
    # A disabled endpoint's deliveries wait; they are not sent.
    make_due(Delivery.objects.get())
    assert send_due() == []


@override_settings(REVIEWAPP_WEBHOOK_RETRY_DELAYS=[1.0, 1.0])
def test_a_delivery_gives_up_after_the_schedule(receiver, endpoint):
    receiver.script("/hook", [Reply(500)] * 3)
    submitted_and_decided(endpoint.client)
    for _ in range(3):
        make_due(Delivery.objects.get())
        send_due()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 3, None)


def test_a_success_resets_the_failure_count(receiver, endpoint):
    receiver.script("/hook", [Reply(500)])
    submitted_and_decided(endpoint.client)
    send_due()
    assert Endpoint.objects.get().consecutive_failures == 1
    make_due(Delivery.objects.get())
    send_due()
    assert Endpoint.objects.get().consecutive_failures == 0


def test_a_redirect_is_not_followed(receiver, endpoint):
    receiver.script("/hook", [Reply(307)])
    submitted_and_decided(endpoint.client)
    send_due()
    assert len(receiver.received) == 1
    assert Delivery.objects.get().last_error.startswith("HTTP 307")


def test_two_senders_of_the_same_delivery_send_it_once(receiver, endpoint):
    submitted_and_decided(endpoint.client)
    [delivery_id] = deliveries_due()
    delivery_send(delivery_id=delivery_id)
    make_due(Delivery.objects.get())  # due again, but already delivered
    assert delivery_send(delivery_id=delivery_id) is None
    assert len(receiver.received) == 1


def test_a_leased_delivery_is_not_sent_by_another_sender(receiver, endpoint):
    from reviewapp.webhooks.sending import delivery_claim

    submitted_and_decided(endpoint.client)
    [delivery_id] = deliveries_due()
    assert delivery_claim(delivery_id=delivery_id) is not None  # a sender holds it
    assert deliveries_due() == []
    delivery_send(delivery_id=delivery_id)
    assert receiver.received == []


def test_loopback_is_refused_at_send_time_when_local_addresses_are_not_allowed(receiver, endpoint):
    submitted_and_decided(endpoint.client)
    with override_settings(REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False):
        send_due()
    assert receiver.received == []
    delivery = Delivery.objects.get()
    assert delivery.status == "pending"
    assert "refused: 127.0.0.1 is a loopback address" in delivery.last_error


def test_a_name_resolving_to_a_private_address_now_is_refused_at_send_time(
    receiver, endpoint, monkeypatch
):
    """DNS rebinding: the name passed at registration; what it resolves to now is checked."""
    import socket

    real = socket.getaddrinfo

    def rebound(host, port, *args, **kwargs):
        if host == "hooks.example.com":
            return real("10.0.0.7", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    Endpoint.objects.filter(pk=endpoint.pk).update(url="https://hooks.example.com/hook")
    submitted_and_decided(endpoint.client)
    send_due()
    assert "10.0.0.7 is a private or reserved address" in Delivery.objects.get().last_error


def test_a_name_resolving_to_a_nat64_form_of_loopback_is_refused_at_send_time(
    receiver, endpoint, monkeypatch
):
    import socket

    real = socket.getaddrinfo

    def rebound(host, port, *args, **kwargs):
        if host == "hooks.example.com":
            return real("64:ff9b::7f00:1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    Endpoint.objects.filter(pk=endpoint.pk).update(url="https://hooks.example.com/hook")
    submitted_and_decided(endpoint.client)
    with override_settings(REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False):
        send_due()
    assert receiver.received == []
    assert (
        "hooks.example.com resolves to 64:ff9b::7f00:1 is a NAT64 address (64:ff9b::/96) "
        "carrying 127.0.0.1, and 127.0.0.1 is a loopback address"
    ) in Delivery.objects.get().last_error


def test_resend_makes_a_delivered_delivery_due_again_with_the_same_id(receiver, endpoint):
    from reviewapp.webhooks.sending import delivery_resend

    submitted_and_decided(endpoint.client)
    send_due()
    delivery_resend(delivery_id=Delivery.objects.get().pk)
    send_due()
    first, second = receiver.wait_for(2)
    assert first.webhook_id == second.webhook_id
    assert Delivery.objects.get().attempts == 2


def test_the_client_is_reused_across_deliveries(receiver, endpoint):
    from reviewapp.webhooks.sending import http_client

    assert http_client() is http_client()
