"""Validation on every save, and personal tokens ended with their person's right to review.

`pre_save` fires for `loaddata` too (with raw=True), where `Model.save()` and
forms do not run: a lens or checker the core refuses cannot enter the
database through any door.
"""

from django.contrib.auth import get_user_model
from django.db.models.signals import m2m_changed, post_save, pre_save
from django.dispatch import receiver

from .models import CheckerConfig, Lens
from .services.clients import personal_tokens_end


@receiver(pre_save, sender=Lens)
@receiver(pre_save, sender=CheckerConfig)
def refuse_invalid_configuration(sender, instance, **kwargs):
    instance.full_clean(validate_unique=False, validate_constraints=False)


@receiver(post_save, sender=get_user_model())
def end_tokens_of_a_changed_account(sender, instance, raw=False, **kwargs):
    # Deactivated, or no longer a superuser outside the reviewers group. A login
    # (last_login alone) changes neither.
    if not raw and kwargs.get("update_fields") != frozenset({"last_login"}):
        personal_tokens_end(user_ids=[instance.pk])


@receiver(m2m_changed, sender=get_user_model().groups.through)
def end_tokens_of_those_who_left_a_group(sender, instance, action, reverse, pk_set, **kwargs):
    if action == "pre_clear" and reverse:
        # group.user_set.clear(): who the members were is gone after it.
        instance._reviewapp_leaving = list(instance.user_set.values_list("pk", flat=True))
    elif action in ("post_remove", "post_clear"):
        if not reverse:
            user_ids = [instance.pk]
        elif action == "post_remove":
            user_ids = pk_set
        else:
            user_ids = getattr(instance, "_reviewapp_leaving", [])
        personal_tokens_end(user_ids=user_ids)
