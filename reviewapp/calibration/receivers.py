"""Human labels, written when review tells of a reviewer's decision or audit verdict
(review/events.py), inside its transaction: a label exists exactly when its decision does."""

from django.dispatch import receiver

from reviewapp.review import events as review_events

from .services import audit_labels_record, labels_record


@receiver(review_events.decision_appended)
def decision_labelled(sender, *, decision, **kwargs):
    # A system decision returns at once, so automatic appends pay nothing.
    labels_record(decision=decision)


@receiver(review_events.audit_verdict_signed)
def audit_verdict_labelled(sender, *, audit, **kwargs):
    audit_labels_record(audit=audit)
