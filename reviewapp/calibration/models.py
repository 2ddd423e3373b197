"""Human labels on what lenses judged, their daily sums, and each lens's drift floor.

A human label is the final reviewer decision on an escalated proposal, or a
reviewer's audit verdict (review.DecisionAudit) on an automatic decision
(approve = pass). The rows are written with that decision or verdict, in its
transaction (services.labels_record, services.audit_labels_record), so every
figure reads sums and never walks proposals.
"""

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from reviewapp.core.calibration import DEFAULT_FLOOR, DEFAULT_WINDOW, MIN_KAPPA_ITEMS
from reviewapp.review.models import Decision, Lens, Panel, Proposal


class HumanLabel(models.Model):
    """One proposal a reviewer decided or audited, and what the machine decided or would have."""

    proposal = models.OneToOneField(Proposal, on_delete=models.CASCADE, related_name="+")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    decision = models.OneToOneField(Decision, on_delete=models.CASCADE, related_name="+")
    decided_at = models.DateTimeField()
    approved = models.BooleanField()
    # An audit: `decision` is the automatic decision sampled, `approved` the audit verdict.
    audit = models.BooleanField(default=False)
    # What the panel's tally alone said (pass = approve); None without a reached verdict.
    machine_approved = models.BooleanField(null=True)

    class Meta:
        indexes = [models.Index(fields=["panel", "decided_at"], name="human_label_panel_time")]

    def __str__(self) -> str:
        return f"proposal {self.proposal_id}: {'approved' if self.approved else 'rejected'}"


class LensLabel(models.Model):
    """A lens's verdict on a proposal beside the human label it got."""

    label = models.ForeignKey(HumanLabel, on_delete=models.CASCADE, related_name="lenses")
    lens = models.ForeignKey(Lens, on_delete=models.CASCADE, related_name="+")
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="+")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    decided_at = models.DateTimeField()
    passed = models.BooleanField()
    approved = models.BooleanField()
    audit = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lens", "proposal"], name="lens_label_once"),
        ]
        # The rolling window of drift: a lens's last N labels, newest first.
        indexes = [models.Index(fields=["lens", "-decided_at"], name="lens_label_recent")]

    def __str__(self) -> str:
        return f"lens {self.lens_id} on {self.proposal_id}"


class LensAgreementDay(models.Model):
    """A lens's 2×2 table (its verdict × the human decision) for one UTC day and kind,
    and its claims reviewers marked."""

    lens = models.ForeignKey(Lens, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    audit = models.BooleanField()
    pass_approved = models.PositiveIntegerField(default=0)
    pass_rejected = models.PositiveIntegerField(default=0)
    fail_approved = models.PositiveIntegerField(default=0)
    fail_rejected = models.PositiveIntegerField(default=0)
    # The lens's cited claims reviewers marked in these decisions (any mark), and those
    # marked incorrect: summed here so the share is read from the same rows.
    claims_marked = models.PositiveIntegerField(default=0)
    claims_incorrect = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["lens", "day", "audit"], name="lens_agreement_day_once"
            ),
        ]

    def __str__(self) -> str:
        return f"lens {self.lens_id} {self.day}"


FLOOR_RANGE_MESSAGE = f"The floor is a kappa: from -1 to 1 (the default is {DEFAULT_FLOOR})."
WINDOW_MIN_MESSAGE = (
    f"The window must be at least {MIN_KAPPA_ITEMS} decisions: over fewer, kappa is undefined "
    "and the floor would never be checked."
)


class LensFloor(models.Model):
    """A lens's agreement floor, and whether its rolling kappa is below it now."""

    lens = models.OneToOneField(Lens, on_delete=models.CASCADE, related_name="agreement_floor")
    floor = models.FloatField(
        default=DEFAULT_FLOOR,
        validators=[
            MinValueValidator(-1, FLOOR_RANGE_MESSAGE),
            MaxValueValidator(1, FLOOR_RANGE_MESSAGE),
        ],
        help_text=f"Minimum Cohen's kappa with the reviewers (default {DEFAULT_FLOOR}: below "
        "0.4 is 'fair' agreement or worse on Landis & Koch's scale). Below it, the lens is "
        "flagged and a lens.drift webhook fires once; lens.recovered when it is back.",
    )
    window = models.PositiveIntegerField(
        default=DEFAULT_WINDOW,
        validators=[MinValueValidator(MIN_KAPPA_ITEMS, WINDOW_MIN_MESSAGE)],
        help_text=f"How many of the lens's latest human adjudications the kappa is taken over "
        f"(default {DEFAULT_WINDOW}: its 95 % interval is then about ±0.22 at kappa 0.6). "
        "Fewer, and the check waits: kappa is undefined.",
    )
    drifting = models.BooleanField("below its floor", default=False, editable=False)
    drifted_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_kappa = models.FloatField(null=True, blank=True, editable=False)
    evaluated_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(floor__gte=-1, floor__lte=1),
                name="lens_floor_in_kappa_range",
                violation_error_message=FLOOR_RANGE_MESSAGE,
            ),
            models.CheckConstraint(
                condition=models.Q(window__gte=MIN_KAPPA_ITEMS),
                name="lens_floor_window_min",
                violation_error_message=WINDOW_MIN_MESSAGE,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.lens.name}: floor {self.floor} over its last {self.window} decisions"


class PairErrorDay(models.Model):
    """Two lenses of a panel against the reviewer for one UTC day: how often each, and both, erred.

    `first` is the lens with the lower id, so each pair has one row per day.
    """

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    first = models.ForeignKey(Lens, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(Lens, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    items = models.PositiveIntegerField(default=0)
    first_wrong = models.PositiveIntegerField(default=0)
    second_wrong = models.PositiveIntegerField(default=0)
    both_wrong = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["panel", "first", "second", "day"], name="pair_error_day_once"
            ),
        ]

    def __str__(self) -> str:
        return f"lenses {self.first_id}×{self.second_id} {self.day}"
