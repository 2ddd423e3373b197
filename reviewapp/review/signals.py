"""Validation on every save: `pre_save` fires for `loaddata` too (with raw=True), where
`Model.save()` and forms do not run, so a lens or checker the core refuses cannot enter the
database through any door.

(A person losing the right to review ends their personal tokens in the database itself,
whatever makes the change: reviewapp/review/access_loss.py.)
"""

from django.db.models.signals import pre_save
from django.dispatch import receiver

from .models import CheckerConfig, Lens


@receiver(pre_save, sender=Lens)
@receiver(pre_save, sender=CheckerConfig)
def refuse_invalid_configuration(sender, instance, **kwargs):
    instance.full_clean(validate_unique=False, validate_constraints=False)
