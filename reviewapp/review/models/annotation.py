"""What a reviewer said beyond approve/reject: claim marks, tags, right for the wrong reason.

All of it is signed inside the decision's payload; these rows restate it
so it can be queried (agreement, exports) without parsing payloads.
"""

from django.db import models

from .decision import Decision
from .judgement import Claim, Judgement


class Tag(models.Model):
    """An admin-defined label a reviewer may put on a decision (hallucination, tone, …)."""

    name = models.SlugField(max_length=50, unique=True)
    description = models.CharField(max_length=200, blank=True)
    active = models.BooleanField(default=True, help_text="Inactive tags are no longer offered.")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ClaimMark(models.Model):
    class Mark(models.TextChoices):
        CORRECT = "correct"
        INCORRECT = "incorrect"
        IRRELEVANT = "irrelevant"

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="claim_marks")
    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="marks")
    mark = models.CharField(max_length=10, choices=Mark.choices)

    class Meta:
        ordering = ["decision", "claim"]
        constraints = [
            models.UniqueConstraint(fields=["decision", "claim"], name="one_mark_per_claim"),
        ]

    def __str__(self) -> str:
        return f"claim {self.claim_id}: {self.mark}"


class DecisionTag(models.Model):
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="decision_tags")
    tag = models.ForeignKey(Tag, on_delete=models.PROTECT, related_name="decision_tags")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["decision", "tag"], name="one_tag_per_decision"),
        ]

    def __str__(self) -> str:
        return f"{self.decision_id}: {self.tag_id}"


class WrongReason(models.Model):
    """A lens whose verdict matched the decision but whose reasons the reviewer rejected."""

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="wrong_reasons")
    judgement = models.ForeignKey(Judgement, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["decision", "judgement"], name="one_wrong_reason_per_lens"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision_id}: judgement {self.judgement_id}"
