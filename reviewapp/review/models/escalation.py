"""An escalation: a proposal handed to a human reviewer, and why."""

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q

from .proposal import Proposal


class EscalationManager(models.Manager):
    def get_queryset(self):
        # The search vector is for the database's index alone: never read it into Python.
        return super().get_queryset().defer("search")


class Escalation(models.Model):
    class Reason(models.TextChoices):
        NO_QUORUM = "no_quorum", "No quorum"
        INCONCLUSIVE = "inconclusive", "Inconclusive checker"
        LENS_FAILED = "lens_failed", "Lens failed"
        SIGN_OFF = "sign_off", "Sign-off"
        FINAL_STEP_FAILED = "final_step_failed", "Final step kept failing"
        REVIEWERS_DISAGREE = "reviewers_disagree", "Reviewers disagree"
        AUDIT = "audit", "Audit of an automatic decision"

    class Status(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        # The needed reviews disagree: only a reconciler can decide it now.
        RECONCILE = "reconcile"
        RESOLVED = "resolved"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="escalations")
    reasons = models.JSONField(default=list)
    detail = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_escalations",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Copied from the panel when the escalation is made: a later change of the
    # panel does not move the goal under reviews already given.
    reviews_needed = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # The proposal's search vector while the escalation is open, NULL once
    # resolved (PostgreSQL; NULL on SQLite): see reviewapp.review.search.
    search = SearchVectorField(null=True, editable=False)

    objects = EscalationManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["proposal"],
                condition=~Q(status="resolved"),
                name="one_open_escalation_per_proposal",
            ),
        ]
        # The inbox: open, claimed and reconcile escalations, newest first. PostgreSQL
        # also has one such index per reason and a GIN index on `search`
        # (migration 0011; SQLite has neither GIN nor JSON containment).
        indexes = [
            models.Index(
                fields=["-created_at", "-id"],
                condition=Q(status__in=["open", "claimed", "reconcile"]),
                name="inbox_open",
            )
        ]

    def __str__(self) -> str:
        return f"Escalation {self.pk} ({', '.join(self.reasons)}, {self.status})"
