"""Who may sign a reviewer decision: one rule for the review pages and the API.

Staff may read the review pages and the API; signing a decision is the
reviewers' job, so it takes membership of the reviewers group (or superuser).
"""

from django.contrib.auth import get_user_model

from .groups import RECONCILERS_GROUP, REVIEWERS_GROUP


def may_sign_decisions(user) -> bool:
    """Whether `user` may claim and decide escalations, in the browser or through the API.

    Cached on the user object: a page asks once per row it shows.
    """
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    cached = getattr(user, "_reviewapp_may_sign", None)
    if cached is None:
        cached = user.is_superuser or user.groups.filter(name=REVIEWERS_GROUP).exists()
        user._reviewapp_may_sign = cached
    return cached


def may_read_ledger(user) -> bool:
    """Whether `user`'s session may read the ledger's raw entries (every decision's
    rationale): staff and those who may sign decisions."""
    return bool(user.is_active and (user.is_staff or may_sign_decisions(user)))


def may_sign_decisions_many(users) -> None:
    """Answer `may_sign_decisions` for many users at once: one query, cached on each object."""
    asked = [
        u
        for u in users
        if u.is_active and not u.is_superuser and getattr(u, "_reviewapp_may_sign", None) is None
    ]
    if not asked:
        return
    members = set(
        get_user_model()
        .objects.filter(pk__in={u.pk for u in asked}, groups__name=REVIEWERS_GROUP)
        .values_list("pk", flat=True)
    )
    for user in asked:
        user._reviewapp_may_sign = user.pk in members


def may_reconcile(user) -> bool:
    """Whether `user` may decide an escalation whose reviewers disagree (and see every review)."""
    if not may_sign_decisions(user):
        return False
    cached = getattr(user, "_reviewapp_may_reconcile", None)
    if cached is None:
        cached = user.is_superuser or user.groups.filter(name=RECONCILERS_GROUP).exists()
        user._reviewapp_may_reconcile = cached
    return cached
