"""Who changed the configuration, when, and how; and trial runs of lenses and checkers."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEntry(models.Model):
    """One configuration change. Written once, never edited or deleted."""

    class Action(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"
        REVOKE = "revoke"
        ROTATE = "rotate"
        # Work on escalations and trials, recorded beside the configuration changes.
        CLAIM = "claim"
        RELEASE = "release"
        REASSIGN = "reassign"
        # Whose queue an escalation is in (not a claim).
        ASSIGN = "assign"
        UNASSIGN = "unassign"
        TRIAL = "trial"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Kept apart from the FK, so the record still names who it was after the user is gone.
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=10, choices=Action.choices)
    # "lens", "panel", "checker", "api client", "signing key"
    target_type = models.CharField(max_length=40, db_index=True)
    target_id = models.CharField(max_length=64)
    target_repr = models.CharField(max_length=200)
    # {field: {"old": ..., "new": ...}}; only fields that differ.
    changes = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target_type} {self.target_repr}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("an audit entry is never edited")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("an audit entry is never deleted")


class Trial(models.Model):
    """One run of a lens or checker on a pasted sample, outside any proposal."""

    class Kind(models.TextChoices):
        LENS = "lens"
        CHECKER = "checker"

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    target_id = models.PositiveBigIntegerField()
    target_name = models.CharField(max_length=100)
    # The version of the lens or checker that actually ran (set when it runs).
    target_version = models.PositiveIntegerField(null=True, blank=True)
    sample = models.TextField()
    thought_process = models.TextField(blank=True)
    grounding_policy = models.CharField(max_length=10, default="reject")
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.target_name}: {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def is_lost(self) -> bool:
        """Running for longer than any task may run: the worker running it died."""
        return (
            self.status == self.Status.RUNNING
            and self.started_at is not None
            and self.started_at < lost_before()
        )


def lost_before():
    """A trial still running since before this was abandoned by its worker (SIGKILL, OOM)."""
    return timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
