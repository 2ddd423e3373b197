"""Proposal exports, CSV and JSON Lines, streamed.

Filtered like the proposals list (status, panel, q over title, content and
external reference; plus the dashboard's start/end submission dates). A
filter that cannot mean anything (an unknown status, a panel id that is not
an id, a date that is not a date, a search too long or without a word)
answers 400 saying which, rather than exporting something other than what
was asked for. Rows come from `.iterator(chunk_size=EXPORT_CHUNK_SIZE)`: the
database is read a chunk at a time and judgements are prefetched per chunk
(one query per chunk), so an export of 100,000 proposals never holds more
than one chunk in memory. Large columns (content, thought process,
snapshots, signed payloads, raw model responses) are never read.

An export that fails never looks like a complete one. The first chunk is
read before the response starts, so a query that cannot run answers an
error status, not a 200 with a header row and nothing under it. A failure
after that (the database going away mid-way) cannot change the status any
more: the error is let through the stream, and the server drops the
connection without ending the chunked body, which HTTP clients report as a
broken transfer (curl: "transfer closed with outstanding read data
remaining"), where a caught error would have ended a truncated file
cleanly. Buffering the whole export first would avoid the case but hold it
all in memory or on disk, and keep the client waiting past proxy timeouts.
"""

import csv
import itertools
import json
from collections.abc import Iterable, Iterator
from datetime import date

from django.db.models import Count, Prefetch, Q
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from reviewapp.review.models import (
    Claim,
    ClaimMark,
    DecisionTag,
    Escalation,
    Judgement,
    Proposal,
    WrongReason,
)
from reviewapp.review.page_access import reviewer_required
from reviewapp.review.proposal_sets.scope import Scope
from reviewapp.review.search_queries import TypedSearch, proposal_text_q, search_typed

EXPORT_CHUNK_SIZE = 500

PROPOSAL_HEAVY = ("content", "thought_process", "panel_snapshot", "metadata", "request_sha256")

CSV_COLUMNS = (
    "id",
    "title",
    "external_ref",
    "panel",
    "panel_version",
    "status",
    "created_at",
    "finalized_at",
    "content_sha256",
    "lenses_asked",
    "lenses_answered",
    "tally_passed",
    "tally_failed",
    "tally_asked",
    "tally_need",
    "tally_outcome",
    "decision_outcome",
    "decision_basis",
    "decided_by",
    "decided_at",
    "decision_hash",
    "decision_rationale",
    "decision_tags",
    "decision_claim_marks",
    "decision_wrong_reason",
    "escalation_reasons",
    "judgements",
)

# A cell whose first non-blank character is one of these is a formula to some
# spreadsheet (CSV injection): Excel and LibreOffice skip leading spaces,
# accept the full-width forms, and LibreOffice/Lotus read "|" as DDE. Titles,
# references and rationales come from agents and people, so they are defused.
FORMULA_CHARS = frozenset("=+-@|\uff1d\uff0b\uff0d\uff20\uff5c")
# Control characters some spreadsheets drop before reading the rest as a formula.
FORMULA_PREFIXES = ("\t", "\r", "\n")
# Ids are BIGINT primary keys.
_ID_RANGE = range(1, 2**63)


class BadFilter(ValueError):
    """A query parameter that cannot be a filter; the message says which and why."""


