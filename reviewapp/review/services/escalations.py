"""Human adjudication of escalated proposals."""

from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from reviewapp.core.blank import shows_nothing

from .. import events
from ..access import may_reconcile, may_sign_decisions
from ..models import Decision, DecisionAudit, Escalation, Proposal, ReviewClaim
from ..models.escalation import claim_ttl
from .annotations import Annotations, annotations_payload, annotations_validate
from .assignments import escalation_assign_on_reconcile
from .audits import audit_verdict_sign
from .decisions import decision_append
from .reviews import ReviewUnverified as ReviewUnverified  # raised by escalation_review
from .reviews import review_create, review_signed


class ClaimHeldByOther(Exception):
    def __init__(self, holder: str):
        super().__init__(f"already claimed by {holder}")
        self.holder = holder


class EscalationClosed(Exception):
    """The escalation was already decided."""


class DeadlinePassed(EscalationClosed):
    """The escalation's review deadline passed: its panel's fallback decides it, not a
    reviewer (services.deadlines). What the reviewer wrote is theirs to keep."""


def deadline_refusal(escalation: Escalation) -> DeadlinePassed:
    return DeadlinePassed(
        f"the review deadline of escalation {escalation.pk} passed at "
        f"{escalation.due_at:%Y-%m-%d %H:%M:%S} UTC: its panel's fallback "
        f"({escalation.on_deadline}) decides it, signed by the server and marked as a "
        "fallback, not a reviewer. Your verdict was not signed; keep what you wrote if you "
        "need it."
    )


class AwaitingReconciler(EscalationClosed):
    """The reviews disagree: only a reconciler's decision moves the escalation on."""


class NotAReviewer(PermissionDenied):
    """The user may read the review pages but not sign decisions (staff outside the group)."""


def _ensure_may_sign(user) -> None:
    # The same rule the API applies to a session's `review` scope.
    if not may_sign_decisions(user):
        raise NotAReviewer("only members of the reviewers group can claim and decide escalations")


def escalation_claim(*, escalation_id: int, user) -> Escalation:
    """Claim an escalation for `user`. Exactly one of two simultaneous claimers wins.

    An escalation that needs several reviews is held per reviewer instead
    (`_review_claim`): up to as many people as reviews are still needed.
    """
    _ensure_may_sign(user)
    if Escalation.objects.filter(pk=escalation_id, reviews_needed__gt=1).exists():
        return _review_claim(escalation_id, user)
    now = timezone.now()
    # One conditional UPDATE decides the race inside the database: only the
    # first statement to run still sees the row open (or its claim expired),
    # and before its deadline if a fallback decides it then.
    with transaction.atomic():  # the claim and its outbox row commit together
        won = (
            Escalation.objects.filter(pk=escalation_id)
            .claimable_by(user, now)
            .update(**Escalation.held_values(user, now))
        )
        escalation = Escalation.objects.select_related("claimed_by").get(pk=escalation_id)
        if won:
            events.escalation_claimed.send(sender=Escalation, escalation=escalation, user=user)
    if not won:
        _refuse_closed(escalation, now)
        raise ClaimHeldByOther(escalation.holder_name())
    return escalation


def _review_claim(escalation_id: int, user) -> Escalation:
    with transaction.atomic():
        # Row lock: claimers of the last free place take turns, so no more
        # people hold it than reviews are still needed.
        escalation = Escalation.objects.select_for_update().get(pk=escalation_id)
        _refuse_closed(escalation, timezone.now())
        if escalation.awaits_reconciler:
            raise EscalationClosed(f"escalation {escalation_id} waits for a reconciler")
        if escalation.reviews.filter(reviewer=user).exists():
            raise AlreadyReviewed(f"{user.get_username()} already reviewed it")
        places = escalation.review_places(user)
        if not places.free:
            raise ClaimHeldByOther(", ".join(places.holders) or "reviewers")
        ReviewClaim.objects.update_or_create(
            escalation=escalation, user=user, defaults={"claimed_at": timezone.now()}
        )
        events.review_place_claimed.send(sender=Escalation, escalation=escalation, user=user)
    return escalation


def _refuse_closed(escalation: Escalation, now) -> None:
    """Raise what a reviewer acting on an escalation no one may decide now is told:
    decided, withdrawn by its submitter, or past a deadline its fallback decides."""
    if escalation.is_resolved:
        if escalation.expired_at is not None:  # by its fallback
            raise deadline_refusal(escalation)
        raise EscalationClosed(f"escalation {escalation.pk} is already decided")
    if escalation.status == Escalation.Status.WITHDRAWN:
        raise EscalationClosed(
            f"escalation {escalation.pk} was withdrawn by its submitter: there is nothing to decide"
        )
    if escalation.fallback_due(now):
        raise deadline_refusal(escalation)


