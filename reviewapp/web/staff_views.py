"""What only staff do on the review pages: take over or hand on a held claim."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from reviewapp.review.models import Escalation
from reviewapp.review.services.escalations import (
    EscalationClosed,
    NotAReviewer,
    NotStaff,
    escalation_reassign,
)

from .access import reviewer_required


@require_POST
@reviewer_required
def escalation_reassign_view(request, pk: int):
    """POST `to` (a username; empty means "me"): the claim moves to them, audited."""
    escalation = get_object_or_404(Escalation.objects.only("id", "proposal_id"), pk=pk)
    back = reverse("proposal_detail", args=[escalation.proposal_id]) + "#adjudication"
    if not (request.user.is_staff or request.user.is_superuser):
        raise PermissionDenied("Only staff can take over or reassign a claim.")
    username = request.POST.get("to", "").strip()
    to_user = request.user
    if username:
        to_user = get_user_model().objects.filter(username=username, is_active=True).first()
        if to_user is None:
            messages.error(request, f"No active user is called {username!r}: nothing changed.")
            return redirect(back)
    try:
        escalation_reassign(
            escalation_id=escalation.pk,
            to_user=to_user,
            by_user=request.user,
            note=request.POST.get("note", "").strip()[:500],
        )
    except EscalationClosed:
        messages.error(request, "This escalation is already decided: nothing changed.")
    except (NotAReviewer, NotStaff) as exc:
        messages.error(request, f"Not reassigned: {exc}.")
    else:
        who = "you" if to_user == request.user else to_user.get_username()
        messages.success(request, f"The claim is now held by {who} (recorded in the audit log).")
    return redirect(back)
