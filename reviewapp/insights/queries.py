"""The dashboard's numbers, aggregated in the database.

Every function here runs a fixed number of queries whatever the number of
proposals: counts are grouped and summed by the database, medians are read
with ORDER BY + OFFSET, the agreement tables are built by a self-join on
judgements (agreement.py). Nothing iterates over proposals in Python.

All figures cover the proposals selected by a `Scope` (panel, submission
date range); a judgement, claim, lens failure, decision or escalation counts
when its proposal is in scope.
"""

from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
)
from django.db.models.functions import TruncDate

from reviewapp.review.models import Claim, Decision, Escalation, Judgement, LensFailure
from reviewapp.review.proposal_sets.drilldown import (
    escalation_reviewer,
    workload_columns,
)
from reviewapp.review.proposal_sets.scope import PROPOSAL_SETS, Scope

from .agreement import (
    LargerSide,
    PairAgreement,
    PanelAgreement,
    human_vs_larger_side,
    pairwise_agreement,
    panel_agreement,
)

PASS = Judgement.Verdict.PASS


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# --- proposals per day ------------------------------------------------------


@dataclass
class Day:
    day: date
    approved: int
    rejected: int
    escalated_open: int
    pending: int
    total: int
    routed: int  # proposals the panel has judged and routed: every one not pending
    escalated: int  # routed proposals sent to a human: still open, or decided by a reviewer since

    @property
    def escalation_rate(self) -> float | None:
        return _rate(self.escalated, self.routed)


# The escalation rate, in the words the dashboard shows beside it.
ESCALATION_RATE_DEFINITION = (
    "Escalation rate: of the proposals the panels have judged (every one not pending), "
    "the share sent to a human, whether the escalation is still open or a reviewer has "
    "decided it since."
)


OUTCOME_SERIES = (
    ("approved", "Approved"),
    ("rejected", "Rejected"),
    ("escalated_open", "Escalated, open"),
    ("pending", "Pending"),
)


def proposals_per_day(scope: Scope) -> list[Day]:
    """One query: per submission day, proposals by where they stand now."""
    rows = (
        scope.proposals()
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            approved=Count("pk", filter=PROPOSAL_SETS["approved"]()),
            rejected=Count("pk", filter=PROPOSAL_SETS["rejected"]()),
            escalated_open=Count("pk", filter=PROPOSAL_SETS["escalated_open"]()),
            pending=Count("pk", filter=PROPOSAL_SETS["pending"]()),
            total=Count("pk"),
            routed=Count("pk", filter=PROPOSAL_SETS["judged"]()),
            escalated=Count("pk", filter=PROPOSAL_SETS["sent_to_human"]()),
        )
        .order_by("day")
    )
    return [Day(**row) for row in rows]


# --- time to decision -------------------------------------------------------


@dataclass
class Median:
    basis: str
    label: str
    decisions: int
    median: timedelta | None


BASIS_LABELS = {
    Decision.Basis.SYSTEM: "Machine (system decision)",
    Decision.Basis.REVIEWER: "Human (reviewer decision)",
}


