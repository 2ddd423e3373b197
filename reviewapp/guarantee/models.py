"""A panel's guarantee, and the evidence for it: human labels and decisions per vote pattern.

Evidence belongs to a configuration (`core.guarantee.configuration`): every row
names the one it was counted under, and only the panel's current one is read.
Both counters are upserted where their event happens, never recounted:
`PatternEvidence` when a human label arrives (with its standing recomputed),
`PatternDay` when the final step routes a decision the panel's vote made.
"""

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from reviewapp.review.models import Panel

from .explain import promise

TARGET_MIN, TARGET_MAX = 0.5, 0.999
CONFIDENCE_MIN, CONFIDENCE_MAX = 0.5, 0.999


class PanelGuarantee(models.Model):
    """What a panel promises about its automatic decisions; no row, or no target: off."""

    class AuditFocus(models.TextChoices):
        FLAT = "flat", "Flat: every automatic decision alike, at the panel's audit rate"
        NEAREST = "nearest", "Where the bounds are nearest the target (same budget)"

    panel = models.OneToOneField(Panel, on_delete=models.CASCADE, related_name="guarantee")
    target = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(TARGET_MIN), MaxValueValidator(TARGET_MAX)],
        help_text="The share of automatic decisions that must match what a reviewer would "
        f"decide, from {TARGET_MIN} to {TARGET_MAX} (e.g. 0.95). Empty: the guarantee is off "
        "and the panel routes by its quorum alone.",
    )
    confidence = models.FloatField(
        default=0.95,
        validators=[MinValueValidator(CONFIDENCE_MIN), MaxValueValidator(CONFIDENCE_MAX)],
        help_text=f"How sure the promise is, from {CONFIDENCE_MIN} to {CONFIDENCE_MAX} "
        "(e.g. 0.95). Higher needs more agreeing labels before a pattern is trusted.",
    )
    audit_focus = models.CharField(
        max_length=10,
        choices=AuditFocus.choices,
        default=AuditFocus.FLAT,
        help_text="How the panel's audit rate is spent on trusted patterns.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(target__isnull=True)
                | Q(target__gte=TARGET_MIN, target__lte=TARGET_MAX),
                name="guarantee_target_range",
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=CONFIDENCE_MIN, confidence__lte=CONFIDENCE_MAX),
                name="guarantee_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"guarantee of panel {self.panel_id}"

    @property
    def enabled(self) -> bool:
        return self.target is not None

    @property
    def promise_text(self) -> str:
        return promise(target=self.target, confidence=self.confidence)


class PatternEvidence(models.Model):
    """One vote pattern of one configuration of a panel: its labels and its standing."""

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    configuration = models.CharField(max_length=32)
    pattern = models.CharField(max_length=40)
    # The configuration's need: with the lens count in the key, which patterns it can decide.
    need = models.PositiveSmallIntegerField()
    labels = models.PositiveIntegerField(default=0)
    agreed = models.PositiveIntegerField(default=0)
    # Of the labels, those from audits of automatic decisions (the rest: held for humans).
    audited = models.PositiveIntegerField(default=0)
    # The standing under the panel's settings when it was last computed.
    lower_bound = models.FloatField(default=0.0)
    clears = models.BooleanField(default=False)
    trusted = models.BooleanField(default=False)
    labels_to_trust = models.PositiveIntegerField(null=True, blank=True)
    waits_on = models.CharField(max_length=40, blank=True)
    # A multiple of the panel's audit rate (audit focus "nearest"); None: the flat rate.
    audit_factor = models.FloatField(null=True, blank=True)
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["panel", "configuration", "pattern"], name="pattern_evidence_once"
            ),
            models.CheckConstraint(
                condition=Q(agreed__lte=models.F("labels")), name="guarantee_agreed_of_labels"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pattern} of panel {self.panel_id}"


SHARDS = 8


class PatternDay(models.Model):
    """How a pattern's decisions were routed on one UTC day: by the machine, or to a person.

    A day's count is spread over `SHARDS` rows (the proposal's id picks one): the
    row a decision adds to stays locked until its final step commits, and the
    decisions of one busy pattern would otherwise take turns on a single row for
    all of that time. The figures sum the shards.
    """

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    configuration = models.CharField(max_length=32)
    pattern = models.CharField(max_length=40)
    day = models.DateField()
    shard = models.PositiveSmallIntegerField(default=0)
    automatic = models.PositiveIntegerField(default=0)
    held = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["panel", "configuration", "pattern", "day", "shard"],
                name="pattern_day_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pattern} of panel {self.panel_id} on {self.day}"
