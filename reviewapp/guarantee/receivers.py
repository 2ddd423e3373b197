"""What the guarantee hears from review, connected when the app is ready.

- `automatic_outcome_asked` (the final step, before an outcome the panel's vote
  decided is written): answered by `routing.automatic_outcome_rule`.
"""

from django.dispatch import receiver

from reviewapp.review.automatic import automatic_outcome_asked
from reviewapp.review.models import Proposal

from .routing import automatic_outcome_rule


@receiver(automatic_outcome_asked, sender=Proposal, dispatch_uid="guarantee.rule")
def _rule(sender, *, proposal, pattern, **kwargs):
    return automatic_outcome_rule(proposal=proposal, pattern=pattern)
