"""What the outbox does when review tells it something (review/events.py).

Each receiver runs inside the sender's transaction, so an outbox row commits
with its event or not at all; the deliveries are enqueued after commit
(`events._record`).
"""

from django.dispatch import receiver

from reviewapp.review import events as review_events

from .events import (
    webhook_decided_watchers,
    webhook_record_claimed,
    webhook_record_decided,
    webhook_record_disputed,
    webhook_record_escalated,
    webhook_record_expired,
    webhook_record_judgement_requested,
    webhook_record_reconcile,
    webhook_record_released,
    webhook_record_review_submitted,
    webhook_record_withdrawn,
)

# This app's key in `decision_preparing`'s `prepared` dict.
PREPARED_WATCHERS = "webhooks.watchers"


@receiver(review_events.proposal_submitted)
def judgement_requested(sender, *, proposal, **kwargs):
    webhook_record_judgement_requested(proposal=proposal)


@receiver(review_events.proposal_escalated)
def proposal_escalated(sender, *, escalation, **kwargs):
    webhook_record_escalated(escalation=escalation)


@receiver(review_events.decision_preparing)
def decided_watchers(sender, *, proposal, prepared, **kwargs):
    # Asked before the decision is signed; kept for its `proposal.decided` (and a fallback's
    # `escalation.expired`, see webhook_decided_watchers).
    prepared[PREPARED_WATCHERS] = webhook_decided_watchers(proposal=proposal)


@receiver(review_events.decision_appended)
def proposal_decided(sender, *, decision, prepared, **kwargs):
    webhook_record_decided(decision=decision, watchers=prepared.get(PREPARED_WATCHERS))


@receiver(review_events.audit_verdict_signed)
def decision_disputed(sender, *, audit, **kwargs):
    if not audit.agrees:
        webhook_record_disputed(audit=audit)


@receiver(review_events.escalation_claimed)
@receiver(review_events.escalation_reassigned)
def escalation_claimed(sender, *, escalation, **kwargs):
    """For dashboards mirroring the queue: a claim taken or handed on by staff."""
    webhook_record_claimed(escalation=escalation)


@receiver(review_events.escalation_released)
def escalation_released(sender, *, escalation, **kwargs):
    webhook_record_released(escalation=escalation)


@receiver(review_events.review_submitted)
def review_submitted(sender, *, escalation, reviews, **kwargs):
    webhook_record_review_submitted(escalation=escalation, reviews=reviews)


@receiver(review_events.reviews_disagreed)
def reviews_disagreed(sender, *, escalation, **kwargs):
    webhook_record_reconcile(escalation=escalation)


@receiver(review_events.escalation_deadline_passed)
def escalation_expired(sender, *, escalation, decision, **kwargs):
    webhook_record_expired(escalation=escalation, decision=decision)


@receiver(review_events.proposal_withdrawn)
def proposal_withdrawn(sender, *, proposal, escalation, **kwargs):
    webhook_record_withdrawn(proposal=proposal, escalation=escalation)
