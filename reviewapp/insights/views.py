"""The dashboard page: filters, charts and the tables beside them.

A fixed number of queries whatever the number of proposals (see queries.py).
With htmx the filter form fetches only the dashboard body (a template
partial) and pushes the URL; without JavaScript it is a plain GET form.
"""

from dataclasses import replace
from datetime import date, timedelta

from django import forms
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reviewapp.guarantee.queries import guarantee_figures
from reviewapp.review.models import DecisionAudit, Panel
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.proposal_sets import drilldown
from reviewapp.review.proposal_sets.scope import PROPOSAL_SETS, Scope

from . import calibration, charts, queries
from .agreement import PairAgreement
from .charts import BarRow, Series

# Beyond this many days the per-day charts show only the days with proposals.
MAX_FILLED_DAYS = 400

KAPPA_UNDEFINED = (
    "— means kappa is undefined: no shared items, or every verdict fell in one "
    "category, so chance agreement is 1 and there is nothing to correct for."
)


class DashboardFilters(forms.Form):
    panel = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    start = forms.DateField(required=False, label="From")
    end = forms.DateField(required=False, label="To")

    def __init__(self, data, *, panels):
        super().__init__(data)
        self.fields["panel"].choices = [("", "All panels")] + [(p.pk, p.name) for p in panels]

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("start"), cleaned.get("end")
        if start and end and start > end:
            self.add_error("end", "The end date is before the start date.")
        return cleaned

    def scope(self) -> Scope:
        """The filters as a scope; only called on a valid form."""
        data = self.cleaned_data
        return Scope(panel_id=data.get("panel"), start=data.get("start"), end=data.get("end"))


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _kappa(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def human_duration(value: timedelta | None) -> str:
    if value is None:
        return "—"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def _filled_days(days: list[queries.Day]) -> list[queries.Day]:
    """Every calendar day from the first to the last, zeros where nothing was submitted."""
    if not days:
        return []
    first, last = days[0].day, days[-1].day
    if (last - first).days >= MAX_FILLED_DAYS:
        return days
    by_day = {d.day: d for d in days}
    out = []
    day = first
    while day <= last:
        out.append(by_day.get(day) or queries.Day(day, 0, 0, 0, 0, 0, 0, 0))
        day += timedelta(days=1)
    return out


OUTCOME_COLORS = {
    "approved": charts.GREEN,
    "rejected": charts.VERMILLION,
    "escalated_open": charts.PURPLE,
    "pending": charts.SKY,
}


def _day_label(day: date) -> str:
    return day.strftime("%b %d")


def _kappa_chart(*, chart_id: str, title: str, desc: str, rows: list[tuple[str, float | None]]):
    """Kappa values on a fixed −1…1 axis; an undefined kappa is no bar and shows as —."""
    return charts.bars(
        chart_id=chart_id,
        title=title,
        desc=desc,
        rows=[BarRow(label, [kappa], [_kappa(kappa)]) for label, kappa in rows],
        series=[Series("kappa", "kappa", charts.BLUE)],
        domain=(-1.0, 1.0),
        fmt=lambda v: f"{v:g}",
    )


def _charts(data: queries.Dashboard) -> dict:
    """Every chart of the dashboard, by section: outcomes over time, time to decision,
    lenses, agreement, people."""
    return {
        **_outcome_charts(data),
        "medians": _medians_chart(data),
        **_lens_charts(data),
        **_agreement_charts(data),
        "workload": _workload_chart(data),
    }


def _outcome_charts(data: queries.Dashboard) -> dict:
    days = _filled_days(data.days)
    labels = [_day_label(d.day) for d in days]
    outcome_series = [Series(k, label, OUTCOME_COLORS[k]) for k, label in queries.OUTCOME_SERIES]
    return {
        "per_day": charts.stacked_columns(
            chart_id="chart-per-day",
            title="Proposals per day by outcome",
            desc="Stacked columns, one per submission day: approved, rejected, "
            "escalated and still open, pending. The table beside lists the same counts.",
            labels=labels,
            series=outcome_series,
            rows=[{k: getattr(d, k) for k, _ in queries.OUTCOME_SERIES} for d in days],
        ),
        "escalation_rate": charts.line(
            chart_id="chart-escalation-rate",
            title="Escalation rate over time",
            desc="Of the proposals submitted each day that the panels have judged, the share "
            "sent to a human (open or since decided). Days with nothing judged have no point.",
            labels=labels,
            values=[d.escalation_rate for d in days],
            color=charts.PURPLE,
        ),
    }


def _medians_chart(data: queries.Dashboard):
    """Machine against human time to decision, in the unit the longer median reads best in."""
    scale = max((m.median.total_seconds() for m in data.medians if m.median), default=0)
    unit, divisor = ("hours", 3600) if scale >= 3 * 3600 else ("minutes", 60)
    if scale < 180:
        unit, divisor = "seconds", 1
    median_values = [m.median.total_seconds() / divisor if m.median else None for m in data.medians]
    return charts.bars(
        chart_id="chart-medians",
        title="Median time from submission to decision",
        desc=f"Median {unit} from submission to the signed decision, machine "
        "(system decisions) against human (reviewer decisions).",
        rows=[
            BarRow(m.label, [v], [human_duration(m.median)])
            for m, v in zip(data.medians, median_values, strict=True)
        ],
        series=[Series("median", f"median ({unit})", charts.BLUE)],
        domain=(0.0, charts.nice_max(max((v or 0 for v in median_values), default=0))),
        fmt=lambda v: f"{v:g} {unit[0] if unit != 'minutes' else 'min'}",
    )


def _lens_charts(data: queries.Dashboard) -> dict:
    failures_max = max((lens.failures for lens in data.lenses), default=0)
    return {
        "lens_rates": charts.bars(
            chart_id="chart-lens-rates",
            title="Pass rate and unresolved-cite rate per lens",
            desc="For each lens, the share of its judgements that passed and the share of "
            "its cited claims that did not resolve to the proposal (dropped ones included).",
            rows=[
                BarRow(lens.name, [lens.pass_rate, lens.unresolved_rate]) for lens in data.lenses
            ],
            series=[
                Series("pass_rate", "Pass rate", charts.GREEN),
                Series("unresolved_rate", "Unresolved cites", charts.VERMILLION),
            ],
        ),
        "lens_failures": charts.bars(
            chart_id="chart-lens-failures",
            title="Lens failures per lens",
            desc="How many times each lens failed after its retries and gave no judgement.",
            rows=[BarRow(lens.name, [lens.failures]) for lens in data.lenses],
            series=[Series("failures", "Failures", charts.ORANGE)],
            domain=(0.0, charts.nice_max(failures_max)),
            fmt=charts.integer,
        ),
    }


def _agreement_charts(data: queries.Dashboard) -> dict:
    larger = data.larger_side
    return {
        "cohen": _kappa_chart(
            chart_id="chart-cohen",
            title="Cohen's kappa between pairs of lenses",
            desc="Agreement between two lenses beyond chance, from −1 to 1, over the "
            "proposals both judged. Undefined values are drawn as no bar and shown as —.",
            rows=[(f"{p.panel}: {p.first} × {p.second}", p.kappa) for p in data.pairs],
        ),
        "fleiss": _kappa_chart(
            chart_id="chart-fleiss",
            title="Fleiss' kappa per panel",
            desc="Agreement among all of a panel's lenses beyond chance, from −1 to 1, over "
            "the proposals every lens judged. Undefined values are shown as —.",
            rows=[(f"{p.panel} ({p.raters} lenses)", p.kappa) for p in data.panels],
        ),
        "larger_side": charts.bars(
            chart_id="chart-larger-side",
            title="Human adjudication against the larger side on no-quorum proposals",
            desc="Of the no-quorum proposals a reviewer decided, how many decisions matched "
            "the side with more lens votes, how many did not, and how many were ties. "
            "Information only; never used to decide.",
            rows=[
                BarRow("Agreed", [larger.agreed]),
                BarRow("Disagreed", [larger.disagreed]),
                BarRow("Tie (excluded)", [larger.ties]),
            ]
            if larger.decided
            else [],
            series=[Series("count", "Decisions", charts.BLUE)],
            domain=(0.0, charts.nice_max(larger.decided)),
            fmt=charts.integer,
        ),
    }


def _workload_chart(data: queries.Dashboard):
    workload_max = max((w.total for w in data.workload), default=0)
    return charts.bars(
        chart_id="chart-workload",
        title="Reviewer workload",
        desc="Escalations per reviewer: open (nobody holds them), claimed, resolved.",
        rows=[
            BarRow(w.reviewer or "Unclaimed", [w.open, w.claimed, w.resolved])
            for w in data.workload
        ],
        series=[
            Series("open", "Open", charts.SKY),
            Series("claimed", "Claimed", charts.ORANGE),
            Series("resolved", "Resolved", charts.GREEN),
        ],
        domain=(0.0, charts.nice_max(workload_max)),
        fmt=charts.integer,
        stacked=True,
    )


def list_url(scope: Scope, *, view: str = "proposal_list", **params) -> str:
    """The list (of proposals, or decisions) showing exactly what a figure counts, in `scope`."""
    query = {
        "panel": scope.panel_id,
        "start": scope.start and scope.start.isoformat(),
        "end": scope.end and scope.end.isoformat(),
        **params,
    }
    return f"{reverse(view)}?{urlencode({k: v for k, v in query.items() if v})}"


def _day_links(scope: Scope, day: date) -> dict:
    on_day = replace(scope, start=day, end=day)
    return {
        "total": list_url(on_day),
        **{key: list_url(on_day, set=key) for key in PROPOSAL_SETS},
    }


def _total_links(scope: Scope) -> dict:
    return {"total": list_url(scope), **{k: list_url(scope, set=k) for k in PROPOSAL_SETS}}


def _pair_links(scope: Scope, pair: PairAgreement) -> dict:
    """The proposals both lenses judged, and those of each cell of their table."""
    on_panel = replace(scope, panel_id=pair.panel_id)
    both = {"lens": pair.first_id, "lens2": pair.second_id}
    return {
        "items": list_url(on_panel, **both),
        **{
            f"{first}_{second}": list_url(on_panel, **both, verdict=first, verdict2=second)
            for first in ("pass", "fail")
            for second in ("pass", "fail")
        },
    }


def _tables(data: queries.Dashboard) -> dict:
    """The tables beside the charts, a row each, every count a link to its proposals."""
    scope = data.scope
    return {
        "days": [_day_row(scope, d) for d in data.days],
        "medians": [_median_row(scope, m) for m in data.medians],
        "lenses": [_lens_row(scope, lens) for lens in data.lenses],
        "pairs": [_pair_row(scope, p) for p in data.pairs],
        "panels": [_panel_row(scope, p) for p in data.panels],
        "larger_side": _larger_side_table(scope, data.larger_side),
        "workload": [_workload_row(scope, w) for w in data.workload],
    }


def _day_row(scope: Scope, d) -> dict:
    return {
        "day": d.day,
        **{k: getattr(d, k) for k, _ in queries.OUTCOME_SERIES},
        "total": d.total,
        "routed": d.routed,
        "escalated": d.escalated,
        "escalation_rate": _pct(d.escalation_rate),
        "links": _day_links(scope, d.day),
    }


def _median_row(scope: Scope, m) -> dict:
    return {
        "label": m.label,
        "basis": m.basis,
        "decisions": m.decisions,
        "link": list_url(scope, view="decision_list", basis=m.basis),
        "median": human_duration(m.median),
        "seconds": m.median.total_seconds() if m.median else None,
    }


def _lens_row(scope: Scope, lens) -> dict:
    return {
        "name": lens.name,
        "judgements": lens.judgements,
        "passed": lens.passed,
        "pass_rate": _pct(lens.pass_rate),
        "claims": lens.claims,
        "unresolved": lens.unresolved,
        "unresolved_rate": _pct(lens.unresolved_rate),
        "failures": lens.failures,
        "links": {
            "judgements": list_url(scope, lens=lens.lens_id),
            # Claims link to the proposals they are in.
            "claims": list_url(scope, lens=lens.lens_id, cites="any"),
            "unresolved": list_url(scope, lens=lens.lens_id, cites="unresolved"),
            "passed": list_url(scope, lens=lens.lens_id, verdict="pass"),
            "failures": list_url(scope, lens=lens.lens_id, lens_failed=1),
        },
    }


def _pair_row(scope: Scope, p) -> dict:
    return {
        "links": _pair_links(scope, p),
        "panel": p.panel,
        "first": p.first,
        "second": p.second,
        "items": p.items,
        "table": p.table,
        "kappa": p.kappa,
        "kappa_text": _kappa(p.kappa),
    }


def _panel_row(scope: Scope, p) -> dict:
    return {
        "link": list_url(replace(scope, panel_id=p.panel_id), raters=p.raters),
        "panel": p.panel,
        "items": p.items,
        "raters": p.raters,
        "kappa": p.kappa,
        "kappa_text": _kappa(p.kappa),
    }


def _larger_side_table(scope: Scope, larger) -> dict:
    return {
        "decided": larger.decided,
        "agreed": larger.agreed,
        "disagreed": larger.disagreed,
        "ties": larger.ties,
        "compared": larger.compared,
        "rate": larger.agreement_rate,
        "rate_text": _pct(larger.agreement_rate),
        "links": {key: list_url(scope, larger_side=key) for key in drilldown.LARGER_SIDE},
    }


def _workload_row(scope: Scope, w) -> dict:
    return {
        "reviewer": w.reviewer,
        **{column: getattr(w, column) for column in drilldown.WORKLOAD_COLUMNS},
        # Absent, the reviewer is "nobody" (UNCLAIMED).
        "links": {
            column: list_url(scope, workload=column, reviewer=w.reviewer)
            for column in drilldown.WORKLOAD_COLUMNS
        },
    }


DISPUTED_SHOWN = 10


def _audits(scope: Scope) -> dict:
    """Audits of automatic decisions in scope: how many, how many disputed, the latest disputed.

    One aggregate query; the list is read only when something is disputed.
    """
    audits = DecisionAudit.objects.filter(scope.q("decision__proposal__"))
    totals = audits.aggregate(done=Count("id"), disputed=Count("id", filter=Q(agrees=False)))
    disputed = []
    if totals["disputed"]:
        disputed = list(
            audits.filter(agrees=False)
            .select_related("decision")
            .only(
                "outcome",
                "decided_by_name",
                "created_at",
                "decision__outcome",
                "decision__proposal_id",
            )
            .order_by("-created_at")[:DISPUTED_SHOWN]
        )
    return {**totals, "latest_disputed": disputed}


def _dashboard_template(request) -> str:
    # The filters swap the body alone (and push the URL); a page restored from the
    # server after it fell out of htmx's history cache is the whole page.
    if request.htmx and not request.htmx.history_restore_request:
        return "insights/dashboard.html#body"
    return "insights/dashboard.html"


@require_GET
# The same URL answers with a fragment or the whole page: caches must keep them apart.
@vary_on_headers("HX-Request")
@reviewer_required
def dashboard(request):
    # With each panel's guarantee settings, in the same query: the section lists them.
    panels = list(
        Panel.objects.select_related("guarantee")
        .only("id", "name", "guarantee__target", "guarantee__confidence")
        .order_by("name")
    )
    form = DashboardFilters(request.GET or None, panels=panels)
    if request.GET and not form.is_valid():
        # Figures for some other range than the one asked for would be read as
        # the answer: a filter that cannot be applied is an error, not ignored.
        return render(
            request,
            _dashboard_template(request),
            {"form": form, "panels": panels, "scope": Scope(), "invalid": True},
            status=400,
        )
    scope = form.scope() if request.GET else Scope()
    data = queries.dashboard(scope)
    totals = data.totals()
    export_query = urlencode(
        {
            k: v
            for k, v in (
                ("panel", scope.panel_id),
                ("start", scope.start and scope.start.isoformat()),
                ("end", scope.end and scope.end.isoformat()),
            )
            if v
        }
    )
    context = {
        "form": form,
        "panels": panels,
        "scope": scope,
        "scope_panel": next((p for p in panels if p.pk == scope.panel_id), None),
        "guaranteed_panels": [
            p for p in panels if getattr(p, "guarantee", None) and p.guarantee.enabled
        ],
        "insights": data,
        "totals": totals,
        "total_links": _total_links(scope),
        "escalation_rate": _pct(totals["escalation_rate"]),
        "escalation_rate_definition": queries.ESCALATION_RATE_DEFINITION,
        "charts": _charts(data),
        "tables": _tables(data),
        "outcome_series": queries.OUTCOME_SERIES,
        "kappa_undefined": KAPPA_UNDEFINED,
        # Decided in the range (the rest of the dashboard counts by submission date).
        "calibration": calibration.calibration(
            since=scope.start, until=scope.end, panel_id=scope.panel_id
        ),
        "export_csv": reverse("export_proposals_csv")
        + (f"?{export_query}" if export_query else ""),
        "export_jsonl": reverse("export_proposals_jsonl")
        + (f"?{export_query}" if export_query else ""),
    }
    context["audits"] = _audits(scope)
    return render(request, _dashboard_template(request), context)


class WindowForm(forms.Form):
    since = forms.DateField(required=False, label="Decided from")
    until = forms.DateField(required=False, label="To")

    def clean(self):
        cleaned = super().clean()
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            self.add_error("until", "The end date is before the start date.")
        return cleaned


@require_GET
@reviewer_required
def lens_agreement(request):
    """Each lens against the reviewers over a window of decisions; a fixed number of queries."""
    form = WindowForm(request.GET)
    if not form.is_valid():
        # Figures for another window than the one asked would be read as the answer.
        return render(request, "insights/lens_agreement.html", {"form": form}, status=400)
    data = calibration.calibration(
        since=form.cleaned_data["since"], until=form.cleaned_data["until"], panel_id=None
    )
    return render(request, "insights/lens_agreement.html", {"form": form, "calibration": data})


class GuaranteeFilter(forms.Form):
    panel = forms.IntegerField(min_value=1, max_value=2**63 - 1)


@require_GET
# The same URL answers with a fragment or the whole page: caches must keep them apart.
@vary_on_headers("HX-Request")
@reviewer_required
def panel_guarantee(request):
    """A panel's guarantee: its promise and each vote pattern's evidence (the dashboard
    loads it with htmx as a fragment; without, it is a page of its own)."""
    form = GuaranteeFilter(request.GET)
    if not form.is_valid():
        return render(request, "insights/guarantee.html", {"form": form}, status=400)
    panel = get_object_or_404(Panel, pk=form.cleaned_data["panel"])
    # The dashboard loads the section alone; a page restored from the server after it
    # fell out of htmx's history cache is the whole page.
    fragment = request.htmx and not request.htmx.history_restore_request
    template = "insights/guarantee.html#body" if fragment else "insights/guarantee.html"
    return render(
        request, template, {"form": form, "panel": panel, "figures": guarantee_figures(panel)}
    )
