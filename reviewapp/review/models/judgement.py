"""What a lens said about a proposal: its judgement and cited claims, or its failure."""

from django.db import models
from django.db.models import Q

from reviewapp.core.judging import FailureKind

from .lens import Lens
from .proposal import Proposal


class Judgement(models.Model):
    class Verdict(models.TextChoices):
        PASS = "pass"
        FAIL = "fail"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="judgements")
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="judgements")
    lens_name = models.CharField(max_length=100)
    lens_version = models.PositiveIntegerField()
    verdict = models.CharField(max_length=4, choices=Verdict.choices)
    rationale = models.TextField(blank=True)
    raw_response = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=1)
    requote_rounds = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["proposal", "id"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lens"], name="one_judgement_per_lens"),
        ]

    def __str__(self) -> str:
        return f"{self.lens_name} v{self.lens_version}: {self.verdict}"


class Claim(models.Model):
    class Assessment(models.TextChoices):
        VERIFIED = "verified"
        CONTESTED = "contested"
        REFUTED = "refuted"

    class AnchorKind(models.TextChoices):
        ANSWER_BODY = "answer_body"
        THOUGHT_WINDOW = "thought_window"
        UNRESOLVED = "unresolved"

    judgement = models.ForeignKey(Judgement, on_delete=models.CASCADE, related_name="claims")
    position = models.PositiveIntegerField()
    claim_id = models.CharField(max_length=64, blank=True)
    cite = models.TextField(help_text="The cite as submitted.")
    # NULL means "did not resolve"; "" would be a resolved empty span.
    text = models.TextField(null=True, blank=True, help_text="The resolved original span.")  # noqa: DJ001
    # The lens's own word, for unresolved cites too. Blank only on cites dropped
    # before it was recorded whose answer no longer says (see migration 0005).
    assessment = models.CharField(max_length=10, choices=Assessment.choices, blank=True)
    note = models.TextField(blank=True)
    anchor_kind = models.CharField(max_length=16, choices=AnchorKind.choices)
    start_utf16 = models.PositiveIntegerField(null=True, blank=True)
    end_utf16 = models.PositiveIntegerField(null=True, blank=True)
    # An unresolved cite the Reject policy dropped after the re-quote budget:
    # kept for the record, never counted as a grounded claim.
    dropped = models.BooleanField(default=False)

    class Meta:
        ordering = ["judgement", "position"]
        constraints = [
            models.UniqueConstraint(fields=["judgement", "position"], name="claim_position_once"),
            models.CheckConstraint(
                condition=(
                    Q(
                        anchor_kind="answer_body",
                        start_utf16__isnull=False,
                        end_utf16__gte=models.F("start_utf16"),
                    )
                    | (~Q(anchor_kind="answer_body") & Q(start_utf16__isnull=True))
                ),
                name="claim_offsets_match_anchor",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim_id or '—'}: {self.cite[:60]}"


FAILURE_KINDS = [(kind.value, kind.value.replace("_", " ")) for kind in FailureKind]


class LensFailure(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="lens_failures")
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="failures")
    lens_name = models.CharField(max_length=100)
    lens_version = models.PositiveIntegerField()
    error = models.TextField()
    # What kind of failure `error` describes (reviewapp.core.judging.FailureKind).
    kind = models.CharField(max_length=20, choices=FAILURE_KINDS)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lens"], name="one_failure_per_lens"),
        ]

    def __str__(self) -> str:
        return f"{self.lens_name} failed on proposal {self.proposal_id}"
