"""Sending one delivery: sign, connect only to a checked address, record what happened."""

import time
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from reviewapp.core import webhooks as core_webhooks
from reviewapp.egress.addresses import address_policy
from reviewapp.egress.client import checked_client, exchange_deadline

from .models import Delivery, Endpoint

USER_AGENT = "reviewapp-webhooks/1"

_clients: dict[tuple, httpx.Client] = {}


def http_client() -> httpx.Client:
    """One client per worker process (and per policy), reused so connections are kept."""
    policy = address_policy()
    key = (policy, settings.REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS,
           settings.REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS)  # fmt: skip
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = checked_client(
            policy,
            connect=settings.REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS,
            read=settings.REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS,
            user_agent=USER_AGENT,
        )
    return client


def delivery_claim(*, delivery_id: int) -> Delivery | None:
    """Take a due delivery for sending, or None (not due, done, or its endpoint is disabled).

    The task sent after commit, a countdown retry and the sweeper can all reach
    the same row: one conditional UPDATE lets exactly one of them send. It
    pushes the due time forward by a lease; a sender that dies mid-send leaves
    the row to be taken again once the lease runs out, with the same id.
    """
    now = timezone.now()
    lease = timedelta(seconds=settings.REVIEWAPP_WEBHOOK_LEASE_SECONDS)
    with transaction.atomic():
        _commit_without_waiting_for_disk()
        won = Delivery.objects.filter(
            pk=delivery_id,
            status=Delivery.Status.PENDING,
            next_attempt_at__lte=now,
            endpoint__disabled_at__isnull=True,
        ).update(next_attempt_at=now + lease)
    if not won:
        return None
    return Delivery.objects.select_related("endpoint").get(pk=delivery_id)


def _commit_without_waiting_for_disk() -> None:
    """PostgreSQL: this transaction's commit returns before its WAL reaches the disk.

    Only for what a sender writes: a crash may then forget a lease or an
    attempt's outcome, and the delivery is sent once more with the same
    webhook-id, which at-least-once delivery allows. The outbox row itself was
    written durably, with its event. Saves a disk flush per write.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def delivery_send(*, delivery_id: int) -> float | None:
    """Attempt one delivery. Returns the retry delay in seconds if one is due, else None."""
    delivery = delivery_claim(delivery_id=delivery_id)
    if delivery is None:
        return None
    endpoint = delivery.endpoint
    body = delivery.body.encode()
    timestamp = int(time.time())  # per attempt: receivers reject stale timestamps
    headers = {
        "content-type": "application/json",
        # Raw bytes, never inflated: a few compressed bytes could inflate to gigabytes.
        "accept-encoding": "identity",
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": core_webhooks.signature(
            secret=endpoint.secret(), msg_id=delivery.webhook_id, timestamp=timestamp, body=body
        ),
    }
    # The whole exchange, answer included, within what the lease assumes an attempt takes:
    # a receiver trickling bytes, each within the read timeout, never holds a worker longer.
    connect = settings.REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS
    read = settings.REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS
    status, error = None, ""
    try:
        with (
            exchange_deadline(connect + read),
            http_client().stream("POST", endpoint.url, content=body, headers=headers) as reply,
        ):
            status = reply.status_code
            # Only the beginning: a receiver's page is not ours to store. (A short
            # answer read to its end also lets the connection be reused.)
            start = b""
            for chunk in reply.iter_raw():
                start += chunk
                if len(start) > 300:
                    break
            if not 200 <= status < 300:
                error = f"HTTP {status}: {core_webhooks.excerpt(start)}"
    except httpx.TimeoutException as exc:
        error = (
            f"timed out ({type(exc).__name__}): over {connect + read:g} s in all, "
            f"or over {read:g} s waiting for the receiver"
        )
    except httpx.HTTPError as exc:
        error = core_webhooks.excerpt(str(exc).encode()) or type(exc).__name__
    return delivery_record_attempt(delivery=delivery, status=status, error=error)


def delivery_record_attempt(*, delivery: Delivery, status: int | None, error: str) -> float | None:
    """Store an attempt's outcome; disable the endpoint when it says so or keeps failing."""
    now = timezone.now()
    attempts = delivery.attempts + 1
    endpoints = Endpoint.objects.filter(pk=delivery.endpoint_id)
    with transaction.atomic():
        _commit_without_waiting_for_disk()
        if status is not None and 200 <= status < 300:
            Delivery.objects.filter(pk=delivery.pk).update(
                status=Delivery.Status.DELIVERED,
                attempts=attempts,
                last_status_code=status,
                last_error="",
                next_attempt_at=None,
                delivered_at=now,
            )
            endpoints.update(consecutive_failures=0)
            return None
        if status == 410:
            Delivery.objects.filter(pk=delivery.pk).update(
                status=Delivery.Status.FAILED,
                attempts=attempts,
                last_status_code=status,
                last_error=error[:500],
                next_attempt_at=None,
            )
            endpoints.filter(disabled_at__isnull=True).update(
                disabled_at=now,
                disabled_reason=f"the receiver answered 410 Gone on {now:%Y-%m-%d %H:%M} UTC",
            )
            return None
        delay = core_webhooks.retry_delay(attempts, settings.REVIEWAPP_WEBHOOK_RETRY_DELAYS)
        Delivery.objects.filter(pk=delivery.pk).update(
            status=Delivery.Status.PENDING if delay is not None else Delivery.Status.FAILED,
            attempts=attempts,
            last_status_code=status,
            last_error=error[:500],
            next_attempt_at=now + timedelta(seconds=delay) if delay is not None else None,
        )
        # F(): concurrent failures of the same endpoint each count.
        endpoints.update(consecutive_failures=F("consecutive_failures") + 1)
        limit = settings.REVIEWAPP_WEBHOOK_DISABLE_AFTER_FAILURES
        endpoints.filter(disabled_at__isnull=True, consecutive_failures__gte=limit).update(
            disabled_at=now,
            disabled_reason=f"{limit} consecutive failed attempts; the last: {error[:200]}",
        )
    return delay


def deliveries_due(limit: int = 500) -> list[int]:
    """Pending deliveries whose time has come (first try lost, retry due, lease expired)."""
    return list(
        Delivery.objects.filter(
            status=Delivery.Status.PENDING,
            next_attempt_at__lte=timezone.now(),
            endpoint__disabled_at__isnull=True,
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )


def delivery_resend(*, delivery_id: int) -> None:
    """Send a delivery again (from the admin): due now, same id, attempts kept in the log."""
    Delivery.objects.filter(pk=delivery_id).update(
        status=Delivery.Status.PENDING, next_attempt_at=timezone.now()
    )
