"""The decisions log's download: the whole ledger as JSONL, streamed."""

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from reviewapp.review.groups import REVIEWERS_GROUP

from .cosigning import configured_witnesses, latest_cosigned_checkpoint
from .services import export_lines


def _may_export(user) -> bool:
    return bool(
        user.is_active
        and (
            user.is_staff or user.is_superuser or user.groups.filter(name=REVIEWERS_GROUP).exists()
        )
    )


@require_GET
def export_view(request):
    """`?after=N` exports only entries after ledger index N.

    Staff and reviewers only, unless REVIEWAPP_LEDGER_PUBLIC opens it to anyone.
    """
    if not settings.REVIEWAPP_LEDGER_PUBLIC:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not _may_export(request.user):
            raise PermissionDenied("Only reviewers can download the ledger.")
    after = request.GET.get("after")
    if after not in (None, ""):
        if not (after.isascii() and after.isdigit()) or len(after) > 18:
            return HttpResponseBadRequest("after must be a ledger index (a non-negative integer)")
        after = int(after)
    else:
        after = None
    # As export_decisions: with witnesses, no checkpoint newer than the latest they cosigned,
    # so a verifier holding the download to them does not fail on one they have not seen yet.
    through = latest_cosigned_checkpoint() if configured_witnesses() else None
    response = StreamingHttpResponse(
        export_lines(after=after, through=through), content_type="application/jsonl; charset=utf-8"
    )
    suffix = f"-after-{after}" if after is not None else ""
    response["Content-Disposition"] = f'attachment; filename="reviewapp-ledger{suffix}.jsonl"'
    response["Cache-Control"] = "no-store"
    return response
