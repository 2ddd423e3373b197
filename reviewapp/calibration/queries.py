"""The figures of calibration, read from the day tables and labels in a fixed number of queries.

Shared by the API (GET /api/lenses/{name}/agreement), the dashboard and the
admin. A window is a pair of UTC dates, both included, of the human decisions.
"""

from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db import connection
from django.db.models import Count, Q

from reviewapp.core.calibration import CoErrors, HumanTable, LensAgreement, lens_agreement
from reviewapp.review.models import Lens, Panel

from .models import HumanLabel, LensAgreementDay, LensFloor, LensLabel

ESCALATION, AUDIT = "escalation", "audit"


@dataclass(frozen=True)
class Window:
    since: date | None = None
    until: date | None = None

    def days_q(self, prefix: str = "day") -> Q:
        q = Q()
        if self.since:
            q &= Q(**{f"{prefix}__gte": self.since})
        if self.until:
            q &= Q(**{f"{prefix}__lte": self.until})
        return q

    def as_dict(self) -> dict:
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
        }


@dataclass
class LensFigures:
    lens_id: int
    name: str
    by_kind: dict[str, HumanTable]
    weeks: list[tuple[date, LensAgreement]]
    floor: LensFloor | None

    @property
    def overall(self) -> LensAgreement:
        return lens_agreement(self.by_kind[ESCALATION] + self.by_kind[AUDIT])

    @property
    def escalations(self) -> int:
        return self.by_kind[ESCALATION].n

    @property
    def audits(self) -> int:
        return self.by_kind[AUDIT].n

    @property
    def drifting(self) -> bool:
        return bool(self.floor and self.floor.drifting)


def _week(day: date) -> date:
    return day - timedelta(days=day.weekday())  # the Monday starting its ISO week


def lens_figures(window: Window, *, lens: Lens | None = None) -> list[LensFigures]:
    """Per lens: its tables by kind over the window and its weekly trend. Two queries."""
    lenses = (
        Lens.objects.select_related("agreement_floor")
        .only(
            "id",
            "name",
            "agreement_floor__floor",
            "agreement_floor__window",
            "agreement_floor__drifting",
            "agreement_floor__drifted_at",
            "agreement_floor__last_kappa",
        )
        .order_by("name")
    )
    days = LensAgreementDay.objects.filter(window.days_q())
    if lens is not None:
        lenses = lenses.filter(pk=lens.pk)
        days = days.filter(lens_id=lens.pk)
    by_lens: dict[int, dict] = {}
    for lens_id, day, audit, *cells in days.values_list(
        "lens_id",
        "day",
        "audit",
        "pass_approved",
        "pass_rejected",
        "fail_approved",
        "fail_rejected",
    ):
        table = HumanTable(*cells)
        entry = by_lens.setdefault(lens_id, {"kinds": {}, "weeks": {}})
        kind = AUDIT if audit else ESCALATION
        entry["kinds"][kind] = entry["kinds"].get(kind, HumanTable()) + table
        week = _week(day)
        entry["weeks"][week] = entry["weeks"].get(week, HumanTable()) + table
    out = []
    for row in lenses:
        entry = by_lens.get(row.pk, {"kinds": {}, "weeks": {}})
        out.append(
            LensFigures(
                lens_id=row.pk,
                name=row.name,
                by_kind={k: entry["kinds"].get(k, HumanTable()) for k in (ESCALATION, AUDIT)},
                weeks=[(w, lens_agreement(t)) for w, t in sorted(entry["weeks"].items())],
                floor=getattr(row, "agreement_floor", None),
            )
        )
    return out


@dataclass
class PanelAudits:
    panel_id: int
    panel: str
    audits: int
    overturned: int

    @property
    def overturned_rate(self) -> float | None:
        return self.overturned / self.audits if self.audits else None


# An audited automatic decision the reviewer decided the other way.
OVERTURNED_Q = Q(machine_approved=True, approved=False) | Q(machine_approved=False, approved=True)


