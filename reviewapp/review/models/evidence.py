"""A checker's signed verdict on a proposal."""

from django.db import models

from .checker import CheckerConfig
from .proposal import Proposal


class Evidence(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="evidence")
    checker = models.ForeignKey(CheckerConfig, on_delete=models.PROTECT, related_name="evidence")
    checker_name = models.CharField(max_length=100)
    checker_version = models.PositiveIntegerField()
    verdict = models.CharField(max_length=12)
    reason = models.TextField(blank=True)
    digests = models.JSONField(default=dict)
    unenforced = models.JSONField(default=list, blank=True)
    payload = models.TextField(help_text="The exact signed bytes (RFC 8785 JSON).")
    signature = models.CharField(max_length=128)
    key_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "evidence"
        constraints = [
            models.UniqueConstraint(
                fields=["proposal", "checker"], name="one_evidence_per_checker"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.checker_name} v{self.checker_version}: {self.verdict}"