def escalation_release(*, escalation_id: int, user) -> bool:
    """Give a claim back; only its holder can."""
    if ReviewClaim.objects.filter(escalation_id=escalation_id, user=user).delete()[0]:
        return True
    with transaction.atomic():  # the release and its outbox row commit together
        released = Escalation.objects.filter(
            pk=escalation_id, status=Escalation.Status.CLAIMED, claimed_by=user
        ).update(**Escalation.unheld_values())
        if released:
            escalation = Escalation.objects.get(pk=escalation_id)
            events.escalation_released.send(sender=Escalation, escalation=escalation, user=user)
    return bool(released)


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
        _refuse_closed(escalation, timezone.now())
        if escalation.awaits_reconciler:
            # A claim would end the reconcile: with every review in, no one could decide it.
            raise AwaitingReconciler(f"escalation {escalation_id} waits for a reconciler")
        previous = escalation.claimed_by.get_username() if escalation.claimed_by else None
        escalation.hold(to_user, timezone.now())
        events.escalation_reassigned.send(
            sender=Escalation, escalation=escalation, by=by_user, previous=previous, note=note
        )
    return escalation


def escalation_claim_extend(*, escalation_id: int, user) -> datetime | None:
    """Renew `user`'s live claim while they work; the new expiry, or None if it is not theirs.

    `claimed_at` then means "claimed or last renewed". A conditional UPDATE:
    a claim that lapsed, was released or was taken over in the meantime is
    never revived by a late heartbeat.
    """
    now = timezone.now()
    renewed = ReviewClaim.objects.live(now).filter(escalation_id=escalation_id, user=user).update(
        claimed_at=now
    ) or Escalation.objects.held(now).filter(pk=escalation_id, claimed_by=user).update(
        claimed_at=now
    )
    return now + claim_ttl() if renewed else None


@dataclass(frozen=True)
class ReviewResult:
    """Where an escalation stands after someone gave their verdict on it."""

    status: str  # "decided", "awaiting_reviews" or "reconcile"
    reviews: int
    reviews_needed: int
    # The decision, or for an audit escalation the signed verdict beside the decision.
    decision: Decision | DecisionAudit | None = None


class AlreadyReviewed(Exception):
    """One person reviews an escalation once."""


class NotAReconciler(PermissionDenied):
    """The reviewers disagreed: only a reconciler (or a superuser) may decide now."""


class NeedsAPerson(PermissionDenied):
    """An escalation that needs several reviews takes each from a named person."""


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
) -> Decision | DecisionAudit | None:
    """`escalation_review`'s outcome: the decision (or an audit's verdict), or None while
    reviews are awaited or disagree."""
    return escalation_review(
        escalation_id=escalation_id,
        outcome=outcome,
        rationale=rationale,
        user=user,
        decided_by_name=decided_by_name,
        marks=marks,
        tags=tags,
        wrong_reason=wrong_reason,
    ).decision


def escalation_review(
    *,
    escalation_id: int,
    outcome: str,
    rationale: str,
    user=None,
    decided_by_name: str,
    marks: list[tuple[object, object]] | None = None,
    tags: list[object] | None = None,
    wrong_reason: list[object] | None = None,
) -> ReviewResult:
    """A reviewer's verdict: the decision itself, or one of the reviews it needs.

    With one review needed (the default) the verdict is signed as the decision
    at once; a browser reviewer must hold the claim (or it must be open). With
    several, it is signed as the reviewer's own review: agreeing reviews make
    the decision, which names each of them; disagreeing ones send the
    escalation to reconcile, which only a reconciler decides.

    ``marks`` ((claim id, mark) pairs), ``tags`` and ``wrong_reason`` (lens
    names) are checked by services.annotations before anything is written (an
    ``AnnotationError`` names what does not fit). Each review signs its own
    reviewer's. The decision signs, and its ``ClaimMark``/tag rows restate,
    those of the act that decided: the single reviewer's, the reconciler's, or
    for agreeing reviews those of the review that completed the agreement (the
    last one given); the earlier reviewers' stay in their own signed reviews.

    An audit escalation always takes one verdict, whatever ``reviews_needed``
    says, signed as a ``DecisionAudit`` (services.audits): the automatic
    decision it audits stands.
    """
    _check_verdict(user, outcome, rationale)
    with transaction.atomic():
        # Row lock: reviewers submitting at once are serialised here, so the
        # count of reviews each one sees is final and only one signs the
        # decision; the next finds the escalation resolved.
        escalation = (
            Escalation.objects.select_for_update().select_related("proposal").get(pk=escalation_id)
        )
        # The clock is read under the lock the deadline worker takes too: from `due_at`
        # on, the fallback decides, whoever holds the claim.
        _refuse_closed(escalation, timezone.now())
        # Checked where each flow has passed its permission and claim checks.
        annotated = partial(
            annotations_validate,
            proposal=escalation.proposal,
            outcome=outcome,
            marks=marks,
            tags=tags,
            wrong_reason=wrong_reason,
        )
        # Who may give this verdict and what it becomes: the escalation's state says.
        if escalation.awaits_reconciler:
            flow = _reconcile
        elif escalation.takes_one_verdict:
            flow = _one_verdict
        else:
            flow = _review
        return flow(escalation, outcome, rationale, user, decided_by_name, annotated)


