"""Validation on every save, including fixtures and raw deserialisation.

`pre_save` fires for `loaddata` too (with raw=True), where `Model.save()` and
forms do not run: a lens or checker the core refuses cannot enter the
database through any door.
"""

from django.db.models.signals import pre_save
from django.dispatch import receiver

from .models import CheckerConfig, Lens


@receiver(pre_save, sender=Lens)
@receiver(pre_save, sender=CheckerConfig)
def refuse_invalid_configuration(sender, instance, **kwargs):
    instance.full_clean(validate_unique=False, validate_constraints=False)
