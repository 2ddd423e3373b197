"""Signed decisions."""

from django.conf import settings
from django.db import models

from .escalation import Escalation
from .proposal import Proposal


class Decision(models.Model):
    class Outcome(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"

    class Basis(models.TextChoices):
        SYSTEM = "system"
        REVIEWER = "reviewer"
        # Nobody decided the escalation by its panel's deadline: the panel's fallback,
        # signed by the server and marked so in the signed bytes. Never a human label.
        FALLBACK = "fallback"

    proposal = models.OneToOneField(Proposal, on_delete=models.PROTECT, related_name="decision")
    escalation = models.OneToOneField(
        Escalation, null=True, blank=True, on_delete=models.PROTECT, related_name="decision"
    )
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    basis = models.CharField(max_length=8, choices=Basis.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    rationale = models.TextField(blank=True)
    payload = models.TextField(help_text="The exact signed bytes (RFC 8785 JSON).")
    signature = models.CharField(max_length=128)
    key_id = models.CharField(max_length=64)
    # Decisions signed before the ledger ordered them alone (payload v1) chained on the
    # previous decision's hash; that chain cannot fork. Null from v2 on.
    prev_hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.outcome} #{self.pk} ({self.basis})"
