"""Who may see the review pages: members of the reviewers group, and staff."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from reviewapp.review.demo import REVIEWERS_GROUP


def is_reviewer(user) -> bool:
    """Staff, superusers and members of the reviewers group. Cached on the user object."""
    if not user.is_authenticated or not user.is_active:
        return False
    cached = getattr(user, "_reviewapp_is_reviewer", None)
    if cached is None:
        cached = bool(
            user.is_staff or user.is_superuser or user.groups.filter(name=REVIEWERS_GROUP).exists()
        )
        user._reviewapp_is_reviewer = cached
    return cached


def reviewer_required(view):
    """Anonymous visitors go to the login page; signed-in non-reviewers get 403."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_reviewer(request.user):
            raise PermissionDenied("Only reviewers can open review pages.")
        return view(request, *args, **kwargs)

    return wrapped
