"""Notification tasks: take ids, re-fetch, call a service. Each is safe to run twice."""

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from .sending import message_send, messages_due
from .services import mailbox_compose, mailboxes_due


@shared_task
def compose_mailboxes(mailbox_ids: list[int]) -> int:
    """Compose each mailbox's waiting notices into a message if it is due; how many."""
    return sum(mailbox_compose(mailbox_id=pk) is not None for pk in mailbox_ids)


@shared_task
def send_message(message_id: int) -> None:
    delay = message_send(message_id=message_id)
    if delay is not None and delay < settings.REVIEWAPP_NOTIFY_SWEEP_SECONDS:
        send_message.apply_async((message_id,), countdown=delay)


@shared_task
def sweep_notifications() -> int:
    """Compose the mailboxes now due (digests, the gap after a message) and send what is
    pending: never sent (the broker was down), retries, senders that died."""
    due = mailboxes_due(now=timezone.now())
    if due:
        compose_mailboxes.delay(due)
    pending = messages_due()
    for message_id in pending:
        send_message.delay(message_id)
    return len(due) + len(pending)
