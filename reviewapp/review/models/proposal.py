"""A proposal: submitted content, the panel snapshot it is judged with, and the lenses it awaits."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from .client import ApiClient
from .lens import Lens
from .panel import Panel


class Proposal(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        EVALUATING = "evaluating"
        DECIDED = "decided"
        ESCALATED = "escalated"
        # Taken back by its submitter before it was decided (an MCP tasks/cancel).
        WITHDRAWN = "withdrawn"

    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="proposals")
    panel_version = models.PositiveIntegerField()
    # The configuration the proposal is judged with, frozen at submission so
    # later edits to the panel or its lenses never rewrite history.
    panel_snapshot = models.JSONField()
    client = models.ForeignKey(
        ApiClient, null=True, blank=True, on_delete=models.PROTECT, related_name="proposals"
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    title = models.CharField(max_length=300, blank=True)
    content = models.TextField()
    thought_process = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # NULL, not "", for "no reference": the uniqueness constraint must ignore it.
    external_ref = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    content_sha256 = models.CharField(max_length=64)
    request_sha256 = models.CharField(
        max_length=64, help_text="Digest of the submitted body, for idempotent re-submission."
    )
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    lenses_asked = models.PositiveIntegerField(default=0)
    lenses_answered = models.PositiveIntegerField(default=0)
    # {"passed", "failed", "asked", "need", "outcome"} once the panel is tallied.
    tally = models.JSONField(null=True, blank=True)
    evaluation_started_at = models.DateTimeField(null=True, blank=True)
    # When outstanding external lenses stop being waited for (None: no external lens).
    external_deadline_at = models.DateTimeField(null=True, blank=True, db_index=True)
    finalized_at = models.DateTimeField(null=True, blank=True)
    # The final step's failed or lost runs; past REVIEWAPP_FINAL_STEP_ATTEMPTS
    # the proposal is escalated instead of retried (see services/finalize.py).
    final_step_attempts = models.PositiveSmallIntegerField(default=0)
    # Times the sweeper re-sent it (REVIEWAPP_SWEEP_ATTEMPTS bounds them).
    sweeps = models.PositiveIntegerField(default=0)
    final_step_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["client", "external_ref"],
                condition=Q(external_ref__isnull=False),
                name="proposal_external_ref_once_per_client",
            ),
            models.CheckConstraint(
                condition=Q(lenses_answered__lte=models.F("lenses_asked")),
                name="proposal_answered_le_asked",
            ),
        ]
        indexes = [models.Index(fields=["status", "updated_at"])]

    def __str__(self) -> str:
        return self.title or f"Proposal {self.pk}"

    @property
    def is_final(self) -> bool:
        """Nothing more for the pipeline to do: decided, escalated to a person, or withdrawn."""
        return self.status in (self.Status.DECIDED, self.Status.ESCALATED, self.Status.WITHDRAWN)

    @property
    def all_lenses_answered(self) -> bool:
        return self.lenses_answered >= self.lenses_asked


class AwaitedLens(models.Model):
    """An external lens a proposal's snapshot awaits, as a row so visibility can join on it.

    Written at submission from the snapshot; never edited afterwards.
    """

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="awaited_lenses")
    # PROTECT: a lens a proposal awaits cannot be deleted out from under it.
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="awaited_by")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lens"], name="awaited_lens_once"),
        ]

    def __str__(self) -> str:
        return f"{self.proposal_id} awaits {self.lens_id}"
