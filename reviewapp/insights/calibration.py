"""The lenses against the reviewers, for the dashboard: tables, charts and their drill-downs.

The figures come from reviewapp.calibration.queries in a fixed number of
queries; each number links to the proposal list filtered to exactly the
proposals behind it (reviewapp.calibration.drilldown).
"""

from datetime import date

from django.urls import reverse
from django.utils.http import urlencode

from reviewapp.calibration.queries import (
    AUDIT,
    ESCALATION,
    LensFigures,
    PairCoErrors,
    Window,
    lens_figures,
    pair_co_errors,
    panel_audits,
)
from reviewapp.core.calibration import (
    CO_ERROR_LIFT,
    CO_ERROR_MIN_BOTH,
    CO_ERROR_MIN_ITEMS,
    DEFAULT_FLOOR,
    DEFAULT_WINDOW,
    MIN_KAPPA_ITEMS,
    co_errors_reading,
    lens_standing,
)

from . import charts
from .charts import BarRow, Series

CO_ERROR_RULE = (
    f"A pair is flagged when, over at least {CO_ERROR_MIN_ITEMS} proposals both judged and a "
    f"reviewer decided, both were wrong on at least {CO_ERROR_MIN_BOTH} and at least "
    f"{CO_ERROR_LIFT:g} times as often as independent errors would be (the product of each "
    "lens's own error rate)."
)
KAPPA_RULE = (
    "Cohen's kappa between the lens's verdict and the reviewer's decision (approve = pass): "
    "1 is full agreement, 0 is what chance alone would give, below 0 is worse than chance "
    "(the lens and the reviewers disagree more often than if the lens guessed). Its 95 % "
    "interval is the range its true kappa most likely lies in, given how many decisions there "
    "are: a wide interval means too few decisions to say (Fleiss, Cohen & Everitt 1969). "
    f"— means undefined: fewer than {MIN_KAPPA_ITEMS} decisions, or every verdict and "
    "decision in one class."
)


def window_label(window: Window) -> str:
    """The window every figure of the page is over, named."""
    since, until = window.since, window.until
    if since and until:
        return f"decisions from {since:%Y-%m-%d} to {until:%Y-%m-%d}"
    if since:
        return f"decisions from {since:%Y-%m-%d} on"
    if until:
        return f"decisions up to {until:%Y-%m-%d}"
    return "all decisions to date"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _list(window: Window, **params) -> str:
    query = {
        "decided_from": window.since and window.since.isoformat(),
        "decided_to": window.until and window.until.isoformat(),
        **params,
    }
    return f"{reverse('proposal_list')}?{urlencode({k: v for k, v in query.items() if v})}"


def _lens_row(f: LensFigures, window: Window) -> dict:
    overall = f.overall
    kappa = overall.kappa
    standing = lens_standing(
        kappa,
        floor=f.floor.floor if f.floor else DEFAULT_FLOOR,
        drifting=f.drifting,
        rolling=f.floor.last_kappa if f.floor else None,
        window=f.floor.window if f.floor else DEFAULT_WINDOW,
    )

    def link(cell: str, kind: str | None = None) -> str:
        return _list(window, agreement_lens=f.lens_id, cell=cell, kind=kind)

    return {
        "lens_id": f.lens_id,
        "name": f.name,
        "n": overall.n,
        "escalations": f.escalations,
        "audits": f.audits,
        "agreement": _pct(overall.agreement),
        "kappa": _num(kappa.value),
        "kappa_ci": f"{kappa.low:.2f} to {kappa.high:.2f}" if kappa.value is not None else "",
        "kappa_reason": kappa.reason_text or "",
        "true_pass_rate": _pct(overall.true_pass_rate),
        "true_fail_rate": _pct(overall.true_fail_rate),
        "claims_marked": f.claims_marked,
        "claims_incorrect": _pct(f.claims_marked_incorrect),
        "claims_reason": f.claims_marked_incorrect_reason or "",
        "table": overall.table,
        "standing": standing,
        "drifting": f.drifting,
        "floor": f.floor,
        "links": {
            "n": link("labelled"),
            "escalations": link("labelled", ESCALATION),
            "audits": link("labelled", AUDIT),
            "agreed": link("agreed"),
            "approved": link("approved"),
            "rejected": link("rejected"),
            **{cell: link(cell) for cell in ("pass_approved", "fail_rejected")},
        },
    }


