"""Webhook endpoints an API client registered, and the outbox of deliveries to them."""

import hashlib
import hmac

from django.conf import settings
from django.db import models

from reviewapp.core import webhooks as core_webhooks
from reviewapp.review.models import ApiClient


class Event(models.TextChoices):
    PROPOSAL_DECIDED = "proposal.decided"
    PROPOSAL_ESCALATED = "proposal.escalated"
    PROPOSAL_WITHDRAWN = "proposal.withdrawn"
    JUDGEMENT_REQUESTED = "judgement.requested"
    ESCALATION_CLAIMED = "escalation.claimed"
    ESCALATION_RELEASED = "escalation.released"
    ESCALATION_REVIEW_SUBMITTED = "escalation.review_submitted"
    ESCALATION_RECONCILE = "escalation.reconcile"
    ESCALATION_EXPIRED = "escalation.expired"
    LENS_DRIFT = "lens.drift"
    LENS_RECOVERED = "lens.recovered"
    DECISION_DISPUTED = "decision.disputed"
    # A vote pattern of a panel gained or lost the guarantee's trust.
    PANEL_GUARANTEE = "panel.guarantee"


# Sent by `POST /api/webhooks/{id}/test`; not subscribable.
PING = "webhook.ping"


class Endpoint(models.Model):
    client = models.ForeignKey(ApiClient, on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2000)
    events = models.JSONField(default=list, help_text=f"Any of: {', '.join(Event.values)}")
    description = models.CharField(max_length=200, blank=True)
    # Random per endpoint; with the server's webhook key it derives the secret.
    secret_salt = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["client", "id"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return f"{self.client.name}: {self.url}"

    @property
    def active(self) -> bool:
        return self.disabled_at is None

    def secret(self) -> bytes:
        """The signing secret, derived, never stored.

        It cannot be stored hashed (we must compute HMACs with it) and must not
        be stored in the clear (a database dump would let anyone forge our
        webhooks). So the database holds only a random salt, and the secret is
        HMAC(key, "endpoint id:salt") where the key comes from
        REVIEWAPP_WEBHOOK_SECRET_KEY (default: SECRET_KEY), which lives in the
        environment, not the database. No encryption library, no key material
        in any row; rotating an endpoint's secret is a new salt. Changing that
        setting changes every endpoint's secret: receivers must be given the
        new ones (re-register or rotate in the admin).
        """
        key = hmac.new(
            settings.REVIEWAPP_WEBHOOK_SECRET_KEY.encode(),
            b"reviewapp webhook secrets v1",
            hashlib.sha256,
        ).digest()
        return hmac.new(key, f"{self.pk}:{self.secret_salt}".encode(), hashlib.sha256).digest()

    def secret_text(self) -> str:
        return core_webhooks.secret_text(self.secret())


class Delivery(models.Model):
    """One event for one endpoint: written with the event, sent after commit, retried."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # gave up: retries exhausted, or the receiver said 410 Gone

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    # The `webhook-id` header: the same on every attempt, so receivers deduplicate.
    webhook_id = models.CharField(max_length=40, unique=True)
    event_type = models.CharField(max_length=40)
    # The exact JSON body, so every attempt sends (and signs) the same bytes.
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # Due time while pending; a sender pushes it forward as a lease while it sends.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status="pending"),
                name="delivery_due",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → endpoint {self.endpoint_id} ({self.status})"
