"""Human adjudication of escalated proposals."""

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.services import audit_record
from reviewapp.core.blank import shows_nothing
from reviewapp.webhooks.events import webhook_record_claimed, webhook_record_released

from ..access import may_sign_decisions
from ..models import Decision, DecisionAudit, Escalation, Proposal
from .annotations import annotations_validate
from .audits import audit_verdict_sign, is_audit
from .decisions import decision_append


class ClaimHeldByOther(Exception):
    def __init__(self, holder: str):
        super().__init__(f"already claimed by {holder}")
        self.holder = holder


class EscalationClosed(Exception):
    """The escalation was already decided."""


class NotAReviewer(PermissionDenied):
    """The user may read the review pages but not sign decisions (staff outside the group)."""


def _ensure_may_sign(user) -> None:
    # The same rule the API applies to a session's `review` scope.
    if not may_sign_decisions(user):
        raise NotAReviewer("only members of the reviewers group can claim and decide escalations")


def _claim_expiry_cutoff():
    return timezone.now() - timedelta(minutes=settings.REVIEWAPP_CLAIM_TTL_MINUTES)


def _holder_name(escalation: Escalation) -> str:
    return escalation.claimed_by.get_username() if escalation.claimed_by else "someone"


def escalation_claim(*, escalation_id: int, user) -> Escalation:
    """Claim an escalation for `user`. Exactly one of two simultaneous claimers wins."""
    _ensure_may_sign(user)
    now = timezone.now()
    # One conditional UPDATE decides the race inside the database: only the
    # first statement to run still sees the row open (or its claim expired).
    with transaction.atomic():  # the claim and its outbox row commit together
        won = (
            Escalation.objects.filter(pk=escalation_id)
            .filter(
                Q(status=Escalation.Status.OPEN)
                | Q(status=Escalation.Status.CLAIMED, claimed_by=user)
                | Q(status=Escalation.Status.CLAIMED, claimed_at__lt=_claim_expiry_cutoff())
            )
            .update(status=Escalation.Status.CLAIMED, claimed_by=user, claimed_at=now)
        )
        escalation = Escalation.objects.select_related("claimed_by").get(pk=escalation_id)
        if won:
            webhook_record_claimed(escalation=escalation)
            _audit(escalation, actor=user, action=AuditEntry.Action.CLAIM)
    if not won:
        if escalation.status == Escalation.Status.RESOLVED:
            raise EscalationClosed(f"escalation {escalation_id} is already decided")
        raise ClaimHeldByOther(_holder_name(escalation))
    return escalation


def escalation_release(*, escalation_id: int, user) -> bool:
    """Give a claim back; only its holder can."""
    with transaction.atomic():  # the release and its outbox row commit together
        released = Escalation.objects.filter(
            pk=escalation_id, status=Escalation.Status.CLAIMED, claimed_by=user
        ).update(status=Escalation.Status.OPEN, claimed_by=None, claimed_at=None)
        if released:
            escalation = Escalation.objects.get(pk=escalation_id)
            webhook_record_released(escalation=escalation)
            _audit(escalation, actor=user, action=AuditEntry.Action.RELEASE)
    return bool(released)


def _audit(escalation: Escalation, *, actor, action: str, changes=None, note: str = "") -> None:
    audit_record(
        actor=actor,
        action=action,
        target_type="escalation",
        target=escalation,
        target_repr=f"escalation {escalation.pk} (proposal {escalation.proposal_id})",
        changes=changes,
        note=note,
    )


class NotStaff(PermissionDenied):
    """Only staff may take over or hand on someone else's claim."""


