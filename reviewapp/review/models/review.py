"""A review: one person's signed verdict on an escalation that needs several."""

from django.conf import settings
from django.db import models

from .decision import Decision
from .escalation import Escalation, live_claim_q


class Review(models.Model):
    escalation = models.ForeignKey(Escalation, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews"
    )
    reviewer_name = models.CharField(max_length=150)
    outcome = models.CharField(max_length=10, choices=Decision.Outcome.choices)
    rationale = models.TextField()
    # What a reviewer marks beside the verdict (claim marks, tags): signed as given.
    annotations = models.JSONField(default=dict, blank=True)
    # The exact signed RFC 8785 bytes, as for a decision.
    payload = models.TextField()
    signature = models.CharField(max_length=200)
    key_id = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # One person reviews an escalation once, whatever door they come through.
            models.UniqueConstraint(
                fields=["escalation", "reviewer"], name="one_review_per_reviewer"
            ),
        ]

    def __str__(self) -> str:
        return f"Review by {self.reviewer_name} on escalation {self.escalation_id}"


class ReviewClaimQuerySet(models.QuerySet):
    def live(self, now=None):
        """Places still held at `now`: a place expires as a claim does (`claim_cutoff`)."""
        return self.filter(live_claim_q(now))


class ReviewClaim(models.Model):
    """One reviewer's hold on an escalation that needs several reviews: several
    people hold it at once, up to the reviews still needed, each once."""

    escalation = models.ForeignKey(
        Escalation, on_delete=models.CASCADE, related_name="review_claims"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_claims"
    )
    claimed_at = models.DateTimeField()

    objects = ReviewClaimQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["escalation", "user"], name="one_claim_per_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.user} holds escalation {self.escalation_id}"
