"""A reviewer's own pages: their personal API tokens (to review through the API as
themselves) and their progress."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp.review.access import may_sign_decisions
from reviewapp.review.groups import REVIEWERS_GROUP
from reviewapp.review.models import ApiClient
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.services.clients import (
    ClientRefused,
    api_client_create,
    personal_token_revoke,
)
from reviewapp.review.services.reviews import reviewer_progress

NAME_LIMIT = 60


def _name_limit(user) -> int:
    """The token name's length: the client is named "<username>/<name>", and that must fit."""
    room = ApiClient._meta.get_field("name").max_length - len(user.get_username()) - 1
    return min(NAME_LIMIT, room)


def _page(request, *, token: str = "", error: str = "", name: str = "", status: int = 200):
    tokens = ApiClient.objects.filter(user=request.user).order_by("-created_at", "-id")
    context = {
        "tokens": tokens,
        "new_token": token,
        "error": error,
        "name": name,
        "may_review": may_sign_decisions(request.user),
        "name_limit": _name_limit(request.user),
    }
    return render(request, "web/tokens.html", context, status=status)


@require_http_methods(["GET", "POST"])
@reviewer_required
def my_tokens(request):
    """GET lists them; POST `name` creates one and shows its token once."""
    if request.method == "GET":
        return _page(request)
    name = request.POST.get("name", "").strip()
    limit = _name_limit(request.user)
    if not name or len(name) > limit or "\x00" in name:
        error = (
            f"Give the token a name of 1 to {limit} characters (e.g. the laptop's)."
            if limit >= 1
            else "Your username is too long to name a token after: ask an admin for one."
        )
        return _page(request, error=error, name=name[: max(limit, 0)], status=400)
    try:
        # Client names are unique across everyone: the owner's name keeps them apart.
        _, token = api_client_create(
            name=f"{request.user.get_username()}/{name}",
            scopes=[ApiClient.Scope.REVIEW],
            user=request.user,
        )
    except ClientRefused as exc:
        return _page(request, error=str(exc).capitalize() + ".", name=name, status=400)
    return _page(request, token=token)


@require_POST
@reviewer_required
def my_token_revoke(request, pk: int):
    if personal_token_revoke(client_id=pk, user=request.user):
        messages.success(request, "Token revoked: it no longer works.")
    else:
        messages.error(request, "That is not one of your live tokens: nothing changed.")
    return redirect("my_tokens")


@require_GET
@reviewer_required
def my_progress(request):
    """Your verdicts today and this week, what you hold, and how often the final
    decision agreed with your reviews; staff see every reviewer's."""
    users = [request.user]
    if request.user.is_staff or request.user.is_superuser:
        users = list(
            get_user_model()
            .objects.filter(Q(groups__name=REVIEWERS_GROUP) | Q(is_superuser=True), is_active=True)
            .distinct()
            .order_by("username")
        )
    rows = reviewer_progress(users=users)
    return render(request, "web/progress.html", {"rows": rows, "everyone": len(users) > 1})
