"""Agreement with the reviewers at volume: 1,000,000 judgements, 100,000 human decisions.

Run:  .venv/bin/python benchmarks/agreement.py [--judgements 1000000] [--decisions 100000]
                                               [--requests 200]

On a fresh PostgreSQL database (`reviewapp_bench_agreement`, or BENCH_AGREEMENT_DB)
it creates two panels of five lenses, then bulk-loads inside the database
(INSERT ... SELECT over a series: no row passes through Python) the proposals,
five judgements each, and for one proposal in `judgements / 5 / decisions` an
escalation resolved by a reviewer's decision, or (one in ten) an automatic
decision with an audit escalation and the reviewer's signed audit verdict
(one audit in three overturns it). The lenses err at different rates, two of
them on the same proposals. One decision in ten (a reviewer's) marks one
cited claim of each lens (one mark in four "incorrect"). The human labels
and their daily sums are then written by `labels_rebuild` (the same statements
a backfill runs), and VACUUM ANALYZE.

A third panel, `bench-guarantee` (the first panel's five lenses, need 3, a
guarantee of 95 % at 95 % confidence), gets the guarantee's counters as the
decisions would leave them: the human labels split over its nine vote
patterns (summing to `--decisions`), each pattern's standing computed by the
service that computes it after a label, and a day's rows per pattern (one per
shard) for every day of the year counting its automatic and held decisions.

1. Query counts, in-process with CaptureQueriesContext, of the API's
   `GET /api/lenses/{name}/agreement`, the dashboard's per-lens page
   (`/dashboard/lenses`, the same section the dashboard shows) and
   `GET /api/panels/bench-guarantee/guarantee`, before the load (no
   decisions) and after it. They must be equal.
2. Server time: each answered `--requests` times in this process through
   Django's full request handling (middleware, session or token auth,
   rendering), all time and over a 90-day window; p50/p95/max.
   Target: p95 < 150 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402

TARGET_P95_MS = 150.0
PER_PANEL = 5
BENCH_DB = os.environ.get("BENCH_AGREEMENT_DB", "reviewapp_bench_agreement")


# --- SQL that reads the same on PostgreSQL and SQLite ------------------------------


def _vendor() -> str:
    from django.db import connection

    return connection.vendor


def _series(count: int) -> str:
    if _vendor() == "postgresql":
        return f"(SELECT generate_series(1, {int(count)}) AS i) s"
    return (
        f"(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {int(count)})"
        " SELECT i FROM n) s"
    )


def _days_ago(days_sql: str, hours: int = 0) -> str:
    if _vendor() == "postgresql":
        return f"(NOW() - ({days_sql}) * INTERVAL '1 day' + INTERVAL '{hours} hours')"
    return f"datetime('now', '-' || ({days_sql}) || ' days', '+{hours} hours')"


def _day_ago(days_sql: str) -> str:
    if _vendor() == "postgresql":
        return f"(CURRENT_DATE - ({days_sql}))"
    return f"date('now', '-' || ({days_sql}) || ' days')"


def _json(sql: str) -> str:
    return f"CAST({sql} AS jsonb)" if _vendor() == "postgresql" else sql


def _insert(model, count: int, exprs: dict[str, str]) -> None:
    """INSERT ... SELECT one row per i in 1..count; columns not named take their default."""
    from django.db import connection, models

    columns, values = [], []
    for f in model._meta.concrete_fields:
        if f.column in exprs:
            value = exprs[f.column]
        elif f.primary_key:
            continue
        elif f.null:
            value = "NULL"
        elif isinstance(f, models.JSONField):
            value = _json("'{}'" if f.default is dict else "'[]'")
        elif isinstance(f, models.DateTimeField):
            value = _days_ago("0")
        elif isinstance(f, models.BooleanField):
            value = "TRUE" if f.default is True else "FALSE"
        elif isinstance(f, models.IntegerField | models.FloatField):
            value = str(f.default if isinstance(f.default, int | float) else 0)
        else:
            value = "''"
        columns.append(connection.ops.quote_name(f.column))
        values.append(value)
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"SELECT {', '.join(values)} FROM {_series(count)}"
        )


def _reset_sequences(*models) -> None:
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(sql)


def setup_lenses() -> list:
    """Two panels of five recorded lenses, and the guaranteed panel made of the first's;
    returns the ten lenses in panel order."""
    from reviewapp.guarantee.configure import guarantee_configure
    from reviewapp.review.models import Lens, Panel, PanelLens

    lenses = []
    for p in range(2):
        panel = Panel.objects.create(name=f"bench-panel-{p}", need=PER_PANEL)
        for k in range(PER_PANEL):
            lens = Lens.objects.create(name=f"bench-lens-{p}-{k}", backend=Lens.Backend.RECORDED)
            PanelLens.objects.create(panel=panel, lens=lens, position=k)
            lenses.append(lens)
    guaranteed = Panel.objects.create(name=GUARANTEED_PANEL, need=GUARANTEED_NEED)
    for k, lens in enumerate(lenses[:PER_PANEL]):
        PanelLens.objects.create(panel=guaranteed, lens=lens, position=k)
    guarantee_configure(
        panel=guaranteed, target=0.95, confidence=0.95, audit_focus="nearest", actor="bench"
    )
    return lenses


GUARANTEED_PANEL = "bench-guarantee"
GUARANTEED_NEED = 3
# Each vote pattern's share of the decisions and of the labels, and how often its
# reviewers agree: unanimous patterns are common and right, bare majorities rarer and less so.
PATTERN_MIX = {
    "approved:5p0f0m:unchecked": (0.40, 0.995),
    "approved:4p1f0m:unchecked": (0.15, 0.98),
    "approved:3p2f0m:unchecked": (0.05, 0.90),
    "rejected:0p5f0m:unchecked": (0.20, 0.99),
    "rejected:1p4f0m:unchecked": (0.10, 0.97),
    "rejected:2p3f0m:unchecked": (0.04, 0.85),
    "rejected:0p4f1m:unchecked": (0.03, 0.96),
    "rejected:1p3f1m:unchecked": (0.02, 0.90),
    "rejected:0p3f2m:unchecked": (0.01, 0.80),
}
DAYS = 364


def load_guarantee(*, judgements: int, decisions: int) -> None:
    """The guaranteed panel's counters as `decisions` labels and the year's decisions leave
    them: the labels per pattern, each standing computed by the service, a day row per
    pattern per day."""
    from django.db import transaction

    from reviewapp.core.guarantee.configuration import configuration_key
    from reviewapp.guarantee.evidence import guarantee_locked, standings_refresh
    from reviewapp.guarantee.models import SHARDS, PatternDay, PatternEvidence
    from reviewapp.review.models import Panel
    from reviewapp.review.services.proposals import panel_snapshot

    panel = Panel.objects.get(name=GUARANTEED_PANEL)
    configuration = configuration_key(panel_snapshot(panel))
    PatternEvidence.objects.bulk_create(
        PatternEvidence(
            panel=panel,
            configuration=configuration,
            pattern=pattern,
            need=GUARANTEED_NEED,
            labels=round(decisions * share),
            agreed=round(decisions * share * agreement),
            audited=round(decisions * share / 10),
        )
        for pattern, (share, agreement) in PATTERN_MIX.items()
    )
    with transaction.atomic():
        standings_refresh(guarantee=guarantee_locked(panel.pk))
    # Row i: pattern i % 9, shard (i / 9) % SHARDS, day i / (9 × SHARDS).
    per_row = judgements // PER_PANEL // DAYS / SHARDS
    patterns = list(PATTERN_MIX)
    key_case = "CASE i % 9 " + " ".join(f"WHEN {n} THEN '{k}'" for n, k in enumerate(patterns))
    share_case = "CASE i % 9 " + " ".join(
        f"WHEN {n} THEN {PATTERN_MIX[k][0]}" for n, k in enumerate(patterns)
    )
    _insert(
        PatternDay,
        len(patterns) * SHARDS * DAYS,
        {
            "panel_id": str(panel.pk),
            "configuration": f"'{configuration}'",
            "pattern": f"{key_case} END",
            "day": _day_ago(f"(i - 1) / {9 * SHARDS}"),
            "shard": f"((i - 1) / 9) % {SHARDS}",
            "automatic": f"CAST({per_row} * ({share_case} END) * 0.9 AS INTEGER)",
            "held": f"CAST({per_row} * ({share_case} END) * 0.1 AS INTEGER)",
        },
    )


def load(*, judgements: int, decisions: int, lenses: list) -> None:
    """The proposals, their judgements, escalations and reviewer decisions, then the labels."""
    from django.db.models import Max

    from reviewapp.calibration.services import labels_rebuild
    from reviewapp.review.models import (
        Claim,
        ClaimMark,
        Decision,
        DecisionAudit,
        Escalation,
        Judgement,
        Panel,
        Proposal,
    )

    proposals = judgements // PER_PANEL
    step = max(1, proposals // decisions)
    decided = proposals // step
    base = Proposal.objects.aggregate(m=Max("id"))["m"] or 0
    e_base = Escalation.objects.aggregate(m=Max("id"))["m"] or 0
    d_base = Decision.objects.aggregate(m=Max("id"))["m"] or 0
    j_base = Judgement.objects.aggregate(m=Max("id"))["m"] or 0
    panels = list(Panel.objects.filter(name__startswith="bench-panel-").order_by("name"))
    panel_of = f"CASE i % 2 WHEN 0 THEN {panels[0].pk} ELSE {panels[1].pk} END"
    # Proposal p is approved by its reviewer iff p % 10 < 5, decided by one iff p % step = 0.
    approved = "(p % 10 < 5)"
    _insert(
        Proposal,
        proposals,
        {
            "id": f"{base} + i",
            "panel_id": panel_of,
            "panel_version": "1",
            "panel_snapshot": _json('\'{"name": "bench", "version": 1, "need": 5}\''),
            "content": "'Bench proposal.'",
            "status": "'decided'",
            "lenses_asked": str(PER_PANEL),
            "lenses_answered": str(PER_PANEL),
            "tally": _json(
                'CASE WHEN i % 10 = 0 THEN \'{"outcome": "reached_pass"}\' '
                'ELSE \'{"outcome": "no_quorum"}\' END'
            ),
            "created_at": _days_ago("i % 364"),
            "updated_at": _days_ago("i % 364"),
        },
    )
    lens_case = (
        "CASE (p % 2) * 5 + k "
        + " ".join(f"WHEN {n} THEN {lens.pk}" for n, lens in enumerate(lenses))
        + " END"
    )
    name_case = (
        "CASE (p % 2) * 5 + k "
        + " ".join(f"WHEN {n} THEN '{lens.name}'" for n, lens in enumerate(lenses))
        + " END"
    )
    # Lens k errs on (10 + 5k) % of proposals; lenses 3 and 4 of a panel on overlapping ones.
    wrong = "(((p * 31 + (CASE WHEN k >= 3 THEN 3 ELSE k END) * 17) % 100) < 10 + 5 * k)"
    verdict = f"CASE WHEN {approved} <> {wrong} THEN 'pass' ELSE 'fail' END"
    judgement_exprs = {
        "proposal_id": f"{base} + p",
        "lens_id": lens_case,
        "lens_name": name_case,
        "lens_version": "1",
        "verdict": verdict,
        "created_at": _days_ago("p % 364"),
    }
    from django.db import connection

    # p and k from i: five judgements per proposal.
    derived = (
        f"(SELECT (i - 1) / {PER_PANEL} + 1 AS p, (i - 1) % {PER_PANEL} AS k "
        f"FROM {_series(judgements)}) s"
    )
    judgement_exprs["id"] = f"{j_base} + (p - 1) * {PER_PANEL} + k + 1"
    columns = list(judgement_exprs)
    table = connection.ops.quote_name(Judgement._meta.db_table)
    extra = {"rationale": "''", "raw_response": "''", "attempts": "1", "requote_rounds": "0"}
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join([*columns, *extra])}) "
            f"SELECT {', '.join([*judgement_exprs.values(), *extra.values()])} FROM {derived}"
        )
    # Decided proposal j is proposal p = j * step.
    _insert(
        Escalation,
        decided,
        {
            "id": f"{e_base} + i",
            "proposal_id": f"{base} + i * {step}",
            "reasons": _json("CASE WHEN i % 10 = 0 THEN '[\"audit\"]' ELSE '[\"no_quorum\"]' END"),
            "status": "'resolved'",
            "created_at": _days_ago(f"(i * {step}) % 364"),
            "resolved_at": _days_ago(f"(i * {step}) % 364", hours=1),
        },
    )
    # Decision i: the reviewer's on escalation i, or (i % 10 = 0) the system's, audited.
    audited = "(i % 10 = 0)"
    reviewer_outcome = f"CASE WHEN ((i * {step}) % 10 < 5) THEN 'approved' ELSE 'rejected' END"
    _insert(
        Decision,
        decided,
        {
            "id": f"{d_base} + i",
            "proposal_id": f"{base} + i * {step}",
            "escalation_id": f"CASE WHEN {audited} THEN NULL ELSE {e_base} + i END",
            # The system approved what it decided; one audit in three says reject.
            "outcome": f"CASE WHEN {audited} THEN 'approved' ELSE {reviewer_outcome} END",
            "basis": f"CASE WHEN {audited} THEN 'system' ELSE 'reviewer' END",
            "decided_by_name": f"CASE WHEN {audited} THEN 'system' ELSE 'bench-reviewer' END",
            "rationale": "'Checked.'",
            "payload": "'{}'",
            "signature": "'bench'",
            "key_id": "'bench'",
            "prev_hash": f"'p' || CAST({e_base} + i AS TEXT)",
            "hash": f"'h' || CAST({e_base} + i AS TEXT)",
            "created_at": _days_ago(f"(i * {step}) % 364", hours=1),
        },
    )
    overturned = "(i % 3 = 0)"
    _insert(
        DecisionAudit,
        decided // 10,
        {
            "decision_id": f"{d_base} + i * 10",
            "escalation_id": f"{e_base} + i * 10",
            "outcome": f"CASE WHEN {overturned} THEN 'rejected' ELSE 'approved' END",
            "agrees": f"CASE WHEN {overturned} THEN FALSE ELSE TRUE END",
            "rationale": "'Audited.'",
            "decided_by_name": "'bench-reviewer'",
            "payload": "'{}'",
            "signature": "'bench'",
            "key_id": "'bench'",
            "hash": f"'a' || CAST({e_base} + i AS TEXT)",
            "created_at": _days_ago(f"(i * 10 * {step}) % 364", hours=2),
        },
    )
    # Reviewer decision m = 10j - 5 (one decision in ten, never an audited one) marks a
    # claim of each of its proposal's five judgements.
    marked = decided // 10
    c_base = Claim.objects.aggregate(m=Max("id"))["m"] or 0
    claim_of = f"(SELECT (i - 1) / {PER_PANEL} + 1 AS j, (i - 1) % {PER_PANEL} AS k, i FROM " + (
        f"{_series(marked * PER_PANEL)}) s"
    )
    judgement = f"{j_base} + ((10 * j - 5) * {step} - 1) * {PER_PANEL} + k + 1"
    claim_table = connection.ops.quote_name(Claim._meta.db_table)
    mark_table = connection.ops.quote_name(ClaimMark._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {claim_table} (id, judgement_id, position, claim_id, cite, text, "
            "assessment, note, anchor_kind, start_utf16, end_utf16, dropped) "
            f"SELECT {c_base} + i, {judgement}, 0, '', 'Bench', 'Bench', 'verified', '', "
            "'answer_body', 0, 5, FALSE FROM " + claim_of
        )
        cursor.execute(
            f"INSERT INTO {mark_table} (decision_id, claim_id, mark) "
            f"SELECT {d_base} + 10 * j - 5, {c_base} + i, "
            "CASE WHEN i % 4 = 0 THEN 'incorrect' ELSE 'correct' END FROM " + claim_of
        )
    _reset_sequences(Proposal, Escalation, Decision, DecisionAudit, Judgement, Claim, ClaimMark)
    labels_rebuild()


def _targets(lens_name: str) -> dict[str, tuple[str, dict]]:
    from datetime import date, timedelta

    since = (date.today() - timedelta(days=90)).isoformat()
    return {
        "API agreement, all time": (f"/api/lenses/{lens_name}/agreement", {}),
        "API agreement, 90 days": (f"/api/lenses/{lens_name}/agreement", {"since": since}),
        "per-lens table, all time": ("/dashboard/lenses", {}),
        "per-lens table, 90 days": ("/dashboard/lenses", {"since": since}),
        "API guarantee, 9 patterns": (f"/api/panels/{GUARANTEED_PANEL}/guarantee", {}),
    }


def clients():
    """A reviewer's browser and a read:all token, both as Django test clients."""
    from django.test import Client

    from reviewapp.review.services.clients import api_client_create

    _, cookie = s.reviewer_session("bench-agreement-reviewer")
    browser = Client(HTTP_HOST="localhost")
    from django.conf import settings

    browser.cookies[settings.SESSION_COOKIE_NAME] = cookie
    _, token = api_client_create(name="bench-agreement-reader", scopes=["read:all"])
    api = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    return browser, api


