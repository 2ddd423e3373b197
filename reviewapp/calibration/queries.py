"""The figures of calibration, read from the day tables and labels in a fixed number of queries.

Shared by the API (GET /api/lenses/{name}/agreement), the dashboard and the
admin. A window is a pair of UTC dates, both included, of the human decisions.
"""

from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db.models import Count, Q, Sum

from reviewapp.core.calibration import CoErrors, HumanTable, LensAgreement, lens_agreement
from reviewapp.review.models import Lens

from .models import HumanLabel, LensAgreementDay, LensFloor, PairErrorDay

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
    fail on an approve), over the proposals both judged and a reviewer decided;
    summed from the pair's day rows.
    """
    rows = PairErrorDay.objects.filter(window.days_q())
    if panel_id is not None:
        rows = rows.filter(panel_id=panel_id)
    sums = (
        rows.values(
            "panel_id", "panel__name", "first_id", "first__name", "second_id", "second__name"
        )
        .annotate(
            n=Sum("items"), a=Sum("first_wrong"), b=Sum("second_wrong"), both=Sum("both_wrong")
        )
        .order_by("panel__name", "first__name", "second__name")
    )
    return [
        PairCoErrors(
            panel_id=r["panel_id"],
            panel=r["panel__name"],
            first_id=r["first_id"],
            first=r["first__name"],
            second_id=r["second_id"],
            second=r["second__name"],
            errors=CoErrors(r["n"], r["a"], r["b"], r["both"]),
        )
        for r in sums
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


def drifting_judges(judgements) -> list[LensFloor]:
    """Of a proposal's judgements, the lenses below their floor that judged it since drifting.

    One query, over the lenses of the judgements given (already loaded by the page).
    """
    when = {j.lens_id: j.created_at for j in judgements}
    if not when:
        return []
    floors = LensFloor.objects.filter(lens_id__in=when, drifting=True).select_related("lens")
    return [f for f in floors if f.drifted_at and when[f.lens_id] >= f.drifted_at]