def _check_verdict(user, outcome: str, rationale: str) -> None:
    if user is not None:  # a `review` token has no user; its scope was checked
        _ensure_may_sign(user)
    if shows_nothing(rationale):
        raise ValueError("a rationale is required")
    if outcome not in Decision.Outcome.values:
        raise ValueError(f"outcome must be one of {', '.join(Decision.Outcome.values)}")


def _reconcile(escalation, outcome, rationale, user, name, annotated) -> ReviewResult:
    """A reconciler's decision on reviews that disagree, naming each of them."""
    if not may_reconcile(user):
        raise NotAReconciler(
            "the reviewers disagree: only a member of the reconcilers group can decide"
        )
    reviews = list(escalation.reviews.order_by("id"))
    if any(r.reviewer_id == user.pk for r in reviews):
        # A party to the disagreement would settle it their own way.
        raise NotAReconciler("you gave one of the disagreeing reviews: another reconciler decides")
    # The decision names each review as signed, never as its row says.
    signed = [review_signed(r) for r in reviews]
    decision = _resolve(
        escalation, outcome, rationale, user, name, reviews=signed, annotations=annotated()
    )
    return ReviewResult("decided", len(reviews), escalation.reviews_needed, decision)


def _one_verdict(escalation, outcome, rationale, user, name, annotated) -> ReviewResult:
    """The decision (or, for an audit, the verdict signed beside the machine's decision
    that stands), unless someone else holds a live claim."""
    if escalation.held_by_other(user):
        raise ClaimHeldByOther(escalation.holder_name())
    if escalation.is_audit:
        audit = audit_verdict_sign(
            escalation=escalation,
            outcome=outcome,
            rationale=rationale,
            user=user,
            decided_by_name=name,
        )
        return ReviewResult("decided", 1, 1, audit)
    decision = _resolve(escalation, outcome, rationale, user, name, annotations=annotated())
    return ReviewResult("decided", 1, 1, decision)


def _review(escalation, outcome, rationale, user, name, annotated) -> ReviewResult:
    if user is None:
        raise NeedsAPerson(
            f"this escalation needs {escalation.reviews_needed} reviews, each by a person: "
            "use a personal token (create_api_token NAME --scopes review --user USERNAME)"
        )
    if escalation.reviews.filter(reviewer=user).exists():
        raise AlreadyReviewed(f"{name} already reviewed escalation {escalation.pk}")
    places = escalation.review_places(user)
    mine = escalation.review_claims.filter(user=user).exists()
    if not mine and not places.free:
        # Every place left is held by someone else: the last review is theirs to give.
        raise ClaimHeldByOther(", ".join(places.holders))
    annotations = annotated()
    review_create(
        escalation=escalation,
        user=user,
        reviewer_name=name,
        outcome=outcome,
        rationale=rationale,
        annotations=annotations_payload(annotations),
    )
    reviews = list(escalation.reviews.order_by("id"))
    needed = escalation.reviews_needed
    events.review_submitted.send(sender=Escalation, escalation=escalation, reviews=len(reviews))
    ReviewClaim.objects.filter(escalation=escalation, user=user).delete()
    if len(reviews) < needed:
        _claims_end(escalation, user)
        return ReviewResult("awaiting_reviews", len(reviews), needed)
    # Whether they agree is read from what each reviewer signed, never from the rows' columns.
    signed = [review_signed(r) for r in reviews]
    if len({r.outcome for r in signed}) == 1:
        # The review that completed the agreement decides: its annotations are the decision's.
        decision = _resolve(
            escalation,
            signed[-1].outcome,
            "\n\n".join(f"{r.reviewer}: {r.rationale}" for r in signed),
            user,
            ", ".join(r.reviewer for r in signed),
            reviews=signed,
            annotations=annotations,
        )
        return ReviewResult("decided", len(reviews), needed, decision)
    escalation.to_reconcile()
    escalation_assign_on_reconcile(escalation=escalation)
    events.reviews_disagreed.send(sender=Escalation, escalation=escalation)
    return ReviewResult("reconcile", len(reviews), needed)


def _claims_end(escalation: Escalation, user) -> None:
    """A reviewer who gave their review holds the escalation no more."""
    if escalation.claimed_by_id == user.pk:
        escalation.unhold()


def _resolve(
    escalation,
    outcome,
    rationale,
    user,
    decided_by_name,
    *,
    reviews=None,
    annotations: Annotations | None = None,
) -> Decision:
    escalation.resolve()
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
        reviews=reviews,
        annotations=annotations,
    )
