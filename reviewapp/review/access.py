"""Who may sign a reviewer decision: one rule for the review pages and the API.

Staff may read the review pages and the API; signing a decision is the
reviewers' job, so it takes membership of the reviewers group (or superuser).
"""

from .demo import REVIEWERS_GROUP


def may_sign_decisions(user) -> bool:
    """Whether `user` may claim and decide escalations, in the browser or through the API."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_superuser or user.groups.filter(name=REVIEWERS_GROUP).exists()
