"""Review pages: server-rendered, htmx for the fragments that refresh themselves.

Every list page runs a fixed number of queries whatever the number of rows:
relations are joined (`select_related`), large text columns deferred, counts
taken in one aggregate.
"""

from datetime import date

from django.conf import settings
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reviewapp.calibration import drilldown as calibration_drilldown
from reviewapp.review.in_ledger.status import decision_ledger_status
from reviewapp.review.models import Decision, Escalation, Lens, Panel, Proposal
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.proposal_sets import drilldown
from reviewapp.review.proposal_sets.scope import PROPOSAL_SETS, Scope, lens_q
from reviewapp.review.search_queries import proposal_text_q, search_typed
from reviewapp.review.services.decisions import decision_check

from . import inbox as inbox_queries
from .inbox import inbox_audits, inbox_counts, inbox_filters, inbox_page_rows
from .presenters import (
    REASON_LABELS,
    guarantee_line,
    reason_badges,
    tally_outcome,
    tally_text,
)

INBOX_PAGE_SIZE = 25
# Audits shown below the default list; the "Audit" filter lists them all.
INBOX_AUDITS_SHOWN = 10
LIST_PAGE_SIZE = 50
# Columns a list never shows; a 1 MB proposal must not be read to list its title.
PROPOSAL_HEAVY = ("content", "thought_process", "panel_snapshot", "metadata")


# Ids are BIGINT primary keys: anything outside that range matches nothing.
_ID_RANGE = range(1, 2**63)


def _int_param(request, name: str) -> int | None:
    try:
        value = int(request.GET.get(name, ""))
    except ValueError:
        return None
    return value if value in _ID_RANGE else None


def _choice_param(request, name: str, choices) -> str:
    """The query parameter if it is one of `choices`, else "" (no filter)."""
    value = request.GET.get(name, "")
    return value if value in choices else ""


def _query_without(request, *names: str) -> str:
    """The current query string minus `names`, for links that change one filter."""
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


# --- inbox --------------------------------------------------------------------

# What an inbox row shows, read with it.
INBOX_RELATED = ("proposal", "proposal__panel", "claimed_by", "assigned_user", "assigned_group")


@require_GET
@vary_on_headers("HX-Request")  # the inbox, or its results alone for htmx
@reviewer_required
def inbox(request):
    filters = inbox_filters(request.GET)
    counts = inbox_counts(filters, request.user)
    listed = counts["listed"]
    now = timezone.now()
    page = _inbox_page(request, filters, listed, now)
    panel_query = _query_without(request, "reason", "page")
    context = {
        "now": now,
        "audits": _inbox_audits(request, filters, counts, now),
        "audit_count": counts["audit"].label,
        "audit_query": "&".join(filter(None, [panel_query, "reason=audit"])),
        "page": page,
        "reason": filters.reason,
        "panel_id": filters.panel_id,
        "sort": filters.sort,
        "mine": filters.mine,
        "assigned": filters.assigned,
        "q": filters.search.text,
        "search_error": filters.search.error,
        "reason_filters": [
            {
                "code": code,
                "label": label,
                "count": counts[code].label,
                "query": "&".join(filter(None, [panel_query, f"reason={code}"])),
            }
            for code, label in REASON_LABELS.items()
        ],
        "all_count": counts["all"].label,
        "all_query": panel_query,
        "listed_over": listed.over,
        "count_limit": f"{inbox_queries.COUNT_LIMIT:,}",
        "page_query": _query_without(request, "page"),
        "poll_seconds": settings.REVIEWAPP_INBOX_POLL_SECONDS,
    }
    status = 400 if filters.search.error else 200
    if request.htmx:
        return render(request, "web/inbox.html#results", context, status=status)
    context["panels"] = Panel.objects.only("id", "name").order_by("name")
    return render(request, "web/inbox.html", context, status=status)


