"""Replays of a draft configuration on decided proposals, and the saved regression set.

A replay writes only these rows: never a Judgement, Decision, Escalation or
ledger entry, so nothing it does can pass for a real verdict.
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from reviewapp.review.models import Panel, Proposal


class RegressionCase(models.Model):
    """A decided proposal kept for every replay that asks for the regression set."""

    proposal = models.OneToOneField(
        Proposal, on_delete=models.CASCADE, related_name="regression_case"
    )
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-added_at", "-id"]

    def __str__(self) -> str:
        return f"regression case: proposal {self.proposal_id}"


class Replay(models.Model):
    class Source(models.TextChoices):
        RECENT = "recent", "The last N human-decided proposals"
        REGRESSION = "regression", "The regression set"

    class Status(models.TextChoices):
        # Planned: its proposals and the calls it would make are counted, nothing runs yet.
        PLANNED = "planned"
        PENDING = "pending"
        RUNNING = "running"
        CANCELLED = "cancelled"
        DONE = "done"
        FAILED = "failed"

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="replays")
    panel_name = models.CharField(max_length=100)
    # What is being tried, against the panel as it stood when the replay was planned:
    # {"need", "requires_sign_off", "lenses": [{"id", "name", "changes": {field: value},
    # "run": bool}], "current": {"need", "lenses": [names], ...}}.
    draft = models.JSONField()
    description = models.CharField(max_length=300)
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.RECENT)
    size = models.PositiveIntegerField(default=100)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PLANNED, db_index=True
    )
    planned_calls = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Refreshed while a worker runs it; a running replay whose heartbeat stopped lost its worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"replay {self.pk} of {self.panel_name}: {self.description}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.CANCELLED, self.Status.DONE, self.Status.FAILED)


def stale_before():
    """A running replay whose heartbeat is older than this lost its worker."""
    return timezone.now() - timedelta(seconds=settings.REVIEWAPP_STUCK_AFTER_SECONDS)


class ReplayCase(models.Model):
    """One proposal of a replay: the human decision, the current and the draft outcome."""

    replay = models.ForeignKey(Replay, on_delete=models.CASCADE, related_name="cases")
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    human_outcome = models.CharField(max_length=8)
    current_outcome = models.CharField(max_length=9)
    draft_outcome = models.CharField(max_length=9, blank=True)
    # {lens name: "pass" | "fail" | "failed: <why>"}, and whether each was reused or run.
    draft_verdicts = models.JSONField(default=dict, blank=True)
    calls = models.PositiveIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["replay", "position"]
        constraints = [
            models.UniqueConstraint(fields=["replay", "proposal"], name="replay_case_once"),
        ]
        indexes = [models.Index(fields=["replay", "done_at"])]

    def __str__(self) -> str:
        return f"replay {self.replay_id}, proposal {self.proposal_id}"
