"""An escalation: a proposal handed to a human reviewer, and why; and the rules of its life.

Its states: open (nobody holds it), claimed (one reviewer holds it; the claim
expires, see `claim_cutoff`), awaiting reviews (it needs several reviews:
each reviewer holds a place of their own, a `ReviewClaim`, and gives one
review), reconcile (the reviews disagree: a reconciler decides), decided
(`resolved`) and withdrawn (by its submitter). Under a panel's review deadline
it falls due at `due_at`, and from then on its fallback, not a person, decides
it (`fallback_due`). Who may claim, decide and reconcile it, and whether a claim
is live, are answered here, by the model and its QuerySet, for the services,
the pages, the API and MCP alike.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..access import may_reconcile, may_sign_decisions
from .proposal import Proposal


def claim_ttl() -> timedelta:
    """How long a claim lasts from when it was taken or last renewed."""
    return timedelta(minutes=settings.REVIEWAPP_CLAIM_TTL_MINUTES)


def claim_cutoff(now: datetime | None = None) -> datetime:
    """The claim-expiry rule, written once: a claim taken (or renewed) at `claimed_at`
    is live while `now < claimed_at + TTL`, i.e. while `claimed_at` is after the instant
    returned here; at `claimed_at + TTL` exactly, and after, it has expired."""
    return (now or timezone.now()) - claim_ttl()


def claim_is_live(claimed_at: datetime | None, now: datetime | None = None) -> bool:
    return claimed_at is not None and claimed_at > claim_cutoff(now)


def live_claim_q(now: datetime | None = None) -> Q:
    """Rows (escalations or review claims) whose `claimed_at` is still live at `now`."""
    return Q(claimed_at__gt=claim_cutoff(now))


def held_q(now: datetime | None = None) -> Q:
    """Escalations one reviewer holds now: claimed, and the claim still live."""
    return Q(status=Escalation.Status.CLAIMED) & live_claim_q(now)


def held_by_others_q(user, now: datetime | None = None) -> Q:
    """Escalations someone other than `user` holds now."""
    return held_q(now) & ~Q(claimed_by=user)


def expired_claim_q(now: datetime | None = None) -> Q:
    """Escalations still marked claimed whose claim has expired (anyone may claim them)."""
    return Q(status=Escalation.Status.CLAIMED) & ~live_claim_q(now)


# `on_deadline` values that end the escalation with a signed fallback decision.
FALLBACK_ACTIONS = ("reject", "approve")


class EscalationQuerySet(models.QuerySet):
    def with_reviews_of(self, user):
        """Each row with `reviews_given` and whether `user` gave one (`reviewed_by_user`),
        read in the same query: what `standing(places=False)` says of several reviews."""
        from .review import Review  # review.py imports this module

        reviews = Review.objects.filter(escalation=OuterRef("pk"))
        given = reviews.order_by().values("escalation").annotate(n=Count("pk")).values("n")
        return self.annotate(
            reviews_given=Coalesce(Subquery(given[:1]), 0),
            reviewed_by_user=Exists(reviews.filter(reviewer=user.pk)),
        )

    def undecided(self):
        """Open, claimed and reconcile escalations: the inbox's (the `inbox_open` index)."""
        return self.filter(status__in=Escalation.UNDECIDED)

    def held(self, now: datetime | None = None):
        return self.filter(held_q(now))

    def claimable_by(self, user, now: datetime | None = None):
        """Those `user` may take one claim on: open, already theirs, or their claim
        expired; never one past a deadline whose fallback decides it."""
        return self.filter(
            Q(status=Escalation.Status.OPEN)
            | Q(status=Escalation.Status.CLAIMED, claimed_by=user)
            | expired_claim_q(now)
        ).exclude(on_deadline__in=FALLBACK_ACTIONS, due_at__lte=now or timezone.now())


class EscalationManager(models.Manager.from_queryset(EscalationQuerySet)):
    def get_queryset(self):
        # The search vector is for the database's index alone: never read it into Python.
        return super().get_queryset().defer("search")


