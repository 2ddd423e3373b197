"""Proposal exports, CSV and JSON Lines, streamed.

Filtered like the proposals list (status, panel, q over title and external
reference; plus the dashboard's start/end submission dates). Rows come from
`.iterator(chunk_size=EXPORT_CHUNK_SIZE)`: the database is read a chunk at a
time and judgements are prefetched per chunk (one query per chunk), so an
export of 100,000 proposals never holds more than one chunk in memory.
Large columns (content, thought process, snapshots, signed payloads, raw
model responses) are never read.
"""

import csv
import json
from collections.abc import Iterable, Iterator
from datetime import date

from django.db.models import Count, Prefetch, Q
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from reviewapp.review.models import Claim, Judgement, Proposal
from reviewapp.web.access import reviewer_required

from .queries import Scope

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
    "judgements",
)

# A cell starting with one of these is a formula to a spreadsheet
# (CSV injection); proposal titles come from agents, so they are defused.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _filters(request) -> tuple[Scope, str, str]:
    """(scope, status, q) from the query string; invalid values are ignored, as on the list."""
    status = request.GET.get("status", "")
    if status not in Proposal.Status.values:
        status = ""
    try:
        panel_id = int(request.GET.get("panel", ""))
    except ValueError:
        panel_id = None

    def day(name: str) -> date | None:
        try:
            return date.fromisoformat(request.GET.get(name, ""))
        except ValueError:
            return None

    scope = Scope(panel_id=panel_id, start=day("start"), end=day("end"))
    # PostgreSQL text cannot hold NUL; a search for it can only match nothing.
    return scope, status, request.GET.get("q", "").replace("\x00", "").strip()


def export_queryset(scope: Scope, status: str = "", q: str = ""):
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
    rows = (
        scope.proposals()
        .select_related("panel", "decision")
        .defer(
            *PROPOSAL_HEAVY,
            "decision__payload",
            "decision__signature",
            "panel__description",
        )
        .prefetch_related(Prefetch("judgements", queryset=judgements))
        .order_by("id")
    )
    if status:
        rows = rows.filter(status=status)
    if q:
        rows = rows.filter(Q(title__icontains=q) | Q(external_ref__icontains=q))
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
        },
    }


def _defuse(value):
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
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
        "judgements": json.dumps(judgements, ensure_ascii=False, separators=(",", ":")),
    }
    return [_defuse(row[k]) if row[k] is not None else "" for k in CSV_COLUMNS]


class _Echo:
    """A file-like object whose write returns the line, for csv.writer in a generator."""

    def write(self, value: str) -> str:
        return value


def _records(rows) -> Iterator[dict]:
    for proposal in rows.iterator(chunk_size=EXPORT_CHUNK_SIZE):
        yield proposal_record(proposal)


def csv_lines(rows) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for record in _records(rows):
        yield writer.writerow(csv_row(record))


def jsonl_lines(rows) -> Iterator[str]:
    for record in _records(rows):
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _filename(extension: str) -> str:
    return f"proposals-{timezone.now():%Y%m%dT%H%M%SZ}.{extension}"


def _stream(lines: Iterable[str], content_type: str, extension: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, _filename(extension))
    response["Cache-Control"] = "no-store"
    return response


@require_GET
@reviewer_required
def proposals_csv(request):
    rows = export_queryset(*_filters(request))
    return _stream(csv_lines(rows), "text/csv; charset=utf-8", "csv")


@require_GET
@reviewer_required
def proposals_jsonl(request):
    rows = export_queryset(*_filters(request))
    return _stream(jsonl_lines(rows), "application/jsonl; charset=utf-8", "jsonl")