def escalation_reassign(*, escalation_id: int, to_user, by_user, note: str = "") -> Escalation:
    """Staff take over (to_user is themselves) or hand on an escalation, held or not. Audited.

    The row is locked: a decision being signed on it at the same moment
    either commits first (and this finds it resolved) or waits for this.
    """
    if not (by_user.is_staff or by_user.is_superuser):
        raise NotStaff("only staff can take over or reassign a claim")
    _ensure_may_sign(to_user)
    with transaction.atomic():
        # Lock the escalation row only: `claimed_by` is a nullable join, which
        # PostgreSQL cannot lock FOR UPDATE.
        escalation = (
            Escalation.objects.select_for_update(of=("self",))
            .select_related("claimed_by")
            .get(pk=escalation_id)
        )
        if escalation.status == Escalation.Status.RESOLVED:
            raise EscalationClosed(f"escalation {escalation_id} is already decided")
        previous = escalation.claimed_by.get_username() if escalation.claimed_by else None
        escalation.status = Escalation.Status.CLAIMED
        escalation.claimed_by = to_user
        escalation.claimed_at = timezone.now()
        escalation.save(update_fields=["status", "claimed_by", "claimed_at"])
        webhook_record_claimed(escalation=escalation)
        _audit(
            escalation,
            actor=by_user,
            action=AuditEntry.Action.REASSIGN,
            changes={"claimed_by": {"old": previous, "new": to_user.get_username()}},
            note=note,
        )
    return escalation


def escalation_claim_extend(*, escalation_id: int, user) -> datetime | None:
    """Renew `user`'s live claim while they work; the new expiry, or None if it is not theirs.

    `claimed_at` then means "claimed or last renewed". A conditional UPDATE:
    a claim that lapsed, was released or was taken over in the meantime is
    never revived by a late heartbeat.
    """
    now = timezone.now()
    renewed = Escalation.objects.filter(
        pk=escalation_id,
        status=Escalation.Status.CLAIMED,
        claimed_by=user,
        claimed_at__gte=_claim_expiry_cutoff(),
    ).update(claimed_at=now)
    return now + timedelta(minutes=settings.REVIEWAPP_CLAIM_TTL_MINUTES) if renewed else None


def escalation_decide(
    *,
    escalation_id: int,
    outcome: str,
    rationale: str,
    user=None,
    decided_by_name: str,
    marks: list[tuple[object, object]] | None = None,
    tags: list[object] | None = None,
    wrong_reason: list[object] | None = None,
) -> Decision | DecisionAudit:
    """Sign a reviewer's decision. A browser reviewer must hold the claim (or it must be open).

    ``marks`` ((claim id, mark) pairs), ``tags`` and ``wrong_reason`` (lens
    names) are checked by services.annotations and signed with it; an
    ``AnnotationError`` names what does not fit, and nothing is written.
    An audit escalation is answered with a signed ``DecisionAudit`` instead
    (services.audits): the automatic decision it audits stands.
    """
    if user is not None:  # a `review` token has no user; its scope was checked
        _ensure_may_sign(user)
    if shows_nothing(rationale):
        raise ValueError("a rationale is required")
    if outcome not in Decision.Outcome.values:
        raise ValueError(f"outcome must be one of {', '.join(Decision.Outcome.values)}")
    with transaction.atomic():
        # Row lock: two reviewers deciding at once are serialised here, and
        # the second finds the escalation resolved.
        escalation = (
            Escalation.objects.select_for_update().select_related("proposal").get(pk=escalation_id)
        )
        if escalation.status == Escalation.Status.RESOLVED:
            raise EscalationClosed(f"escalation {escalation_id} is already decided")
        claim_live = (
            escalation.status == Escalation.Status.CLAIMED
            and escalation.claimed_at >= _claim_expiry_cutoff()
        )
        if claim_live and (user is None or escalation.claimed_by_id != user.pk):
            raise ClaimHeldByOther(_holder_name(escalation))
        if is_audit(escalation):
            # The machine's decision stands: the verdict is signed beside it.
            return audit_verdict_sign(
                escalation=escalation,
                outcome=outcome,
                rationale=rationale,
                user=user,
                decided_by_name=decided_by_name,
            )
        annotations = annotations_validate(
            proposal=escalation.proposal,
            outcome=outcome,
            marks=marks,
            tags=tags,
            wrong_reason=wrong_reason,
        )
        escalation.status = Escalation.Status.RESOLVED
        escalation.resolved_at = timezone.now()
        escalation.search = None  # only open escalations are searched
        escalation.save(update_fields=["status", "resolved_at", "search"])
        Proposal.objects.filter(pk=escalation.proposal_id).update(
            status=Proposal.Status.DECIDED, updated_at=timezone.now()
        )
        return decision_append(
            proposal=escalation.proposal,
            outcome=outcome,
            basis=Decision.Basis.REVIEWER,
            rationale=rationale,
            decided_by_user=user,
            decided_by_name=decided_by_name,
            escalation=escalation,
            annotations=annotations,
        )