def _filters(request) -> tuple[Scope, str, TypedSearch]:
    """(scope, status, search) from the query string; BadFilter for a value that cannot be one."""
    status = request.GET.get("status", "")
    if status and status not in Proposal.Status.values:
        raise BadFilter(f"status must be one of {', '.join(Proposal.Status.values)}.")
    panel_id = None
    if raw := request.GET.get("panel", ""):
        try:
            panel_id = int(raw)
        except ValueError:
            panel_id = 0  # not None: `None in range(...)` walks the whole range
        if panel_id not in _ID_RANGE:
            raise BadFilter("panel must be a panel id (a whole number from 1 to 2^63 - 1).")

    def day(name: str) -> date | None:
        raw = request.GET.get(name, "")
        if not raw:
            return None
        try:
            return date.fromisoformat(raw)
        except ValueError:
            raise BadFilter(f"{name} must be a date written YYYY-MM-DD.") from None

    scope = Scope(panel_id=panel_id, start=day("start"), end=day("end"))
    if scope.start and scope.end and scope.start > scope.end:
        raise BadFilter("end is before start.")
    search = search_typed(request.GET.get("q", ""))
    if search.error:
        raise BadFilter(f"q is not a search that can run. {search.error}")
    return scope, status, search


def export_queryset(scope: Scope, status: str = "", search: TypedSearch | None = None):
    judgements = (
        Judgement.objects.only(
            "id", "proposal_id", "lens_name", "lens_version", "verdict", "rationale", "created_at"
        )
        .annotate(
            claim_count=Count("claims"),
            unresolved_count=Count(
                "claims", filter=Q(claims__anchor_kind=Claim.AnchorKind.UNRESOLVED)
            ),
        )
        .order_by("id")
    )
    escalations = Escalation.objects.only("id", "proposal_id", "reasons", "status").order_by("id")
    marks = ClaimMark.objects.select_related("claim__judgement").only(
        "decision_id", "mark", "claim_id", "claim__judgement__lens_name"
    )
    tags = DecisionTag.objects.select_related("tag").only("decision_id", "tag__name")
    wrong_reasons = WrongReason.objects.select_related("judgement").only(
        "decision_id", "judgement__lens_name"
    )
    rows = (
        scope.proposals()
        .select_related("panel", "decision")
        .defer(
            *PROPOSAL_HEAVY,
            "decision__payload",
            "decision__signature",
            "panel__description",
        )
        .prefetch_related(
            Prefetch("judgements", queryset=judgements),
            Prefetch("escalations", queryset=escalations),
            # A reviewer's annotations, restated from the signed payload by their rows.
            Prefetch("decision__claim_marks", queryset=marks),
            Prefetch("decision__decision_tags", queryset=tags),
            Prefetch("decision__wrong_reasons", queryset=wrong_reasons),
        )
        .order_by("id")
    )
    if status:
        rows = rows.filter(status=status)
    if search is not None and search.query is not None:
        rows = rows.filter(proposal_text_q(search.query, reference=search.text))
    return rows


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def proposal_record(p: Proposal) -> dict:
    """One proposal as exported (the JSONL line; CSV flattens it)."""
    decision = getattr(p, "decision", None)
    return {
        "id": p.pk,
        "title": p.title,
        "external_ref": p.external_ref,
        "panel": {"id": p.panel_id, "name": p.panel.name},
        "panel_version": p.panel_version,
        "status": p.status,
        "created_at": _iso(p.created_at),
        "finalized_at": _iso(p.finalized_at),
        "content_sha256": p.content_sha256,
        "lenses_asked": p.lenses_asked,
        "lenses_answered": p.lenses_answered,
        "tally": p.tally,
        "judgements": [
            {
                "lens": j.lens_name,
                "lens_version": j.lens_version,
                "verdict": j.verdict,
                "rationale": j.rationale,
                "claims": j.claim_count,
                "unresolved_claims": j.unresolved_count,
                "created_at": _iso(j.created_at),
            }
            for j in p.judgements.all()
        ],
        "escalations": [
            {"reasons": list(e.reasons), "status": e.status} for e in p.escalations.all()
        ],
        "decision": None
        if decision is None
        else {
            "outcome": decision.outcome,
            "basis": decision.basis,
            "decided_by": decision.decided_by_name or None,
            "rationale": decision.rationale,
            "created_at": _iso(decision.created_at),
            "hash": decision.hash,
            "key_id": decision.key_id,
            "claim_marks": [
                {"claim": m.claim_id, "lens": m.claim.judgement.lens_name, "mark": m.mark}
                for m in sorted(decision.claim_marks.all(), key=lambda m: m.claim_id)
            ],
            "tags": sorted(t.tag.name for t in decision.decision_tags.all()),
            "wrong_reason": sorted(w.judgement.lens_name for w in decision.wrong_reasons.all()),
        },
    }