def decision_medians(scope: Scope) -> list[Median]:
    """Median time from submission to decision per basis, in three queries.

    One aggregate counts the decisions of each basis; then, per basis, the
    middle one or two durations are read with ORDER BY duration OFFSET n/2 —
    the same SQL on SQLite and PostgreSQL, and no row but the middle ones
    leaves the database.
    """
    decisions = Decision.objects.filter(scope.q("proposal__"))
    counts = decisions.aggregate(
        **{basis: Count("pk", filter=Q(basis=basis)) for basis in BASIS_LABELS}
    )
    duration = ExpressionWrapper(
        F("created_at") - F("proposal__created_at"), output_field=DurationField()
    )
    medians = []
    for basis, label in BASIS_LABELS.items():
        n = counts[basis]
        # The middle one (odd n) or two (even n). With n = 0 the slice [0:1]
        # still runs and finds nothing, so the query count never varies.
        low, high = ((n - 1) // 2 if n else 0), n // 2 + 1
        middle = list(
            decisions.filter(basis=basis)
            .annotate(duration=duration)
            .order_by("duration", "pk")
            .values_list("duration", flat=True)[low:high]
        )
        median = sum(middle, timedelta()) / len(middle) if middle else None
        medians.append(Median(basis=basis, label=label, decisions=n, median=median))
    return medians


# --- lenses -----------------------------------------------------------------


@dataclass
class LensRow:
    lens_id: int
    name: str
    judgements: int = 0
    passed: int = 0
    claims: int = 0
    unresolved: int = 0
    failures: int = 0

    @property
    def pass_rate(self) -> float | None:
        return _rate(self.passed, self.judgements)

    @property
    def unresolved_rate(self) -> float | None:
        return _rate(self.unresolved, self.claims)


def lens_stats(scope: Scope) -> list[LensRow]:
    """Per lens: pass rate, unresolved-cite rate (dropped cites included), failures.

    Three queries, one per table, merged by lens.
    """
    rows: dict[int, LensRow] = {}

    def row(lens_id: int, name: str) -> LensRow:
        return rows.setdefault(lens_id, LensRow(lens_id=lens_id, name=name))

    for r in (
        Judgement.objects.filter(scope.q("proposal__"))
        .values("lens_id", "lens__name")
        .annotate(n=Count("pk"), passed=Count("pk", filter=Q(verdict=PASS)))
        .order_by()
    ):
        entry = row(r["lens_id"], r["lens__name"])
        entry.judgements, entry.passed = r["n"], r["passed"]
    for r in (
        Claim.objects.filter(scope.q("judgement__proposal__"))
        .values("judgement__lens_id", "judgement__lens__name")
        .annotate(
            n=Count("pk"),
            unresolved=Count("pk", filter=Q(anchor_kind=Claim.AnchorKind.UNRESOLVED)),
        )
        .order_by()
    ):
        entry = row(r["judgement__lens_id"], r["judgement__lens__name"])
        entry.claims, entry.unresolved = r["n"], r["unresolved"]
    for r in (
        LensFailure.objects.filter(scope.q("proposal__"))
        .values("lens_id", "lens__name")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        row(r["lens_id"], r["lens__name"]).failures = r["n"]
    return sorted(rows.values(), key=lambda r: r.name)


# --- reviewer workload ------------------------------------------------------


@dataclass
class Workload:
    reviewer: str  # UNCLAIMED for escalations nobody holds
    open: int
    claimed: int
    expired: int  # claimed, but the claim is older than the claim TTL
    resolved: int

    @property
    def total(self) -> int:
        return self.open + self.claimed + self.resolved


def reviewer_workload(scope: Scope) -> list[Workload]:
    """One query: escalations by who holds them (open ones by nobody) or who resolved them."""
    rows = (
        Escalation.objects.filter(scope.q("proposal__"))
        .annotate(reviewer=escalation_reviewer())
        .values("reviewer")
        .annotate(**{column: Count("pk", filter=q) for column, q in workload_columns().items()})
        .order_by("reviewer")
    )
    return [Workload(**row) for row in rows]


# --- everything -------------------------------------------------------------


@dataclass
class Dashboard:
    scope: Scope
    days: list[Day] = field(default_factory=list)
    medians: list[Median] = field(default_factory=list)
    lenses: list[LensRow] = field(default_factory=list)
    pairs: list[PairAgreement] = field(default_factory=list)
    panels: list[PanelAgreement] = field(default_factory=list)
    larger_side: LargerSide | None = None
    workload: list[Workload] = field(default_factory=list)

    def totals(self) -> dict:
        keys = ("approved", "rejected", "escalated_open", "pending", "total", "routed", "escalated")
        sums = {k: sum(getattr(d, k) for d in self.days) for k in keys}
        sums["escalation_rate"] = _rate(sums["escalated"], sums["routed"])
        return sums


def dashboard(scope: Scope) -> Dashboard:
    return Dashboard(
        scope=scope,
        days=proposals_per_day(scope),
        medians=decision_medians(scope),
        lenses=lens_stats(scope),
        pairs=pairwise_agreement(scope),
        panels=panel_agreement(scope),
        larger_side=human_vs_larger_side(scope),
        workload=reviewer_workload(scope),
    )
