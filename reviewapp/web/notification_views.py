"""A person's own choice of when reviewapp tells them about work."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from reviewapp.core.pacing import Mode
from reviewapp.notifications.models import Preference
from reviewapp.notifications.services import preference_set
from reviewapp.review.page_access import reviewer_required

CHOICES = [
    (Mode.IMMEDIATE.value, "At once (things that arrive within a minute come together)"),
    (Mode.DIGEST.value, "A digest every N minutes"),
    (Mode.OFF.value, "Never"),
]


@require_http_methods(["GET", "POST"])
@reviewer_required
def my_notifications(request):
    """GET shows the choice; POST `mode` and `digest_minutes` keeps it. A refusal shows the
    page again with what was chosen and why."""
    preference = Preference.objects.filter(user=request.user).first()
    mode = preference.mode if preference else Mode.IMMEDIATE.value
    minutes = preference.digest_minutes if preference else 60
    error, status = "", 200
    if request.method == "POST":
        mode = request.POST.get("mode", "")
        raw = request.POST.get("digest_minutes", "").strip() or "60"
        try:
            minutes = int(raw)
            preference_set(user=request.user, mode=mode, digest_minutes=minutes)
        except ValueError as exc:
            error, status = _refusal(exc, raw), 400
        else:
            messages.success(request, "Saved: reviewapp tells you about work as you chose.")
            return redirect("my_notifications")
    context = {
        "choices": CHOICES,
        "mode": mode,
        "digest_minutes": minutes if isinstance(minutes, int) else 60,
        "max_minutes": settings.REVIEWAPP_NOTIFY_MAX_DIGEST_MINUTES,
        "email": request.user.email,
        "error": error,
    }
    return render(request, "web/notifications.html", context, status=status)


def _refusal(exc: ValueError, raw: str) -> str:
    if "invalid literal" in str(exc):
        return f"{raw[:20]!r} is not a number of minutes: give a whole number, e.g. 60."
    return str(exc)[0].upper() + str(exc)[1:] + "."