def _inbox_page(request, filters, listed, now):
    """The page of escalations asked for, each row with its badges, tally and claim."""
    ids = inbox_page_rows(filters, request.user, listed).values_list("pk", flat=True)
    paginator = Paginator(ids, INBOX_PAGE_SIZE)
    # The counts already counted these rows: no second COUNT. A list pages
    # through its first COUNT_LIMIT rows only (see inbox.py).
    paginator.count = listed.listable
    page = paginator.get_page(request.GET.get("page"))
    # Ids first, then the page's rows: a deep page skips over the escalation
    # index alone instead of sorting and skipping joined proposal rows.
    by_id = (
        Escalation.objects.select_related(*INBOX_RELATED)
        .defer(*(f"proposal__{name}" for name in PROPOSAL_HEAVY))
        .with_reviews_of(request.user)
        .in_bulk(list(page.object_list))
    )
    page.object_list = [by_id[pk] for pk in page.object_list if pk in by_id]
    for escalation in page.object_list:
        escalation.badges = reason_badges(escalation.reasons)
        escalation.guarantee_line = guarantee_line(escalation)
        escalation.tally_text = tally_text(escalation.proposal.tally)
        escalation.tally_outcome = tally_outcome(escalation.proposal.tally)
        escalation.claim = escalation.standing(request.user, now, places=False)
    return page


def _inbox_audits(request, filters, counts, now) -> list:
    """The open audits shown below the default list (none under a reason filter)."""
    if filters.reason or not counts["audit"].n:
        return []
    audits = list(
        inbox_audits(filters, request.user)
        .select_related(*INBOX_RELATED)
        .defer(*(f"proposal__{name}" for name in PROPOSAL_HEAVY))[:INBOX_AUDITS_SHOWN]
    )
    for escalation in audits:
        # Row by row as above; an audit takes one verdict, so no review details.
        escalation.claim = escalation.standing(request.user, now, places=False)
    return audits


# --- proposals ----------------------------------------------------------------


def _date_param(request, name: str) -> date | None:
    try:
        return date.fromisoformat(request.GET.get(name, ""))
    except ValueError:
        return None


# The dashboard's figures link here; each set is described as the dashboard names it.
SET_WORDS = {
    "approved": "approved",
    "rejected": "rejected",
    "escalated_open": "escalated, still open",
    "pending": "pending",
    "judged": "judged (not pending)",
    "sent_to_human": "sent to a human (open or decided since)",
}
VERDICTS = ("pass", "fail")
CITE_WORDS = {"any": "with claims", "unresolved": "with unresolved cites"}
WORKLOAD_WORDS = {
    "open": "with an open escalation nobody holds",
    "claimed": "with an escalation claimed by {reviewer}",
    "expired": "with an escalation claimed by {reviewer} whose claim has lapsed",
    "resolved": "with an escalation resolved by {reviewer}",
}
LARGER_SIDE_WORDS = {
    "decided": "without quorum, decided by a reviewer",
    "agreed": "without quorum, where the reviewer sided with the larger side",
    "disagreed": "without quorum, where the reviewer sided against the larger side",
    "ties": "without quorum, decided by a reviewer on a tied vote",
}


