"""Who hears about review work, how, and the outbox of messages to them.

A `Channel` says, for a group or a panel, which events go out by email (to each
person concerned, at their address) or to a chat room (an incoming webhook).
Each person's `Preference` says when: at once, a digest every N minutes, or
never. What is to be said waits as `Notice` rows in a `Mailbox` (a person's, or
a room's) until the mailbox is due (`core.pacing`); then it all goes as one
`Message`, sent after commit by a worker, retried and recorded like a webhook
delivery.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from reviewapp.core.pacing import Mode


class Event(models.TextChoices):
    ASSIGNED = "assigned", "An escalation is assigned to the person or their group"
    RECONCILE = "reconcile", "Reviews disagree: a reconcile waits for the reconcilers"
    DEADLINE_NEAR = "deadline_near", "An escalation's review deadline is near"
    DEADLINE_PASSED = "deadline_passed", "A kept-open escalation's deadline passed"
    DRIFT = "drift", "A lens drifted from the reviewers (for admins)"


class Channel(models.Model):
    class Kind(models.TextChoices):
        EMAIL = "email", "Email to each person concerned"
        CHAT = "chat", "A chat room (incoming webhook)"

    class Style(models.TextChoices):
        SLACK = "slack", "Slack"
        MATTERMOST = "mattermost", "Mattermost"

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=5, choices=Kind.choices)
    group = models.ForeignKey(
        "auth.Group",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notification_channels",
        help_text="Events for this group (email: to its members).",
    )
    panel = models.ForeignKey(
        "review.Panel",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notification_channels",
        help_text="Events about this panel's escalations.",
    )
    events = models.JSONField(default=list, help_text=f"Any of: {', '.join(Event.values)}")
    # A chat room's incoming-webhook URL: it holds the room's secret, so it is shown
    # only to the admins who set it and never put in a log or a message.
    url = models.CharField(max_length=2000, blank=True)
    style = models.CharField(max_length=10, choices=Style.choices, default=Style.SLACK, blank=True)
    # A room's own pace (a person's is their preference): 0 at once, else a digest.
    digest_minutes = models.PositiveIntegerField(
        default=0,
        help_text="Chat: 0 posts at once (a burst together); N posts a digest every N minutes.",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(group__isnull=False, panel__isnull=True)
                | Q(group__isnull=True, panel__isnull=False),
                name="channel_for_a_group_or_a_panel",
                violation_error_message="Choose a group or a panel (one of them).",
            ),
            models.CheckConstraint(
                condition=Q(kind="email") | ~Q(url=""),
                name="chat_channel_has_a_url",
                violation_error_message="A chat channel needs its incoming-webhook URL.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Preference(models.Model):
    """When a person hears: at once, a digest every N minutes, or never (per person)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    mode = models.CharField(
        max_length=9,
        choices=[(m.value, m.value.title()) for m in Mode],
        default=Mode.IMMEDIATE.value,
    )
    digest_minutes = models.PositiveIntegerField(default=60)

    def __str__(self) -> str:
        return f"{self.user}: {self.mode}"


class Mailbox(models.Model):
    """One person's email, or one chat room: what waits to be said there, and when it last
    spoke. Its row is locked while a message is composed for it, so one composer at a time."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    channel = models.OneToOneField(Channel, null=True, blank=True, on_delete=models.CASCADE)
    last_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "mailboxes"
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, channel__isnull=True)
                | Q(user__isnull=True, channel__isnull=False),
                name="mailbox_of_a_person_or_a_room",
            )
        ]

    def __str__(self) -> str:
        return f"mailbox of {self.user or self.channel}"


class Message(models.Model):
    """One email or chat post: composed once, its exact text sent on every attempt."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="messages")
    # The address it goes to (email; a room's URL is read from its channel when sent).
    to = models.CharField(max_length=254, blank=True)
    subject = models.CharField(max_length=200)
    body = models.TextField()
    # The same on every attempt: a mail client shows a re-sent message once.
    message_id = models.CharField(max_length=120, unique=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    # Due while pending; a sender pushes it forward as a lease while it sends.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="notification_message_due",
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} → {self.to or self.mailbox} ({self.status})"


class Notice(models.Model):
    """One thing to tell one mailbox, waiting until the mailbox sends (then `message`)."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="notices")
    event = models.CharField(max_length=20, choices=Event.choices)
    escalation = models.ForeignKey(
        "review.Escalation", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # What the message says of it, written when it happened: never a reviewer's verdict,
    # and the agent's own words only where the panel allows them (content.py).
    line = models.TextField()
    path = models.CharField(max_length=300, help_text="Where in the desk it links to.")
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="notices"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(
                fields=["mailbox", "created_at"],
                condition=Q(message__isnull=True),
                name="notice_waiting",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event}: {self.line[:60]}"
