"""What only staff do on the review pages: take over or hand on a held claim, assign."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from reviewapp.review.models import Escalation
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.services.assignments import (
    AssigneeNotAReviewer,
    AssignmentClosed,
    NotStaffToAssign,
    escalation_assign,
)
from reviewapp.review.services.escalations import (
    AwaitingReconciler,
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
    except AwaitingReconciler:
        error = "The reviews disagree: a reconciler decides it, there is no claim to hand on."
        return _refused(request, escalation, error)
    except EscalationClosed:
        return _refused(request, escalation, "This escalation is already decided: nothing changed.")
    except (NotAReviewer, NotStaff) as exc:
        return _refused(request, escalation, f"Not reassigned: {exc}.", status=400)
    who = "you" if to_user == request.user else to_user.get_username()
    messages.success(request, f"The claim is now held by {who} (recorded in the audit log).")
    return redirect(reverse("proposal_detail", args=[escalation.proposal_id]) + "#adjudication")


def _named(rows, field: str, name: str):
    """The row called `name`, or None; NUL or an overlong name matches nothing."""
    if "\x00" in name or len(name) > 150:
        return None
    return rows.filter(**{field: name}).first()


@require_POST
@reviewer_required
def escalation_assign_view(request, pk: int):
    """POST `user` (a username) and/or `group` (a group name); both empty unassigns. Audited.

    Assigning puts the escalation in their queue ("assigned to me", "my groups");
    it does not claim it. 400 for a name that matches nobody, 409 once decided.
    """
    escalation = get_object_or_404(Escalation.objects.only("id", "proposal_id"), pk=pk)
    if not (request.user.is_staff or request.user.is_superuser):
        raise PermissionDenied("Only staff can assign escalations.")
    username = request.POST.get("user", "").strip()
    group_name = request.POST.get("group", "").strip()
    user = group = None
    if username:
        user = _named(get_user_model().objects.filter(is_active=True), "username", username)
        if user is None:
            error = f"No active user is called {username[:150]!r}: nothing changed."
            return _refused(request, escalation, error, status=400)
    if group_name:
        group = _named(Group.objects.all(), "name", group_name)
        if group is None:
            error = f"No group is called {group_name[:150]!r}: nothing changed."
            return _refused(request, escalation, error, status=400)
    try:
        escalation_assign(escalation=escalation, user=user, group=group, by=request.user)
    except AssignmentClosed:
        return _refused(request, escalation, "This escalation is already decided: nothing changed.")
    except AssigneeNotAReviewer as exc:
        return _refused(request, escalation, f"Not assigned: {exc}.", status=400)
    except NotStaffToAssign as exc:
        raise PermissionDenied(str(exc)) from exc
    who = " and ".join(
        x for x in (user and user.get_username(), group and f"group {group.name}") if x
    )
    messages.success(
        request,
        f"Assigned to {who} (recorded in the audit log)." if who else "Unassigned (recorded).",
    )
    return redirect(reverse("proposal_detail", args=[escalation.proposal_id]) + "#adjudication")