def _drill_down(request, rows):
    """The dashboard's filters (proposal_sets.scope): the rows, and what they were, in words."""
    words = []
    start, end = _date_param(request, "start"), _date_param(request, "end")
    if start or end:
        rows = rows.filter(Scope(start=start, end=end).q())
        if start == end:
            words.append(f"submitted on {start:%Y-%m-%d}")
        else:
            span = [f"from {start:%Y-%m-%d}" if start else "", f"to {end:%Y-%m-%d}" if end else ""]
            words.append("submitted " + " ".join(part for part in span if part))
    chosen = _choice_param(request, "set", PROPOSAL_SETS)
    if chosen:
        rows = rows.filter(PROPOSAL_SETS[chosen]())
        words.append(SET_WORDS[chosen])
    # A lens, or two (a cell of a pair's agreement table), each with an optional verdict.
    lenses = {
        key: (lens_id, _choice_param(request, f"verdict{suffix}", VERDICTS))
        for key, suffix in (("lens", ""), ("lens2", "2"))
        if (lens_id := _int_param(request, key)) is not None
    }
    if lenses:
        ids = [lens_id for lens_id, _ in lenses.values()]
        names = dict(Lens.objects.filter(pk__in=ids).values_list("pk", "name"))
        failed = request.GET.get("lens_failed") == "1" and "lens2" not in lenses
        judged = []
        for lens_id, verdict in lenses.values():
            rows = rows.filter(lens_q(lens_id=lens_id, verdict=verdict, failed=failed))
            judged.append(names.get(lens_id, "?") + (f": {verdict}" if verdict else ""))
        if failed:
            words.append(f"lens {judged[0]} failed on them")
        else:
            words.append("judged by lens " + " and lens ".join(judged))
        cites = _choice_param(request, "cites", CITE_WORDS)
        if cites and "lens2" not in lenses:
            lens_id = lenses["lens"][0]
            rows = rows.filter(drilldown.lens_claims_q(lens_id=lens_id, unresolved=cites != "any"))
            words.append(CITE_WORDS[cites] + " by that lens")
    return _more_drill_down(request, rows, words)


def _more_drill_down(request, rows, words):
    """The workload, Fleiss and larger-side figures' filters (review.proposal_sets.drilldown)."""
    column = _choice_param(request, "workload", drilldown.WORKLOAD_COLUMNS)
    if column:
        reviewer = request.GET.get("reviewer", drilldown.UNCLAIMED)
        rows = rows.filter(drilldown.workload_q(column=column, reviewer=reviewer))
        words.append(WORKLOAD_WORDS[column].format(reviewer=reviewer or "nobody"))
    raters = _int_param(request, "raters")
    if raters is not None:
        rows = rows.filter(drilldown.all_lenses_judged_q(raters))
        words.append(f"judged by all {raters} lenses their panel asked")
    side = _choice_param(request, "larger_side", drilldown.LARGER_SIDE)
    if side:
        rows = drilldown.with_tally_votes(rows).filter(
            drilldown.LARGER_SIDE_DECIDED & drilldown.LARGER_SIDE[side]
        )
        words.append(LARGER_SIDE_WORDS[side])
    return _calibration_drill_down(request, rows, words)


def _calibration_drill_down(request, rows, words):
    """A lens's agreement with the reviewers, its pairs' shared errors, a panel's audits."""
    since, until = _date_param(request, "decided_from"), _date_param(request, "decided_to")
    if since or until:
        words.append(
            "decided by a reviewer "
            + " ".join(p for p in (since and f"from {since}", until and f"to {until}") if p)
        )
    lens_id, lens2_id = (
        _int_param(request, "agreement_lens"),
        _int_param(request, "agreement_lens2"),
    )
    names = (
        dict(Lens.objects.filter(pk__in=[lens_id, lens2_id]).values_list("pk", "name"))
        if lens_id is not None
        else {}
    )
    if lens_id is not None and lens2_id is not None:
        rows = rows.filter(
            calibration_drilldown.both_wrong_q(
                lens_id=lens_id, lens2_id=lens2_id, since=since, until=until
            )
        )
        words.append(
            f"where lenses {names.get(lens_id, '?')} and {names.get(lens2_id, '?')} "
            "were both wrong against the reviewer"
        )
    elif lens_id is not None:
        cell = _choice_param(request, "cell", calibration_drilldown.CELLS) or "labelled"
        kind = _choice_param(request, "kind", calibration_drilldown.KINDS) or None
        rows = rows.filter(
            calibration_drilldown.lens_label_q(
                lens_id=lens_id, cell=cell, kind=kind, since=since, until=until
            )
        )
        words.append(
            f"judged by lens {names.get(lens_id, '?')}, "
            f"{calibration_drilldown.CELL_WORDS[cell]}" + (f" ({kind}s)" if kind else "")
        )
    audited = _choice_param(request, "audited", calibration_drilldown.AUDITED)
    if audited:
        rows = rows.filter(calibration_drilldown.audited_q(which=audited, since=since, until=until))
        words.append(calibration_drilldown.AUDITED_WORDS[audited])
    return rows, words