def _defuse(value):
    if isinstance(value, str) and (
        value.startswith(FORMULA_PREFIXES) or value.lstrip()[:1] in FORMULA_CHARS
    ):
        return "'" + value
    return value


def csv_row(record: dict) -> list:
    tally = record["tally"] or {}
    decision = record["decision"] or {}
    judgements = [
        {"lens": j["lens"], "lens_version": j["lens_version"], "verdict": j["verdict"]}
        for j in record["judgements"]
    ]
    row = {
        **{k: record[k] for k in CSV_COLUMNS if k in record},
        "panel": record["panel"]["name"],
        "tally_passed": tally.get("passed"),
        "tally_failed": tally.get("failed"),
        "tally_asked": tally.get("asked"),
        "tally_need": tally.get("need"),
        "tally_outcome": tally.get("outcome"),
        "decision_outcome": decision.get("outcome"),
        "decision_basis": decision.get("basis"),
        "decided_by": decision.get("decided_by"),
        "decided_at": decision.get("created_at"),
        "decision_hash": decision.get("hash"),
        "decision_rationale": decision.get("rationale"),
        "decision_tags": ",".join(decision.get("tags", [])),
        "decision_claim_marks": json.dumps(
            decision.get("claim_marks", []), ensure_ascii=False, separators=(",", ":")
        )
        if decision
        else None,
        "decision_wrong_reason": ",".join(decision.get("wrong_reason", [])),
        # Every escalation the proposal had, in order, its reasons joined by ","
        # and escalations separated by ";" (the JSONL keeps the structure).
        "escalation_reasons": ";".join(",".join(e["reasons"]) for e in record["escalations"]),
        "judgements": json.dumps(judgements, ensure_ascii=False, separators=(",", ":")),
    }
    return [_defuse(row[k]) if row[k] is not None else "" for k in CSV_COLUMNS]


class _Echo:
    """A file-like object whose write returns the line, for csv.writer in a generator."""

    def write(self, value: str) -> str:
        return value


def export_records(rows) -> Iterator[dict]:
    """The rows as records, the first chunk already read (see the module: before the first byte)."""
    records = (proposal_record(p) for p in rows.iterator(chunk_size=EXPORT_CHUNK_SIZE))
    first = next(records, None)
    return records if first is None else itertools.chain([first], records)


def csv_lines(records: Iterable[dict]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for record in records:
        yield writer.writerow(csv_row(record))


def jsonl_lines(records: Iterable[dict]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _filename(extension: str) -> str:
    return f"proposals-{timezone.now():%Y%m%dT%H%M%SZ}.{extension}"


def _stream(lines: Iterable[str], content_type: str, extension: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, _filename(extension))
    response["Cache-Control"] = "no-store"
    return response


def _bad_filter(exc: BadFilter) -> HttpResponseBadRequest:
    return HttpResponseBadRequest(
        f"Cannot export: {exc}\n", content_type="text/plain; charset=utf-8"
    )


@require_GET
@reviewer_required
def proposals_csv(request):
    try:
        rows = export_queryset(*_filters(request))
    except BadFilter as exc:
        return _bad_filter(exc)
    return _stream(csv_lines(export_records(rows)), "text/csv; charset=utf-8", "csv")


@require_GET
@reviewer_required
def proposals_jsonl(request):
    try:
        rows = export_queryset(*_filters(request))
    except BadFilter as exc:
        return _bad_filter(exc)
    return _stream(jsonl_lines(export_records(rows)), "application/jsonl; charset=utf-8", "jsonl")
