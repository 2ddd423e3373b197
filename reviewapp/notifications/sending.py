"""Sending one message: email through Django's mail backend, a chat post through the
webhooks' checked client; each attempt recorded and retried like a webhook delivery."""

from datetime import timedelta

import httpx
from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.utils import timezone

from reviewapp.core import webhooks as core_webhooks
from reviewapp.egress.client import exchange_deadline
from reviewapp.webhooks.sending import http_client

from .models import Message


def message_claim(*, message_id: int) -> Message | None:
    """Take a due message for sending, or None (not due, or done). One conditional UPDATE
    lets exactly one sender have it; its lease lets a sender that died be replaced."""
    now = timezone.now()
    lease = timedelta(seconds=settings.REVIEWAPP_NOTIFY_LEASE_SECONDS)
    won = Message.objects.filter(
        pk=message_id, status=Message.Status.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + lease)
    if not won:
        return None
    return Message.objects.select_related("mailbox__channel").get(pk=message_id)


def message_send(*, message_id: int) -> float | None:
    """Attempt one message. Returns the retry delay in seconds if one is due, else None."""
    message = message_claim(message_id=message_id)
    if message is None:
        return None
    channel = message.mailbox.channel
    try:
        if channel is None:
            _send_email(message)
        else:
            _post_chat(message, channel.url)
        error = ""
    except Exception as exc:  # any failure is an attempt's outcome, recorded and retried
        error = _said(exc)
    return message_record_attempt(message=message, error=error)


def _send_email(message: Message) -> None:
    if not message.to:
        raise ValueError("the person has no email address")
    email = EmailMessage(
        subject=message.subject,
        body=message.body,
        to=[message.to],
        headers={"Message-ID": message.message_id},
    )
    mailers.default.send_messages([email])


def _post_chat(message: Message, url: str) -> None:
    # The webhooks' client: only to addresses the egress policy allows, checked at connect time
    # (a room's URL that resolves to a private address now is refused now).
    connect = settings.REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS
    read = settings.REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS
    with (
        exchange_deadline(connect + read),
        http_client().stream(
            "POST",
            url,
            json={"text": message.body},
            headers={"accept-encoding": "identity"},
        ) as reply,
    ):
        start = b""
        for chunk in reply.iter_raw():
            start += chunk
            if len(start) > 300:
                break
        if not 200 <= reply.status_code < 300:
            raise httpx.HTTPStatusError(
                f"HTTP {reply.status_code}: {core_webhooks.excerpt(start)}",
                request=reply.request,
                response=reply,
            )


def _said(exc: Exception) -> str:
    # Never the room's URL: it is the room's secret (httpx names it in some errors).
    text = str(exc) or type(exc).__name__
    return text.split(" for url ", 1)[0][:500]


def message_record_attempt(*, message: Message, error: str) -> float | None:
    now = timezone.now()
    attempts = message.attempts + 1
    with transaction.atomic():
        if not error:
            Message.objects.filter(pk=message.pk).update(
                status=Message.Status.DELIVERED,
                attempts=attempts,
                last_error="",
                next_attempt_at=None,
                delivered_at=now,
            )
            return None
        delay = core_webhooks.retry_delay(attempts, settings.REVIEWAPP_NOTIFY_RETRY_DELAYS)
        Message.objects.filter(pk=message.pk).update(
            status=Message.Status.PENDING if delay is not None else Message.Status.FAILED,
            attempts=attempts,
            last_error=error[:500],
            next_attempt_at=now + timedelta(seconds=delay) if delay is not None else None,
        )
    return delay


def messages_due(limit: int = 500) -> list[int]:
    """Pending messages whose time has come (first send lost, retry due, lease expired)."""
    return list(
        Message.objects.filter(status=Message.Status.PENDING, next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
