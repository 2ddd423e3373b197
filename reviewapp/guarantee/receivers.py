"""What the guarantee hears from review, connected when the app is ready.

- `automatic_outcome_asked` (review/automatic.py; the final step, before an
  outcome the panel's vote decided is written): answered by
  `routing.automatic_outcome_rule`, which may hold it for a person.
- `decision_appended` and `audit_verdict_signed` (review/events.py), inside
  their transactions: a reviewer's decision on a proposal the guarantee held,
  or an audit verdict on a decision it ruled on, is a label of its vote
  pattern (`labels`), counted exactly when the decision or verdict exists.
"""

from django.dispatch import receiver

from reviewapp.review import events as review_events
from reviewapp.review.automatic import automatic_outcome_asked
from reviewapp.review.models import Proposal

from .labels import label_from_audit, label_from_decision
from .routing import automatic_outcome_rule


@receiver(automatic_outcome_asked, sender=Proposal, dispatch_uid="guarantee.rule")
def rule(sender, *, proposal, pattern, **kwargs):
    return automatic_outcome_rule(proposal=proposal, pattern=pattern)


@receiver(review_events.decision_appended, dispatch_uid="guarantee.decision")
def decision_labelled(sender, *, decision, **kwargs):
    # A system decision, or one on any other escalation, returns at once: no query.
    label_from_decision(decision=decision)


@receiver(review_events.audit_verdict_signed, dispatch_uid="guarantee.audit")
def audit_labelled(sender, *, audit, **kwargs):
    label_from_audit(audit=audit)