def _pair_row(p: PairCoErrors, window: Window) -> dict:
    e = p.errors
    return {
        "panel": p.panel,
        "first": p.first,
        "second": p.second,
        "items": e.items,
        "first_wrong": e.first_wrong,
        "first_rate": _pct(e.error_rate(e.first_wrong)),
        "second_wrong": e.second_wrong,
        "second_rate": _pct(e.error_rate(e.second_wrong)),
        "both_wrong": e.both_wrong,
        "both_rate": _pct(e.error_rate(e.both_wrong)),
        "reading": co_errors_reading(e),
        "expected_both": "—" if e.expected_both is None else f"{e.expected_both:.1f}",
        "lift": "—" if e.lift is None else f"{e.lift:.1f}×",
        "fail_together": e.fail_together,
        "link": _list(
            window, panel=p.panel_id, agreement_lens=p.first_id, agreement_lens2=p.second_id
        ),
    }


def _trend_chart(f: LensFigures) -> str:
    labels = [f"wk {week:%b %d}" for week, _ in f.weeks]
    return charts.line(
        chart_id=f"chart-lens-trend-{f.lens_id}",
        title=f"{f.name}: weekly agreement with reviewers",
        desc="Per week of decisions (Monday to Sunday, UTC), the share of proposals where "
        "the lens's verdict matched the reviewer's decision. Weeks without decisions are absent.",
        labels=labels,
        values=[a.agreement for _, a in f.weeks],
    )


def calibration(*, since: date | None, until: date | None, panel_id: int | None) -> dict:
    """Everything the dashboard shows of the lenses against the reviewers; four queries."""
    window = Window(since=since, until=until)
    figures = lens_figures(window)
    shown = [f for f in figures if f.overall.n or f.drifting]
    pairs = [_pair_row(p, window) for p in pair_co_errors(window, panel_id=panel_id)]
    audits = [a for a in panel_audits(window) if panel_id is None or a.panel_id == panel_id]
    return {
        "window": window,
        "window_label": window_label(window),
        "lenses": [_lens_row(f, window) for f in shown],
        "drifting": [f for f in figures if f.drifting],
        "pairs": pairs,
        "flagged_pairs": [p for p in pairs if p["fail_together"]],
        "audits": [
            {
                "panel": a.panel,
                "audits": a.audits,
                "overturned": a.overturned,
                "rate": _pct(a.overturned_rate),
                "links": {
                    "audits": _list(window, panel=a.panel_id, audited="all"),
                    "overturned": _list(window, panel=a.panel_id, audited="overturned"),
                },
            }
            for a in audits
        ],
        "co_error_rule": CO_ERROR_RULE,
        "kappa_rule": KAPPA_RULE,
        "chart": charts.bars(
            chart_id="chart-lens-kappa",
            title="Each lens's kappa with the reviewers",
            desc="Cohen's kappa between each lens's verdicts and the reviewers' decisions on "
            "the proposals it judged, from −1 to 1; the table gives the 95 % interval. "
            "Undefined values are no bar and shown as —.",
            rows=[
                BarRow(f.name, [f.overall.kappa.value], [_num(f.overall.kappa.value)])
                for f in shown
            ],
            series=[Series("kappa", "kappa", charts.BLUE)],
            domain=(-1.0, 1.0),
            fmt=lambda v: f"{v:g}",
            narrow=True,
        ),
        "trends": [(f.name, _trend_chart(f)) for f in shown],
    }
