"""Who may see the review pages: members of the reviewers group, and staff."""

from functools import wraps
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme

from reviewapp.review.access import may_sign_decisions


def is_reviewer(user) -> bool:
    """Staff, superusers and members of the reviewers group. Cached on the user object."""
    if not user.is_authenticated or not user.is_active:
        return False
    cached = getattr(user, "_reviewapp_is_reviewer", None)
    if cached is None:
        cached = bool(user.is_staff or may_sign_decisions(user))
        user._reviewapp_is_reviewer = cached
    return cached


def _return_path(request) -> str:
    """Where a re-login should land: the page the reviewer was on, never a POST-only URL."""
    if request.method == "GET" and not request.htmx:
        return request.get_full_path()
    # htmx names the page it runs on; a plain form post only has its Referer.
    page = request.htmx.current_url or request.headers.get("Referer") or ""
    if url_has_allowed_host_and_scheme(
        page, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        parts = urlsplit(page)
        return parts.path + (f"?{parts.query}" if parts.query else "") or "/"
    return "/"


def _wants_status(request) -> bool:
    """htmx and app.js's own requests: a 401 they can act on, not a login page to paste."""
    return bool(request.htmx) or "application/json" in request.headers.get("Accept", "")


def _expired_login_url() -> str:
    return f"{resolve_url(settings.LOGIN_URL)}?session=expired"


def _session_ended(request) -> bool:
    """Whether this anonymous request comes from a session that has ended, not a first visit.

    A session cookie that names no live session, an htmx or app.js request, or
    a POST: each comes from a page rendered for a signed-in reviewer.
    """
    return (
        settings.SESSION_COOKIE_NAME in request.COOKIES
        or request.method == "POST"
        or _wants_status(request)
    )


def reviewer_required(view):
    """Anonymous visitors go to the login page; signed-in non-reviewers get 403.

    An htmx request gets a 401 whose HX-Redirect sends the whole page to the
    login, which then returns to the proposal page (the typed rationale is
    kept in the browser meanwhile).
    """

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            login = redirect_to_login(
                _return_path(request),
                # The login page then says so, and that typed drafts are kept.
                login_url=_expired_login_url() if _session_ended(request) else None,
            )
            if _wants_status(request):
                response = HttpResponse(
                    "Your session has expired: log in again.", status=401, content_type="text/plain"
                )
                response["HX-Redirect"] = login["Location"]
                return response
            return login
        if not is_reviewer(request.user):
            raise PermissionDenied("Only reviewers can open review pages.")
        return view(request, *args, **kwargs)

    return wrapped
