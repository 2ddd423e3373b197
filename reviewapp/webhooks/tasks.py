"""Webhook tasks: take ids, re-fetch, call a service. Each is safe to run twice."""

from celery import shared_task
from django.conf import settings

from .sending import deliveries_due, delivery_send


@shared_task
def deliver_webhook(delivery_id: int) -> None:
    delay = delivery_send(delivery_id=delivery_id)
    # A retry due before the next sweep is scheduled here; a later one is the
    # sweeper's. Either way the row says when, so a lost message delays, never drops.
    if delay is not None and delay < settings.REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS:
        deliver_webhook.apply_async((delivery_id,), countdown=delay)


@shared_task
def sweep_webhook_deliveries() -> int:
    """Send deliveries that are due: never sent (the broker was down), retries, lost workers."""
    due = deliveries_due()
    for delivery_id in due:
        deliver_webhook.delay(delivery_id)
    return len(due)
