"""Review deadlines: when an escalation falls due, and what its panel does then.

A panel may give its escalations a `review_deadline`; each escalation copies it
when it is made (`due_at`, `on_deadline`, `remind_at`), so a later change of the
panel does not move a clock already running. At `due_at`, `reject` or `approve`
is a decision signed by the server's key and marked as a fallback in its signed
bytes (`decision_payload`'s `fallback`), never a person's, never a human label;
`keep_open` only tells people. A reviewer's verdict that arrives from `due_at`
on is refused (`escalations.DeadlinePassed`), whether or not the worker has acted yet: the
clock decides, under the escalation's row lock, once (`Escalation.fallback_due`).

The scheduler (beat) runs `deadlines_sweep` every REVIEWAPP_DEADLINE_SWEEP_SECONDS:
it leases the escalations due (`escalations_due_take`) and hands them to workers
in batches, each acted on in its own transaction (`escalation_expire`). A worker
lost mid-batch leaves the rest leased; the lease runs out and the next sweep
takes them again. `expired_at`, written in the transaction that acts, makes
acting twice impossible.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.ledger.keys import server_signer

from .. import events
from ..models import Decision, Escalation, Proposal, ReviewClaim
from ..models.panel import OnDeadline
from .decisions import decision_append

log = logging.getLogger(__name__)

FALLBACK_NAME = "deadline fallback"
OUTCOME_OF = {
    OnDeadline.REJECT: Decision.Outcome.REJECTED,
    OnDeadline.APPROVE: Decision.Outcome.APPROVED,
}



def escalations_due_take(*, now: datetime, limit: int) -> list[int]:
    """Lease up to `limit` escalations whose deadline has come and is yet to be acted on,
    earliest first; their ids. A lease held by a live worker is skipped; one whose worker
    died runs out after REVIEWAPP_DEADLINE_LEASE_SECONDS and is taken again."""
    lease_until = now + timedelta(seconds=settings.REVIEWAPP_DEADLINE_LEASE_SECONDS)
    with transaction.atomic():
        # SKIP LOCKED: two sweeps running at once take different rows (PostgreSQL;
        # SQLite has one writer at a time anyway).
        ids = list(
            Escalation.objects.select_for_update(skip_locked=True)
            .filter(
                status__in=Escalation.UNDECIDED,
                due_at__lte=now,
                expired_at__isnull=True,
            )
            .filter(Q(deadline_lease_until__isnull=True) | Q(deadline_lease_until__lt=now))
            .order_by("due_at")
            .values_list("pk", flat=True)[:limit]
        )
        if ids:
            Escalation.objects.filter(pk__in=ids).update(deadline_lease_until=lease_until)
    return ids


def escalation_expire(*, escalation_id: int, now: datetime | None = None) -> Decision | None:
    """Act on an escalation's deadline, once: sign its fallback decision (reject or approve)
    or, for keep_open, record that it passed. The decision, or None (kept open, not yet
    due, already acted on, or decided by a person first).

    The escalation's row lock orders this against a reviewer's verdict
    (`escalation_review` takes the same lock first), so exactly one of them decides.
    """
    now = now or timezone.now()
    with transaction.atomic():
        decisions = _expire(_locked([escalation_id], now, skip_locked=False), now)
    return decisions[0] if decisions else None


def escalations_expire(*, escalation_ids: list[int], now: datetime | None = None) -> int:
    """`escalation_expire` for many, in one transaction (one commit, one wake of the
    ledger's sequencer, the rows written in a few statements): how many got a fallback
    decision. Rows another transaction holds (a reviewer signing) are skipped and stay
    leased for the next sweep. If any fails, each is done alone, so one bad escalation
    holds back only itself."""
    now = now or timezone.now()
    try:
        with transaction.atomic():
            return len(_expire(_locked(escalation_ids, now, skip_locked=True), now))
    except Exception:
        decided = 0
        for escalation_id in escalation_ids:
            try:
                decided += escalation_expire(escalation_id=escalation_id, now=now) is not None
            except Exception:
                log.exception("could not act on the deadline of escalation %s", escalation_id)
        return decided


def _locked(ids: list[int], now: datetime, *, skip_locked: bool) -> list[Escalation]:
    """Those of `ids` whose deadline has come and is yet to be acted on, row-locked, with
    what a fallback decision reads fetched alongside (the proposals, their evidence, lenses
    and reviews) in a constant number of queries."""
    return list(
        Escalation.objects.select_for_update(of=("self",), skip_locked=skip_locked)
        .filter(
            pk__in=ids,
            expired_at__isnull=True,
            status__in=Escalation.UNDECIDED,
            due_at__lte=now,
        )
        .select_related("proposal")
        .prefetch_related("proposal__evidence", "proposal__judgements", "reviews")
        .order_by("due_at", "id")
    )


def _expire(escalations: list[Escalation], now: datetime) -> list[Decision]:
    """Act on the locked `escalations`' deadlines: the rows first, a few statements for all
    of them, then each fallback decision signed and appended. Call in a transaction."""
    kept, falling = [], []
    for escalation in escalations:
        escalation.expired_at, escalation.deadline_lease_until = now, None
        if escalation.fallback_due(now):
            escalation.status = Escalation.Status.RESOLVED
            escalation.resolved_at = now
            escalation.claimed_by, escalation.claimed_at = None, None
            escalation.search = None  # only waiting escalations are searched
            falling.append(escalation)
        else:  # keep_open: it waits on; people are told
            kept.append(escalation)
    # The same values for every row of each kind: one UPDATE each (bulk_update's CASE
    # expressions cost more to build than the statements they save).
    if kept:
        Escalation.objects.filter(pk__in=[e.pk for e in kept]).update(
            expired_at=now, deadline_lease_until=None
        )
    if falling:
        Escalation.objects.filter(pk__in=[e.pk for e in falling]).update(
            status=Escalation.Status.RESOLVED,
            resolved_at=now,
            claimed_by=None,
            claimed_at=None,
            search=None,
            expired_at=now,
            deadline_lease_until=None,
        )
        ReviewClaim.objects.filter(escalation__in=falling).delete()
        Proposal.objects.filter(pk__in=[e.proposal_id for e in falling]).update(
            status=Proposal.Status.DECIDED, updated_at=now
        )
    for escalation in kept:
        events.escalation_deadline_passed.send(
            sender=Escalation, escalation=escalation, decision=None
        )
    signer = server_signer() if falling else None
    return [_fallback_decide(escalation, signer) for escalation in falling]


def _fallback_decide(escalation: Escalation, signer) -> Decision:
    """The escalation's fallback decision, signed and in the ledger (its row already says
    resolved); announced as its deadline passing."""
    proposal = escalation.proposal
    proposal.status = Proposal.Status.DECIDED
    waited = escalation.due_at - escalation.created_at
    outcome = OUTCOME_OF[escalation.on_deadline]
    reviews = len(escalation.reviews.all())  # prefetched
    given = f" ({reviews} of {escalation.reviews_needed} reviews were given)" if reviews else ""
    decision = decision_append(
        proposal=proposal,
        outcome=outcome,
        basis=Decision.Basis.FALLBACK,
        rationale=(
            f"No one decided this escalation by its deadline{given}: the panel's fallback "
            f"{outcome} it. No person made this decision."
        ),
        decided_by_name=FALLBACK_NAME,
        escalation=escalation,
        signer=signer,
        evidence=list(proposal.evidence.all()),  # prefetched, as the lenses
        lenses=[
            {"lens_name": j.lens_name, "lens_version": j.lens_version}
            for j in proposal.judgements.all()
        ],
        fallback={
            "on_deadline": escalation.on_deadline,
            "due_at": escalation.due_at.isoformat(),
            "review_deadline_seconds": int(waited.total_seconds()),
        },
    )  # which tells waiting MCP calls after commit (final_notice), as every decision does
    events.escalation_deadline_passed.send(
        sender=Escalation, escalation=escalation, decision=decision
    )
    return decision


def escalations_remind(*, now: datetime, limit: int) -> int:
    """Tell the people holding escalations whose reminder time came that the deadline is
    near, once each; how many. The rows are marked in the transaction that tells."""
    with transaction.atomic():
        due = list(
            Escalation.objects.select_for_update(skip_locked=True)
            .filter(
                status__in=Escalation.UNDECIDED,
                remind_at__lte=now,
                reminded_at__isnull=True,
            )
            .select_related("proposal")
            .order_by("remind_at")[:limit]
        )
        if due:
            Escalation.objects.filter(pk__in=[e.pk for e in due]).update(reminded_at=now)
        for escalation in due:
            escalation.reminded_at = now
            events.escalation_deadline_near.send(sender=Escalation, escalation=escalation)
    return len(due)


def deadlines_overdue(*, now: datetime | None = None) -> dict:
    """Deadlines more than REVIEWAPP_DEADLINE_LATE_SECONDS past and not acted on: a scheduler
    or its workers falling behind (`/healthz` reports it). How many, and the oldest."""
    now = now or timezone.now()
    late = Escalation.objects.filter(
        status__in=Escalation.UNDECIDED,
        expired_at__isnull=True,
        due_at__lt=now - timedelta(seconds=settings.REVIEWAPP_DEADLINE_LATE_SECONDS),
    )
    oldest = late.order_by("due_at").values_list("due_at", flat=True).first()
    return {"overdue": late.count() if oldest else 0, "oldest_due_at": oldest}
