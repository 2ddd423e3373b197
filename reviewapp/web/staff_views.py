"""What only staff do on the review pages: take over or hand on a held claim."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from reviewapp.review.models import Escalation
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.services.escalations import (
    EscalationClosed,
    NotAReviewer,
    NotStaff,
    escalation_reassign,
)

from .proposal_views import _refused

NOTE_LIMIT = 500  # the form's maxlength


@require_POST
@reviewer_required
def escalation_reassign_view(request, pk: int):
    """POST `to` (a username; empty means "me"): the claim moves to them, audited.

    A refusal is the proposal page with the reason in the card: 400 for what
    was typed, 409 when the escalation is already decided.
    """
    escalation = get_object_or_404(Escalation.objects.only("id", "proposal_id"), pk=pk)
    if not (request.user.is_staff or request.user.is_superuser):
        raise PermissionDenied("Only staff can take over or reassign a claim.")
    username = request.POST.get("to", "").strip()
    note = request.POST.get("note", "").strip()
    if "\x00" in note:  # PostgreSQL text cannot hold NUL
        return _refused(request, escalation, "The note cannot contain NUL characters.", status=400)
    if len(note) > NOTE_LIMIT:
        error = f"The note is limited to {NOTE_LIMIT} characters (this one has {len(note)})."
        return _refused(request, escalation, error, status=400)
    to_user = request.user
    if username:
        users = get_user_model().objects.filter(is_active=True)
        # No stored username holds NUL or is that long; PostgreSQL would refuse the NUL.
        valid = "\x00" not in username and len(username) <= 150
        to_user = users.filter(username=username).first() if valid else None
        if to_user is None:
            error = f"No active user is called {username[:150]!r}: nothing changed."
            return _refused(request, escalation, error, status=400)
    try:
        escalation_reassign(
            escalation_id=escalation.pk, to_user=to_user, by_user=request.user, note=note
        )
    except EscalationClosed:
        return _refused(request, escalation, "This escalation is already decided: nothing changed.")
    except (NotAReviewer, NotStaff) as exc:
        return _refused(request, escalation, f"Not reassigned: {exc}.", status=400)
    who = "you" if to_user == request.user else to_user.get_username()
    messages.success(request, f"The claim is now held by {who} (recorded in the audit log).")
    return redirect(reverse("proposal_detail", args=[escalation.proposal_id]) + "#adjudication")
