"""Recording what people are to hear, and composing it into messages when each mailbox is due.

`notices_record` runs inside the transaction of the event it tells of (the
receivers in `receivers.py`), so a notice exists exactly when its event does;
mailboxes that send at once are composed right after commit, the others by the
sweep when due (`tasks.py`). `mailbox_compose` takes everything waiting in one
mailbox under its row lock and makes one message of it, so a burst is one
message and a digest period at most one.
"""

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from reviewapp.core.pacing import Mode, next_send_at
from reviewapp.review.access import may_sign_decisions
from reviewapp.review.models import Panel

from . import content
from .models import Channel, Mailbox, Message, Notice, Preference


@dataclass(frozen=True)
class Addressed:
    """Who an event is for: people by name, groups, the panel concerned, and people who
    must not hear it (a reconcile's own reviewers, say)."""

    users: tuple = ()
    group_ids: tuple[int, ...] = ()
    panel_ids: tuple[int, ...] = ()
    excluded_user_ids: tuple[int, ...] = ()


def _channels(event: str) -> list[Channel]:
    # Few rows, filtered here: SQLite has no JSON containment.
    return [c for c in Channel.objects.filter(active=True) if event in c.events]


def _people(addressed: Addressed, may_hear) -> list:
    """The active people concerned who may hear of it: named, or members of a named group."""
    users = {u.pk: u for u in addressed.users if u is not None}
    if addressed.group_ids:
        for user in (
            get_user_model()
            .objects.filter(groups__in=addressed.group_ids, is_active=True)
            .distinct()
        ):
            users.setdefault(user.pk, user)
    return [
        u
        for u in users.values()
        if u.is_active and u.pk not in addressed.excluded_user_ids and may_hear(u)
    ]


def _groups_of(user_ids: Iterable[int]) -> dict[int, set[int]]:
    through = get_user_model().groups.through
    groups: dict[int, set[int]] = {}
    for user_id, group_id in through.objects.filter(user_id__in=set(user_ids)).values_list(
        "user_id", "group_id"
    ):
        groups.setdefault(user_id, set()).add(group_id)
    return groups


def recipients(event: str, addressed: Addressed, may_hear) -> tuple[list, list[Channel]]:
    """The people to email and the rooms to post to about `event`.

    A person hears by email when an active email channel for the event is set for
    one of their groups or for the panel concerned, and their preference is not
    off. A room hears when its channel is for the panel concerned, a group the
    event is for, or a group of a person it is for.
    """
    channels = _channels(event)
    if not channels:
        return [], []
    people = _people(addressed, may_hear)
    groups = _groups_of(u.pk for u in people)
    email = [c for c in channels if c.kind == Channel.Kind.EMAIL]
    off = set(
        Preference.objects.filter(user__in=people, mode=Mode.OFF).values_list("user_id", flat=True)
    )
    emailed = [
        u
        for u in people
        if u.email
        and u.pk not in off
        and any(
            c.group_id in groups.get(u.pk, ()) or c.panel_id in addressed.panel_ids for c in email
        )
    ]
    their_groups = (
        set(addressed.group_ids).union(*groups.values()) if groups else set(addressed.group_ids)
    )
    rooms = [
        c
        for c in channels
        if c.kind == Channel.Kind.CHAT
        and (c.panel_id in addressed.panel_ids or c.group_id in their_groups)
    ]
    return emailed, rooms


def notices_record(
    *, event: str, addressed: Addressed, line: str, path: str, escalation=None, may_hear
) -> int:
    """Leave `line` in the mailbox of each person and room to hear of `event`; how many.

    Call inside the event's transaction. Mailboxes that send at once are composed
    after commit; the rest when due (`mailboxes_due`).
    """
    people, rooms = recipients(event, addressed, may_hear)
    if not people and not rooms:
        return 0
    boxes = _mailboxes(people, rooms)
    Notice.objects.bulk_create(
        [
            Notice(mailbox=box, event=event, escalation=escalation, line=line, path=path)
            for box in boxes
        ]
    )
    at_once = [box.pk for box in boxes if _mode_of(box)[0] == Mode.IMMEDIATE]
    if at_once:
        # robust: a broker outage must not undo the event; the sweep composes later.
        transaction.on_commit(lambda: _enqueue_compose(at_once), robust=True)
    return len(boxes)


def _mailboxes(people: list, rooms: list[Channel]) -> list[Mailbox]:
    """Each person's and room's mailbox, made on first use (a concurrent maker is ignored)."""
    Mailbox.objects.bulk_create(
        [Mailbox(user=u) for u in people] + [Mailbox(channel=c) for c in rooms],
        ignore_conflicts=True,
    )
    boxes = list(
        Mailbox.objects.filter(user__in=people).select_related("user__notification_preference")
    ) + list(Mailbox.objects.filter(channel__in=rooms).select_related("channel"))
    return boxes


def _mode_of(box: Mailbox) -> tuple[Mode, timedelta]:
    if box.channel_id is not None:
        minutes = box.channel.digest_minutes
        return (Mode.DIGEST, _minutes(minutes)) if minutes else (Mode.IMMEDIATE, timedelta(0))
    preference = getattr(box.user, "notification_preference", None)
    if preference is None:
        return Mode.IMMEDIATE, timedelta(0)
    return Mode(preference.mode), _minutes(max(preference.digest_minutes, 1))


