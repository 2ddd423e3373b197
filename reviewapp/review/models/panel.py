"""A panel: the lenses and checkers a proposal is judged by, and the quorum it needs."""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from reviewapp.core.cite import GroundingPolicy

from .checker import CheckerConfig
from .lens import Lens

MAX_REVIEWS_NEEDED = 5
MAX_PRIORITY = 1000
# A review deadline: long enough for the scheduler (it acts within a minute), short of a year.
MIN_REVIEW_DEADLINE = timedelta(minutes=5)
MAX_REVIEW_DEADLINE = timedelta(days=365)


class OnDeadline(models.TextChoices):
    """What happens to an escalation nobody decided by its panel's review deadline."""

    REJECT = "reject", "Reject: a signed fallback decision"
    KEEP_OPEN = "keep_open", "Keep open: remind the reviewers only"
    APPROVE = "approve", "Approve: a signed fallback decision (lets unreviewed work through)"


class Panel(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    need = models.PositiveIntegerField()
    lenses = models.ManyToManyField(Lens, through="PanelLens", related_name="panels")
    checkers = models.ManyToManyField(CheckerConfig, blank=True, related_name="panels")
    grounding_policy = models.CharField(
        max_length=10,
        choices=[(p.value, p.value.title()) for p in GroundingPolicy],
        default=GroundingPolicy.REJECT.value,
    )
    requires_sign_off = models.BooleanField(
        default=False, help_text="A reached pass still goes to a human for sign-off."
    )
    external_deadline_seconds = models.PositiveIntegerField(
        default=3600, help_text="How long to wait for external judgements."
    )
    reviews_needed = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_REVIEWS_NEEDED)],
        help_text="Independent human reviews an escalation needs (1 to 5). Agreeing reviews "
        "decide it; disagreeing ones go to a reconciler. Audits always take one verdict.",
    )
    audit_rate = models.PositiveSmallIntegerField(
        default=0,
        validators=[MaxValueValidator(100)],
        help_text="Percent (0–100) of automatic decisions also sent to the inbox as an audit.",
    )
    # Higher first when the inbox is ordered by priority (then oldest first).
    priority = models.IntegerField(
        default=0,
        validators=[MinValueValidator(-MAX_PRIORITY), MaxValueValidator(MAX_PRIORITY)],
        help_text="Higher comes first in the inbox's priority order "
        f"({-MAX_PRIORITY} to {MAX_PRIORITY}).",
    )
    review_deadline = models.DurationField(
        null=True,
        blank=True,
        validators=[MinValueValidator(MIN_REVIEW_DEADLINE), MaxValueValidator(MAX_REVIEW_DEADLINE)],
        help_text="How long an escalation may wait for a person (e.g. 4:00:00 for four hours, "
        "2 00:00:00 for two days). Empty: it waits until someone decides it.",
    )
    on_deadline = models.CharField(
        max_length=9,
        choices=OnDeadline.choices,
        default=OnDeadline.REJECT,
        help_text="What the deadline does: reject or approve (a decision signed by the server "
        "and marked as a fallback, never as a person's), or keep it open and remind.",
    )
    deadline_reminder = models.DurationField(
        null=True,
        blank=True,
        validators=[MinValueValidator(timedelta(minutes=1))],
        help_text="Tell whoever holds or is assigned an escalation this long before its "
        "deadline. Empty: no reminder.",
    )
    notify_with_text = models.BooleanField(
        default=False,
        help_text="Email and chat messages about this panel's escalations may quote the "
        "proposal's title and the start of its content. Off: they carry its number, panel, "
        "why it needs a person and a link, nothing the agent wrote.",
    )
    active = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if (
            self.review_deadline is not None
            and self.deadline_reminder is not None
            and self.deadline_reminder >= self.review_deadline
        ):
            raise ValidationError(
                {"deadline_reminder": "The reminder must come before the deadline: make it "
                 "shorter than the review deadline, or leave it empty."}
            )

    def ordered_lenses(self) -> list[Lens]:
        return [pl.lens for pl in self.panel_lenses.select_related("lens").order_by("position")]


class PanelLens(models.Model):
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="panel_lenses")
    # PROTECT: a lens used by a panel cannot be deleted out from under it.
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="panel_memberships")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["panel", "lens"], name="panel_lens_once"),
        ]

    def __str__(self) -> str:
        return f"{self.lens.name} in panel {self.panel.name}"
