"""A reviewer's audit of an automatic decision, signed and kept beside it.

The machine's decision stands (a proposal has exactly one Decision); the
audit verdict is a separate signed record linked to it.
"""

from django.conf import settings
from django.db import models

from .decision import Decision
from .escalation import Escalation


class DecisionAudit(models.Model):
    decision = models.OneToOneField(Decision, on_delete=models.PROTECT, related_name="audit")
    escalation = models.OneToOneField(
        Escalation, on_delete=models.PROTECT, related_name="decision_audit"
    )
    outcome = models.CharField(max_length=8, choices=Decision.Outcome.choices)
    # The reviewer's outcome differs from the machine's: the decision is disputed.
    agrees = models.BooleanField()
    rationale = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    decided_by_name = models.CharField(max_length=150)
    payload = models.TextField(help_text="The exact signed bytes (RFC 8785 JSON).")
    signature = models.CharField(max_length=128)
    key_id = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["-created_at"], condition=models.Q(agrees=False), name="disputed_audits"
            )
        ]

    def __str__(self) -> str:
        return f"audit of decision {self.decision_id}: {self.outcome}"
