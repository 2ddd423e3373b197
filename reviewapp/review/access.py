"""Who may sign a reviewer decision: one rule for the review pages and the API.

Staff may read the review pages and the API; signing a decision is the
reviewers' job, so it takes membership of the reviewers group (or superuser).
"""

from .demo import RECONCILERS_GROUP, REVIEWERS_GROUP


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


def may_reconcile(user) -> bool:
    """Whether `user` may decide an escalation whose reviewers disagree (and see every review)."""
    if not may_sign_decisions(user):
        return False
    cached = getattr(user, "_reviewapp_may_reconcile", None)
    if cached is None:
        cached = user.is_superuser or user.groups.filter(name=RECONCILERS_GROUP).exists()
        user._reviewapp_may_reconcile = cached
    return cached
