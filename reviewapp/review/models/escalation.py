"""An escalation: a proposal handed to a human reviewer, and why."""

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q

from .proposal import Proposal


class EscalationManager(models.Manager):
    def get_queryset(self):
        # The search vector is for the database's index alone: never read it into Python.
        return super().get_queryset().defer("search")


class Escalation(models.Model):
    class Reason(models.TextChoices):
        NO_QUORUM = "no_quorum", "No quorum"
        INCONCLUSIVE = "inconclusive", "Inconclusive checker"
        LENS_FAILED = "lens_failed", "Lens failed"
        SIGN_OFF = "sign_off", "Sign-off"
        FINAL_STEP_FAILED = "final_step_failed", "Final step kept failing"
        REVIEWERS_DISAGREE = "reviewers_disagree", "Reviewers disagree"
        AUDIT = "audit", "Audit of an automatic decision"
        # The panel's vote decided, but its guarantee does not (yet) trust that vote pattern.
        BELOW_GUARANTEE = "below_guarantee", "Below the panel's guarantee"

    class Status(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        # The needed reviews disagree: only a reconciler can decide it now.
        RECONCILE = "reconcile"
        RESOLVED = "resolved"
        # Its submitter took the proposal back before anyone decided it: no decision.
        WITHDRAWN = "withdrawn"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="escalations")
    reasons = models.JSONField(default=list)
    detail = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_escalations",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Whose queue it is in (a person, a group, or both); unlike a claim it
    # does not lock anyone out. Set by staff or by an assignment rule on open.
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_escalations",
    )
    assigned_group = models.ForeignKey(
        "auth.Group",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_escalations",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Copied from the panel when the escalation is made: a later change of the
    # panel does not move the goal under reviews already given.
    reviews_needed = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # The panel's review deadline, copied when the escalation is made (like
    # reviews_needed): `due_at` is when it falls, `on_deadline` what it does then
    # (reject, approve or keep_open; "" with no deadline). `remind_at` is when the
    # people holding it hear it is near. `expired_at` is set once the deadline was
    # acted on, in the transaction that did it; `deadline_lease_until` holds it for
    # the worker acting on it (review.services.deadlines).
    due_at = models.DateTimeField(null=True, blank=True)
    on_deadline = models.CharField(max_length=9, blank=True)
    remind_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    deadline_lease_until = models.DateTimeField(null=True, blank=True)
    # The proposal's search vector while the escalation is open, NULL once
    # resolved (PostgreSQL; NULL on SQLite): see reviewapp.review.search.
    search = SearchVectorField(null=True, editable=False)

    objects = EscalationManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["proposal"],
                condition=~Q(status="resolved"),
                name="one_open_escalation_per_proposal",
            ),
        ]
        # The inbox: open, claimed and reconcile escalations, newest first. PostgreSQL
        # also has one such index per reason and a GIN index on `search`
        # (migration 0011; SQLite has neither GIN nor JSON containment).
        indexes = [
            models.Index(
                fields=["-created_at", "-id"],
                condition=Q(status__in=["open", "claimed", "reconcile"]),
                name="inbox_open",
            ),
            # The deadline sweep: waiting escalations whose deadline is yet to be acted on.
            models.Index(
                fields=["due_at"],
                condition=Q(
                    status__in=["open", "claimed", "reconcile"],
                    due_at__isnull=False,
                    expired_at__isnull=True,
                ),
                name="deadline_pending",
            ),
            models.Index(
                fields=["remind_at"],
                condition=Q(
                    status__in=["open", "claimed", "reconcile"],
                    remind_at__isnull=False,
                    reminded_at__isnull=True,
                ),
                name="reminder_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"Escalation {self.pk} ({', '.join(self.reasons)}, {self.status})"

    # Escalations someone may still decide (the inbox's and the deadline sweep's).
    WAITING = ("open", "claimed", "reconcile")
    # `on_deadline` values that end the escalation with a signed fallback decision.
    FALLBACK_ACTIONS = ("reject", "approve")

    def fallback_due(self, now) -> bool:
        """Its deadline has passed and its panel's fallback, not a person, decides it now.

        From `due_at` on (inclusive) no reviewer's verdict is signed and no claim is
        taken, whether or not the deadline worker has acted yet: which of the two
        wins is decided by the clock, under the escalation's row lock, once.
        """
        return (
            self.status in self.WAITING
            and self.on_deadline in self.FALLBACK_ACTIONS
            and self.due_at is not None
            and self.due_at <= now
        )


class AssignmentRule(models.Model):
    """Who a new escalation is assigned to, by its panel and/or one of its reasons.

    The first matching rule wins, most specific first (panel and reason, then
    panel, then reason); ties go to the oldest rule.
    """

    panel = models.ForeignKey(
        "review.Panel",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="assignment_rules",
        help_text="Empty: any panel.",
    )
    reason = models.CharField(
        max_length=20,
        blank=True,
        choices=Escalation.Reason.choices,
        help_text="Empty: any reason.",
    )
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    assigned_group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(panel__isnull=False) | ~Q(reason=""),
                name="assignment_rule_matches_something",
                violation_error_message="Choose a panel, a reason, or both.",
            ),
            models.CheckConstraint(
                condition=Q(assigned_user__isnull=False) | Q(assigned_group__isnull=False),
                name="assignment_rule_assigns_someone",
                violation_error_message="Choose a user, a group, or both.",
            ),
        ]

    def __str__(self) -> str:
        where = " / ".join(
            part for part in (self.panel and f"panel {self.panel}", self.reason) if part
        )
        who = " + ".join(str(x) for x in (self.assigned_user, self.assigned_group) if x is not None)
        return f"{where} → {who}"