class Escalation(models.Model):
    class Reason(models.TextChoices):
        NO_QUORUM = "no_quorum", "No quorum"
        INCONCLUSIVE = "inconclusive", "Inconclusive checker"
        LENS_FAILED = "lens_failed", "Lens failed"
        SIGN_OFF = "sign_off", "Sign-off"
        FINAL_STEP_FAILED = "final_step_failed", "Final step kept failing"
        REVIEWERS_DISAGREE = "reviewers_disagree", "Reviewers disagree"
        AUDIT = "audit", "Audit of an automatic decision"
        # The panel's vote decided, but its guarantee does not (yet) trust that vote pattern.
        BELOW_GUARANTEE = "below_guarantee", "Below the panel's guarantee"

    class Status(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        # The needed reviews disagree: only a reconciler can decide it now.
        RECONCILE = "reconcile"
        RESOLVED = "resolved"
        # Its submitter took the proposal back before anyone decided it: no decision.
        WITHDRAWN = "withdrawn"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="escalations")
    reasons = models.JSONField(default=list)
    detail = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_escalations",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Whose queue it is in (a person, a group, or both); unlike a claim it
    # does not lock anyone out. Set by staff or by an assignment rule on open.
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_escalations",
    )
    assigned_group = models.ForeignKey(
        "auth.Group",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_escalations",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Copied from the panel when the escalation is made: a later change of the
    # panel does not move the goal under reviews already given.
    reviews_needed = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # The panel's review deadline, copied when the escalation is made (like
    # reviews_needed): `due_at` is when it falls, `on_deadline` what it does then
    # (reject, approve or keep_open; "" with no deadline). `remind_at` is when the
    # people holding it hear it is near. `expired_at` is set once the deadline was
    # acted on, in the transaction that did it; `deadline_lease_until` holds it for
    # the worker acting on it (review.services.deadlines).
    due_at = models.DateTimeField(null=True, blank=True)
    on_deadline = models.CharField(max_length=9, blank=True)
    remind_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    deadline_lease_until = models.DateTimeField(null=True, blank=True)
    # The proposal's search vector while the escalation is open, NULL once
    # resolved (PostgreSQL; NULL on SQLite): see reviewapp.review.search.
    search = SearchVectorField(null=True, editable=False)

    objects = EscalationManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["proposal"],
                condition=~Q(status="resolved"),
                name="one_open_escalation_per_proposal",
            ),
        ]
        # The inbox: open, claimed and reconcile escalations, newest first. PostgreSQL
        # also has one such index per reason and a GIN index on `search`
        # (migration 0011; SQLite has neither GIN nor JSON containment).
        indexes = [
            models.Index(
                fields=["-created_at", "-id"],
                condition=Q(status__in=["open", "claimed", "reconcile"]),
                name="inbox_open",
            ),
            # The deadline sweep: waiting escalations whose deadline is yet to be acted on.
            models.Index(
                fields=["due_at"],
                condition=Q(
                    status__in=["open", "claimed", "reconcile"],
                    due_at__isnull=False,
                    expired_at__isnull=True,
                ),
                name="deadline_pending",
            ),
            models.Index(
                fields=["remind_at"],
                condition=Q(
                    status__in=["open", "claimed", "reconcile"],
                    remind_at__isnull=False,
                    reminded_at__isnull=True,
                ),
                name="reminder_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"Escalation {self.pk} ({', '.join(self.reasons)}, {self.status})"

    # --- where it stands ----------------------------------------------------

    @property
    def is_resolved(self) -> bool:
        return self.status == self.Status.RESOLVED

    @property
    def awaits_reconciler(self) -> bool:
        return self.status == self.Status.RECONCILE

    @property
    def is_audit(self) -> bool:
        """It audits an automatic decision, which stands: one verdict, signed beside it."""
        return self.Reason.AUDIT in (self.reasons or [])

    @property
    def takes_one_verdict(self) -> bool:
        """One reviewer claims it and decides; else each of several gives a review of their own."""
        return self.reviews_needed <= 1 or self.is_audit

    @property
    def claim_expires_at(self) -> datetime | None:
        return self.claimed_at + claim_ttl() if self.claimed_at else None

    def claim_live(self, now: datetime | None = None) -> bool:
        """Someone holds it now: claimed, and the claim has not expired."""
        return self.status == self.Status.CLAIMED and claim_is_live(self.claimed_at, now)

    def held_by_other(self, user, now: datetime | None = None) -> bool:
        """Someone other than `user` (None: a token without a person) holds a live claim."""
        return self.claim_live(now) and (user is None or self.claimed_by_id != user.pk)

    def holder_name(self) -> str:
        return self.claimed_by.get_username() if self.claimed_by else "someone"

    def shows_reviews_to(self, user) -> bool:
        """Blind review: others' reviews show once `user` has given theirs, the escalation
        is decided, or it waits for reconciliation and `user` may reconcile it. A reconciler
        reviews too, so before then they are as blind as anyone."""
        if self.is_resolved or (self.awaits_reconciler and may_reconcile(user)):
            return True
        return user is not None and self.reviews.filter(reviewer=user).exists()

    def review_places(self, user, now: datetime | None = None) -> "ReviewPlaces":
        """An escalation that needs several reviews, as `user` finds it: two queries."""
        live = self.review_claims.live(now).select_related("user")
        mine = next((c for c in live if c.user_id == user.pk), None)
        return ReviewPlaces(
            needed=self.reviews_needed,
            given=self.reviews.count(),
            holders=[c.user.get_username() for c in live if c.user_id != user.pk],
            mine=mine,
        )

    def standing(self, user, now: datetime | None = None, *, places: bool = True) -> "ClaimState":
        """Who holds it and what `user` may do with it now, as the pages describe it.

        `places=False` (the inbox, row by row): leave out the several-review
        places, which cost queries per row.
        """
        now = now or timezone.now()
        state = ClaimState(
            status=self.status,
            may_sign=may_sign_decisions(user),
            reviews_needed=self.reviews_needed,
            # Asked only where it matters: the inbox asks for every row.
            may_reconcile=self.awaits_reconciler and may_reconcile(user),
            past_deadline=self.fallback_due(now),
        )
        if places and state.several and user is not None and user.is_authenticated:
            state.reviewed_by_me = self.reviews.filter(reviewer=user).exists()
            found = self.review_places(user, now)
            state.holders, state.place_free = found.holders, found.free
            state.reviews_given = found.given
            state.mine = state.live = found.mine is not None
            if found.mine:
                state.claimed_at = found.mine.claimed_at
                state.expires_at = found.mine.claimed_at + claim_ttl()
            return state
        if state.several and hasattr(self, "reviews_given"):  # read by `with_reviews_of`
            state.reviews_given = self.reviews_given
            state.reviewed_by_me = self.reviewed_by_user
        if self.status == self.Status.CLAIMED and self.claimed_at:
            state.holder = self.holder_name()
            state.holder_id = self.claimed_by_id
            state.claimed_at = self.claimed_at
            state.expires_at = self.claim_expires_at
            state.live = self.claim_live(now)
            state.expired = not state.live
            state.mine = user is not None and self.claimed_by_id == user.pk
        return state

    def fallback_due(self, now: datetime | None = None) -> bool:
        """Its deadline has passed and its panel's fallback, not a person, decides it now.

        From `due_at` on (inclusive) no reviewer's verdict is signed and no claim is
        taken, whether or not the deadline worker has acted yet: which of the two
        wins is decided by the clock, under the escalation's row lock, once.
        """
        now = now or timezone.now()
        return (
            self.status in self.UNDECIDED
            and self.on_deadline in FALLBACK_ACTIONS
            and self.due_at is not None
            and self.due_at <= now
        )

    # --- transitions (the caller holds the row lock or decides the race) ------

    @classmethod
    def held_values(cls, user, now: datetime) -> dict:
        """The fields of a claim `user` takes (or is handed) at `now`."""
        return {"status": cls.Status.CLAIMED, "claimed_by": user, "claimed_at": now}

    @classmethod
    def unheld_values(cls) -> dict:
        """The fields of an escalation nobody holds any more, open to anyone."""
        return {"status": cls.Status.OPEN, "claimed_by": None, "claimed_at": None}

    def hold(self, user, now: datetime) -> None:
        self._save(self.held_values(user, now))

    def unhold(self) -> None:
        self._save(self.unheld_values())

    def to_reconcile(self) -> None:
        """The reviews disagree: nobody holds it; only a reconciler decides it now."""
        self._save(
            {
                "status": self.Status.RECONCILE,
                "reasons": [*self.reasons, self.Reason.REVIEWERS_DISAGREE.value],
                "claimed_by": None,
                "claimed_at": None,
            }
        )

    def resolve(self) -> None:
        """Decided: off the inbox, and out of search (only open escalations are searched)."""
        self._save({"status": self.Status.RESOLVED, "resolved_at": timezone.now(), "search": None})

    def _save(self, values: dict) -> None:
        for name, value in values.items():
            setattr(self, name, value)
        self.save(update_fields=list(values))


# Open, claimed and reconcile: not yet decided (the inbox lists them).
Escalation.UNDECIDED = (
    Escalation.Status.OPEN,
    Escalation.Status.CLAIMED,
    Escalation.Status.RECONCILE,
)


@dataclass(frozen=True)
class ReviewPlaces:
    """An escalation that needs several reviews, as one reviewer finds it.

    Several people hold it at once, each through a place (`ReviewClaim`), up
    to the reviews still needed: a place is free while the others' live
    places and the reviews given leave room.
    """

    needed: int
    given: int
    holders: list[str]  # the others holding a live place, by username
    mine: object | None = None  # the reviewer's own live ReviewClaim, if any

    @property
    def free(self) -> bool:
        return len(self.holders) + self.given < self.needed


@dataclass
class ClaimState:
    """Who holds an escalation and what one user may do with it now (`Escalation.standing`)."""

    status: str
    holder: str | None = None
    holder_id: int | None = None
    claimed_at: datetime | None = None
    expires_at: datetime | None = None
    live: bool = False
    expired: bool = False
    mine: bool = False
    # Staff outside the reviewers group may read an escalation, not claim or sign it.
    may_sign: bool = False
    # Several reviews: each reviewer gives theirs, once, from a place of their own.
    reviews_needed: int = 1
    reviews_given: int = 0
    reviewed_by_me: bool = False
    may_reconcile: bool = False
    # Several reviews: who else holds a place now, and whether one is left.
    holders: list[str] = field(default_factory=list)
    place_free: bool = False
    # Its deadline passed and its fallback decides it: no one claims or decides it now.
    past_deadline: bool = False

    @property
    def resolved(self) -> bool:
        return self.status == Escalation.Status.RESOLVED

    @property
    def reconcile(self) -> bool:
        return self.status == Escalation.Status.RECONCILE

    @property
    def undecided(self) -> bool:
        """Still someone's to decide: neither decided nor withdrawn."""
        return self.status in Escalation.UNDECIDED

    @property
    def several(self) -> bool:
        return self.reviews_needed > 1

    @property
    def reviews_awaited(self) -> int:
        return max(self.reviews_needed - self.reviews_given, 0)

    @property
    def my_review_in(self) -> bool:
        """This user's review is in and nothing is left for them to give here."""
        return self.several and self.reviewed_by_me and self.undecided

    @property
    def claimable(self) -> bool:
        """Whether this user may (re)claim it now (several reviews: take a place)."""
        if self.reconcile or not self.undecided or self.past_deadline or not self.may_sign:
            return False
        if self.several:
            return not self.reviewed_by_me and not self.mine and self.place_free
        return not self.live or self.mine

    @property
    def can_decide(self) -> bool:
        """Whether this user may give their verdict now.

        On a reconcile, reconcilers who gave none of the disagreeing reviews.
        With several reviews, a reviewer who has not reviewed and holds a
        place or finds one free. With one, the holder of the live claim: the
        pages ask for a claim first (`escalation_review` also takes a verdict
        on an open escalation, from the API).
        """
        if self.past_deadline or not self.undecided:
            return False
        if self.reconcile:
            return self.may_reconcile and not self.reviewed_by_me
        if self.several:
            return self.may_sign and not self.reviewed_by_me and (self.mine or self.place_free)
        return self.live and self.mine


class AssignmentRule(models.Model):
    """Who a new escalation is assigned to, by its panel and/or one of its reasons.

    The first matching rule wins, most specific first (panel and reason, then
    panel, then reason); ties go to the oldest rule.
    """

    panel = models.ForeignKey(
        "review.Panel",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="assignment_rules",
        help_text="Empty: any panel.",
    )
    reason = models.CharField(
        max_length=20,
        blank=True,
        choices=Escalation.Reason.choices,
        help_text="Empty: any reason.",
    )
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    assigned_group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(panel__isnull=False) | ~Q(reason=""),
                name="assignment_rule_matches_something",
                violation_error_message="Choose a panel, a reason, or both.",
            ),
            models.CheckConstraint(
                condition=Q(assigned_user__isnull=False) | Q(assigned_group__isnull=False),
                name="assignment_rule_assigns_someone",
                violation_error_message="Choose a user, a group, or both.",
            ),
        ]

    def __str__(self) -> str:
        where = " / ".join(
            part for part in (self.panel and f"panel {self.panel}", self.reason) if part
        )
        who = " + ".join(str(x) for x in (self.assigned_user, self.assigned_group) if x is not None)
        return f"{where} → {who}"