@require_GET
@reviewer_required
def proposal_list(request):
    status = _choice_param(request, "status", Proposal.Status.values)
    panel_id = _int_param(request, "panel")
    search = search_typed(request.GET.get("q", ""))

    rows = Proposal.objects.select_related("panel", "decision").defer(
        *PROPOSAL_HEAVY, "decision__payload"
    )
    if status:
        rows = rows.filter(status=status)
    if panel_id is not None:
        rows = rows.filter(panel_id=panel_id)
    if search.error:
        rows = rows.none()  # a search that can never run matches nothing
    elif search.query is not None:
        rows = rows.filter(proposal_text_q(search.query, reference=search.text))
    rows, drill_down = _drill_down(request, rows)
    page = Paginator(rows.order_by("-created_at", "-id"), LIST_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    for proposal in page.object_list:
        proposal.tally_text = tally_text(proposal.tally)
        proposal.tally_outcome = tally_outcome(proposal.tally)
    return render(
        request,
        "web/proposal_list.html",
        {
            "page": page,
            "status": status,
            "statuses": Proposal.Status.values,
            "panel_id": panel_id,
            "panels": Panel.objects.only("id", "name").order_by("name"),
            "q": search.text,
            "search_error": search.error,
            "drill_down": drill_down,
            "without_drill_down": _query_without(
                request,
                *("page", "set", "start", "end", "lens", "verdict", "lens2", "verdict2"),
                *("lens_failed", "cites", "workload", "reviewer", "raters", "larger_side"),
                *("decided_from", "decided_to", "agreement_lens", "agreement_lens2", "cell"),
                *("kind", "audited"),
            ),
            "page_query": _query_without(request, "page"),
        },
        status=400 if search.error else 200,
    )


# --- decisions --------------------------------------------------------------------


@require_GET
@reviewer_required
def decision_list(request):
    outcome = _choice_param(request, "outcome", Decision.Outcome.values)
    basis = _choice_param(request, "basis", Decision.Basis.values)
    rows = Decision.objects.select_related("proposal").defer(
        "payload", *(f"proposal__{name}" for name in PROPOSAL_HEAVY)
    )
    if outcome:
        rows = rows.filter(outcome=outcome)
    if basis:
        rows = rows.filter(basis=basis)
    # The dashboard's scope (panel, submission dates of the proposals), as its figures count.
    panel_id = _int_param(request, "panel")
    start, end = _date_param(request, "start"), _date_param(request, "end")
    scoped = panel_id is not None or start or end
    if scoped:
        scope = Scope(panel_id=panel_id, start=start, end=end)
        rows = rows.filter(scope.q("proposal__"))
    page = Paginator(rows.order_by("-id"), LIST_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "web/decision_list.html",
        {
            "page": page,
            "outcome": outcome,
            "basis": basis,
            "outcomes": Decision.Outcome.values,
            "bases": Decision.Basis.values,
            "scoped": scoped,
            "without_scope": _query_without(request, "page", "panel", "start", "end"),
            "page_query": _query_without(request, "page"),
        },
    )


@require_GET
@vary_on_headers("HX-Request")  # the page, or its result alone for htmx
@reviewer_required
def decision_verify(request, pk: int):
    decision = get_object_or_404(Decision.objects.select_related("proposal"), pk=pk)
    context = {
        "decision": decision,
        "result": decision_check(decision),
        "ledger": decision_ledger_status(decision),
        "checked_at": timezone.now(),
    }
    if request.htmx:
        return render(request, "web/decision_verify.html#result", context)
    return render(request, "web/decision_verify.html", context)