def _minutes(count: int) -> timedelta:
    """A digest period of `count` minutes (shorter minutes under a benchmark or test)."""
    return timedelta(seconds=count * settings.REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS)


def _enqueue_compose(mailbox_ids: list[int]) -> None:
    from .tasks import compose_mailboxes

    compose_mailboxes.delay(mailbox_ids)


def mailboxes_due(*, now: datetime, limit: int = 5000) -> list[int]:
    """Mailboxes with notices waiting whose next message is due now: one grouped query over
    the waiting notices (few: they leave as soon as their mailbox sends)."""
    waiting = (
        Notice.objects.filter(message__isnull=True)
        .values("mailbox")
        .annotate(oldest=Min("created_at"))
        .order_by()
    )
    oldest = {row["mailbox"]: row["oldest"] for row in waiting[:limit]}
    boxes = Mailbox.objects.filter(pk__in=oldest).select_related(
        "user__notification_preference", "channel"
    )
    return [box.pk for box in boxes if _due_at(box, oldest[box.pk]) is not None
            and _due_at(box, oldest[box.pk]) <= now]  # fmt: skip


def _due_at(box: Mailbox, oldest: datetime) -> datetime | None:
    mode, period = _mode_of(box)
    return next_send_at(
        mode=mode,
        oldest_waiting=oldest,
        last_sent_at=box.last_sent_at,
        period=period or timedelta(minutes=1),
        gap=timedelta(seconds=settings.REVIEWAPP_NOTIFY_GAP_SECONDS),
    )


def mailbox_compose(*, mailbox_id: int, now: datetime | None = None) -> Message | None:
    """Everything waiting in the mailbox as one message, if it is due; else None.

    The mailbox's row lock makes composers of one mailbox take turns, and the
    notices are taken with it: each goes in exactly one message, and a digest
    period gets at most one (`core.pacing`). A person whose preference became
    "off" meanwhile has their waiting notices dropped.
    """
    now = now or timezone.now()
    with transaction.atomic():
        box = (
            Mailbox.objects.select_for_update(of=("self",))
            .select_related("user__notification_preference", "channel")
            .get(pk=mailbox_id)
        )
        notices = list(box.notices.filter(message__isnull=True).order_by("created_at", "id"))
        if not notices:
            return None
        due = _due_at(box, notices[0].created_at)
        if due is None:  # off
            box.notices.filter(message__isnull=True).delete()
            return None
        if due > now:
            return None
        items = [(n.line, n.path) for n in notices]
        message = Message.objects.create(
            mailbox=box,
            to=box.user.email if box.user_id else "",
            subject=content.subject([line for line, _ in items]),
            body=content.email_body(items)
            if box.user_id
            else content.chat_text(items, box.channel.style),
            message_id=_message_id(box, now),
            next_attempt_at=now,
        )
        Notice.objects.filter(pk__in=[n.pk for n in notices]).update(message=message)
        box.last_sent_at = now
        box.save(update_fields=["last_sent_at"])
        transaction.on_commit(lambda: _enqueue_send(message.pk), robust=True)
    return message


def _message_id(box: Mailbox, now: datetime) -> str:
    domain = settings.REVIEWAPP_PUBLIC_URL.split("//", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    return f"<reviewapp.{box.pk}.{now:%Y%m%d%H%M%S}.{secrets.token_hex(6)}@{domain or 'localhost'}>"


def _enqueue_send(message_id: int) -> None:
    from .tasks import send_message

    send_message.delay(message_id)


def preference_set(*, user, mode: str, digest_minutes: int) -> Preference:
    """A person's choice of when to hear (their own page). Waiting notices follow it."""
    if mode not in [m.value for m in Mode]:
        raise ValueError(f"choose one of {', '.join(m.value for m in Mode)}")
    if not 1 <= digest_minutes <= settings.REVIEWAPP_NOTIFY_MAX_DIGEST_MINUTES:
        raise ValueError(
            f"a digest comes every 1 to {settings.REVIEWAPP_NOTIFY_MAX_DIGEST_MINUTES} minutes"
        )
    preference, _ = Preference.objects.update_or_create(
        user=user, defaults={"mode": mode, "digest_minutes": digest_minutes}
    )
    return preference


def escalation_notices(
    *, event: str, escalation, users=(), group_ids=(), excluded_user_ids=()
) -> int:
    """Tell the people and rooms concerned that `event` happened to `escalation`: only
    people who may review hear it, and the line says only what blind review allows."""
    panel = Panel.objects.only("name", "notify_with_text").get(pk=escalation.proposal.panel_id)
    line = content.escalation_line(
        event, escalation, panel_name=panel.name, with_text=panel.notify_with_text
    )
    return notices_record(
        event=event,
        addressed=Addressed(
            users=tuple(users),
            group_ids=tuple(group_ids),
            panel_ids=(panel.pk,),
            excluded_user_ids=tuple(excluded_user_ids),
        ),
        line=line,
        path=content.escalation_path(escalation),
        escalation=escalation,
        may_hear=may_sign_decisions,
    )