def _client_for(path: str, browser, api):
    return api if path.startswith("/api/") else browser


def query_counts(lens_name: str, browser, api) -> dict[str, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for label, (path, params) in _targets(lens_name).items():
        client = _client_for(path, browser, api)
        client.get(path, params)  # a token's or session's first use may write
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path, params)
        assert response.status_code == 200, (path, response.status_code)
        counts[label] = len(captured)
    return counts


def timings(lens_name: str, browser, api, requests: int) -> dict[str, list[float]]:
    out = {}
    for label, (path, params) in _targets(lens_name).items():
        client = _client_for(path, browser, api)
        samples = []
        for _ in range(requests):
            start = time.perf_counter()
            response = client.get(path, params)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
        out[label] = samples
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()

    env = s.bench_env("agreement", database_url=f"{s.PG_URL}/{BENCH_DB}")
    s.reset_database(BENCH_DB)
    s.django_setup(env)
    s.migrate()
    s.collectstatic()
    s.heading("Lenses and the guarantee against the reviewers")
    s.line("load average", s.load_average())
    lenses = setup_lenses()
    browser, api = clients()
    before = query_counts(lenses[0].name, browser, api)

    started = time.perf_counter()
    load(judgements=args.judgements, decisions=args.decisions, lenses=lenses)
    load_guarantee(judgements=args.judgements, decisions=args.decisions)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    from reviewapp.calibration.models import HumanLabel, LensLabel
    from reviewapp.review.models import Judgement

    s.line(
        "load + labels_rebuild + guarantee + VACUUM", f"{time.perf_counter() - started:.1f} s"
    )
    s.line(
        "rows",
        f"{Judgement.objects.count():,} judgements, {HumanLabel.objects.count():,} human "
        f"decisions, {LensLabel.objects.count():,} lens labels",
    )

    after = query_counts(lenses[0].name, browser, api)
    s.heading("Queries per answer (no decisions → full volume)")
    for label in before:
        s.line(label, f"{before[label]} → {after[label]}")
    ok = before == after

    s.heading(f"Server time, {args.requests} requests each (ms)")
    for label, samples in timings(lenses[0].name, browser, api, args.requests).items():
        p95 = s.percentile(samples, 95)
        s.line(
            label,
            f"p50 {s.percentile(samples, 50):.1f}  p95 {p95:.1f}  max {max(samples):.1f}"
            f"  {'OK' if p95 < TARGET_P95_MS else 'OVER TARGET'}",
        )
        ok = ok and p95 < TARGET_P95_MS
    s.line("load average", s.load_average())
    s.line(
        "target", f"p95 < {TARGET_P95_MS:.0f} ms, same query count: {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