def panel_audits(window: Window) -> list[PanelAudits]:
    """Per panel: audited automatic decisions, and how many the reviewer overturned. One query."""
    labels = HumanLabel.objects.filter(window.days_q("decided_at__date"), audit=True)
    rows = (
        labels.values("panel_id", "panel__name")
        .annotate(
            audits=Count("pk"),
            overturned=Count("pk", filter=OVERTURNED_Q),
        )
        .order_by("panel__name")
    )
    return [
        PanelAudits(r["panel_id"], r["panel__name"], r["audits"], r["overturned"]) for r in rows
    ]


@dataclass
class PairCoErrors:
    panel_id: int
    panel: str
    first_id: int
    first: str
    second_id: int
    second: str
    errors: CoErrors = field(repr=False)

    @property
    def fail_together(self) -> bool:
        return self.errors.fail_together


def pair_co_errors(window: Window, *, panel_id: int | None = None) -> list[PairCoErrors]:
    """Per pair of lenses in a panel: both wrong on one proposal, against independence. One query.

    "Wrong" is the lens's verdict against the human label (pass on a reject,
    fail on an approve), over the proposals both judged and a reviewer decided.
    """
    q = connection.ops.quote_name
    label, lens, panel = (
        q(LensLabel._meta.db_table),
        q(Lens._meta.db_table),
        q(Panel._meta.db_table),
    )
    where, params = ["1 = 1"], []
    if window.since:
        where.append("a.decided_at >= %s")
        params.append(window.since)
    if window.until:
        where.append("a.decided_at < %s")
        params.append(window.until + timedelta(days=1))
    if panel_id is not None:
        where.append("a.panel_id = %s")
        params.append(panel_id)
    wrong_a, wrong_b = "(a.passed <> a.approved)", "(b.passed <> b.approved)"
    sql = f"""
        SELECT a.panel_id, pn.name, a.lens_id, la.name, b.lens_id, lb.name, COUNT(*),
               SUM(CASE WHEN {wrong_a} THEN 1 ELSE 0 END),
               SUM(CASE WHEN {wrong_b} THEN 1 ELSE 0 END),
               SUM(CASE WHEN {wrong_a} AND {wrong_b} THEN 1 ELSE 0 END)
        FROM {label} a
        JOIN {label} b ON b.proposal_id = a.proposal_id AND b.lens_id > a.lens_id
        JOIN {panel} pn ON pn.id = a.panel_id
        JOIN {lens} la ON la.id = a.lens_id
        JOIN {lens} lb ON lb.id = b.lens_id
        WHERE {" AND ".join(where)}
        GROUP BY a.panel_id, pn.name, a.lens_id, la.name, b.lens_id, lb.name
        ORDER BY pn.name, la.name, lb.name
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        PairCoErrors(
            panel_id=r[0],
            panel=r[1],
            first_id=r[2],
            first=r[3],
            second_id=r[4],
            second=r[5],
            errors=CoErrors(int(r[6]), int(r[7]), int(r[8]), int(r[9])),
        )
        for r in rows
    ]


def agreement_out(figures: LensFigures, window: Window) -> dict:
    """A lens's agreement with the reviewers as a machine reads it (the API's shape)."""
    overall = figures.overall
    kappa = overall.kappa
    return {
        "lens": figures.name,
        "n": overall.n,
        "n_by_kind": {ESCALATION: figures.escalations, AUDIT: figures.audits},
        "agreement": overall.agreement,
        "kappa": kappa.value,
        "kappa_ci": [kappa.low, kappa.high] if kappa.value is not None else None,
        "kappa_undefined_reason": kappa.reason_text,
        "true_pass_rate": overall.true_pass_rate,
        "true_fail_rate": overall.true_fail_rate,
        # Claim marks are not recorded yet: null until they are.
        "claims_marked_incorrect": None,
        "drifting": figures.drifting,
        "window": window.as_dict(),
    }
