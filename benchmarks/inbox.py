"""The reviewer pages under volume: 1,000,000 proposals, 100,000 open escalations.

Run:  .venv/bin/python benchmarks/inbox.py [--proposals 1000000] [--open 100000] [--duration 15]

On a fresh `reviewapp_bench` PostgreSQL database it bulk-loads, inside the
database (INSERT ... SELECT over generate_series: no row passes through
Python), proposals on a 3-lens panel with their judgements (3 each, 2
grounded claims each), checker evidence, decisions for the decided ones, and
escalations: `--open` unresolved (9 in 10 open, 1 in 10 claimed) carrying
their search vector, plus half as many resolved ones. Content comes from the
demo's support and regulatory replies, so claims anchor into real text
(emoji, CRLF, markdown); each proposal's ends with its own ticket number.
Then VACUUM ANALYZE, the state autovacuum keeps a live database in.

1. Query counts, in-process with CaptureQueriesContext, for every page
   measured: first with 10 proposals and 10 open escalations, then after
   loading the full volume. They must be equal.
2. Server time under load: gunicorn (2 sync workers, DEBUG=false) driven by
   `wrk` over loopback with a reviewer's session cookie, for the inbox, the
   inbox by reason, its last page, searches (a word in 1 proposal in 8, a
   word in every one, a phrase, one proposal's ticket number, two words that
   never meet, a word with a reason none of its matches has) and proposal
   pages of random escalated proposals. p50/p95/p99 come from gunicorn's own
   access log (%(D)s: server time) and from wrk (client time).
   Target: p95 < 100 ms on every page.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402

TARGET_P95_MS = 100.0
SEED = 20250101


def templates() -> list[dict]:
    """Distinct contents with two cites each, grounded once (anchors sit before the ticket line)."""
    from reviewapp.review.demo.data import REGULATORY_DOCS, SUPPORT_DOCS

    out = []
    for title, body, thought, cite_a, cite_b in SUPPORT_DOCS + REGULATORY_DOCS:
        out.append({"title": title, "body": body, "thought": thought, "cites": [cite_a, cite_b]})
    return out


def ground_template(template: dict) -> list:
    from reviewapp.core.cite import ClaimInput, GroundingPolicy, ground_claims

    grounded = ground_claims(
        content=template["body"] + "\n\nTicket #0000000",
        thought_process=template["thought"],
        claims=[ClaimInput(cite=c, assessment="verified") for c in template["cites"]],
        target_id="template",
        policy=GroundingPolicy.REPAIR,
    )
    return grounded.claims


def _value(choice) -> str:
    return getattr(choice, "value", choice)


# Which ids are escalated or resolved: k -> (k * _SPREAD) mod n is a permutation
# of 0..n-1 (the multiplier is prime), so the first `open` ranks are exactly
# `open` proposals spread over the whole id range, as a random sample would be.
_SPREAD = 2654435761


class Loader:
    """Generates the rows inside PostgreSQL (INSERT … SELECT over generate_series).

    One statement per table: a million proposals with their judgements,
    claims, evidence and decisions never pass through Python row by row. The
    few distinct contents (the demo's replies, grounded once here) and the
    lenses' answers to them sit in temporary tables the statements join.
    While loading, the big tables' secondary indexes are dropped and built
    again afterwards (one sorted build instead of ten million insertions), and
    foreign-key triggers are off (`session_replication_role = replica`): the
    rows are consistent by construction.
    """

    TABLES = (
        "review_proposal",
        "review_judgement",
        "review_claim",
        "review_evidence",
        "review_escalation",
        "review_decision",
    )

    def __init__(self):
        from django.db import connection
        from django.utils import timezone

        from reviewapp.review.models import CheckerConfig, Lens, Panel
        from reviewapp.review.services.proposals import panel_snapshot

        self.connection = connection
        self.panel = Panel.objects.get(name="bench-panel")
        self.snapshot = panel_snapshot(self.panel)
        self.lenses = list(Lens.objects.filter(name__in=s.PIPELINE_LENSES).order_by("name"))
        self.checker = CheckerConfig.objects.get(name="bench-mandate")
        self.now = timezone.now()
        self.next_proposal = 1
        self.users = []
        self.seconds: dict[str, float] = {}
        self.template_count = self._write_templates()

    def _write_templates(self) -> int:
        rows = templates()
        with self.connection.cursor() as cursor:
            cursor.execute(
                "CREATE TEMP TABLE bench_template (t int PRIMARY KEY, title text, body text,"
                " thought text)"
            )
            cursor.execute(
                "CREATE TEMP TABLE bench_answer (t int, lens_id bigint, verdict text,"
                " rationale text, raw_response text, PRIMARY KEY (t, lens_id, verdict))"
            )
            cursor.execute(
                "CREATE TEMP TABLE bench_claim (t int, position int, claim_id text, cite text,"
                " text text, assessment text, note text, anchor_kind text, start_utf16 int,"
                " end_utf16 int)"
            )
            for t, template in enumerate(rows):
                cursor.execute(
                    "INSERT INTO bench_template VALUES (%s, %s, %s, %s)",
                    [t, template["title"], template["body"], template["thought"]],
                )
                for lens in self.lenses:
                    for verdict in ("pass", "fail"):
                        rationale = f"{lens.name} judged {verdict} on the quoted passages."
                        answer = {
                            "verdict": verdict,
                            "rationale": rationale,
                            "claims": [
                                {"cite": c, "assessment": "verified"} for c in template["cites"]
                            ],
                        }
                        cursor.execute(
                            "INSERT INTO bench_answer VALUES (%s, %s, %s, %s, %s)",
                            [
                                t,
                                lens.pk,
                                verdict,
                                rationale,
                                json.dumps(answer, ensure_ascii=False),
                            ],
                        )
                for position, claim in enumerate(ground_template(template)):
                    anchor = claim.anchor
                    cursor.execute(
                        "INSERT INTO bench_claim VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        [
                            t,
                            position,
                            claim.claim_id or "",
                            claim.cite,
                            claim.text,
                            _value(claim.assessment),
                            claim.note or "",
                            _value(anchor.kind) if anchor is not None else "unresolved",
                            getattr(anchor, "start_utf16", None),
                            getattr(anchor, "end_utf16", None),
                        ],
                    )
        return len(rows)

    def load(self, proposals: int, open_escalations: int, resolved_escalations: int) -> dict:
        """Add `proposals` proposals, of which `open_escalations` have an unresolved escalation."""
        first = self.next_proposal
        last = first + proposals - 1
        self.next_proposal = last + 1
        params = {
            "first": first,
            "last": last,
            "n": proposals,
            "open": open_escalations,
            "resolved": min(resolved_escalations, proposals - open_escalations),
            "spread": _SPREAD,
            "templates": self.template_count,
            "now": self.now,
            "panel": self.panel.pk,
            "panel_version": self.panel.version,
            "snapshot": json.dumps(self.snapshot),
            "checker": self.checker.pk,
            "checker_name": self.checker.name,
            "checker_version": self.checker.version,
            # Escalations are claimed only when there are reviewers to claim them.
            "users": [user.pk for user in self.users] or [0],
            "has_users": bool(self.users),
        }
        counts = {}
        with self.connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            indexes = self._drop_secondary_indexes(cursor)
            cursor.execute("SET session_replication_role = replica")
            try:
                for table, sql in _load_statements(self.lenses):
                    started = time.monotonic()
                    cursor.execute(sql, params)
                    counts[table] = cursor.rowcount
                    self.seconds[table] = time.monotonic() - started
            finally:
                cursor.execute("SET session_replication_role = DEFAULT")
            started = time.monotonic()
            self._fill_search(first, last)
            self.seconds["search vectors"] = time.monotonic() - started
            # Inside a transaction (the suite loads a tiny size in its test's), the foreign
            # keys' deferred checks of those updates must run before an index is built.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            started = time.monotonic()
            for definition in indexes:
                cursor.execute(definition)
            self.seconds["indexes"] = time.monotonic() - started
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('review_proposal', 'id'), %s)", [last]
            )
        return {
            "proposals": counts["review_proposal"],
            "judgements": counts["review_judgement"],
            "claims": counts["review_claim"],
            "evidence": counts["review_evidence"],
            "escalations": counts["review_escalation"],
            "decisions": counts["review_decision"],
        }

    def _fill_search(self, first: int, last: int) -> None:
        """The open escalations' search vectors, with the app's own expression (see 0011)."""
        from django.db.models import OuterRef, Subquery

        from reviewapp.review.models import Escalation, Proposal
        from reviewapp.review.search import proposal_search_vector

        Escalation.objects.filter(
            status__in=["open", "claimed"], proposal_id__gte=first, proposal_id__lte=last
        ).update(
            search=Subquery(
                Proposal.objects.filter(pk=OuterRef("proposal_id")).values(
                    v=proposal_search_vector()
                )
            )
        )

    def vacuum_analyze(self) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

    def _drop_secondary_indexes(self, cursor) -> list[str]:
        """Drop the loaded tables' indexes that back no constraint; returns their definitions."""
        cursor.execute(
            """
            SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
            FROM pg_index i
            WHERE i.indrelid = ANY(%s::regclass[])
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
            """,
            [list(self.TABLES)],
        )
        found = cursor.fetchall()
        for name, _ in found:
            cursor.execute(f"DROP INDEX {name}")
        return [definition for _, definition in found]


# The proposals of one load, each with its rank in the spread (see _SPREAD):
# ranks below %(open)s are escalated, the next %(resolved)s had an escalation
# a reviewer resolved. Created 20 s apart, the newest ids newest.
_BATCH = """
    SELECT i, i %% %(templates)s AS t, ((i - %(first)s)::bigint * %(spread)s) %% %(n)s AS rank,
           %(now)s::timestamptz - (%(last)s + 1 - i) * interval '20 seconds' AS created
    FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i
"""


def _load_statements(lenses) -> list[tuple[str, str]]:
    """One `INSERT … SELECT` per table, its columns from the model (`support.bulk_sql`):
    what a column here does not say is the model's default."""
    from reviewapp.review.models import Claim, Decision, Escalation, Evidence, Judgement, Proposal

    lens_rows = ", ".join(
        f"({k}, {lens.pk}, {lens.version}, '{lens.name}')" for k, lens in enumerate(lenses)
    )
    return [
        ("review_proposal", s.insert_select(Proposal, _PROPOSAL, _PROPOSAL_FROM)),
        ("review_judgement", s.insert_select(Judgement, _JUDGEMENT, _judgement_from(lens_rows))),
        ("review_claim", s.insert_select(Claim, _CLAIM, _CLAIM_FROM)),
        ("review_evidence", s.insert_select(Evidence, _EVIDENCE, f"FROM ({_BATCH}) b")),
        ("review_escalation", s.insert_select(Escalation, _ESCALATION, _ESCALATION_FROM)),
        ("review_decision", s.insert_select(Decision, _DECISION, _DECISION_FROM)),
    ]


_PROPOSAL = {
    "id": "b.i",
    "panel_id": "%(panel)s",
    "panel_version": "%(panel_version)s",
    "panel_snapshot": "%(snapshot)s::jsonb",
    "title": "t.title || ' #' || b.i",
    "content": "c.content",
    "thought_process": "t.thought",
    "metadata": "jsonb_build_object('agent', 'bench', 'ticket', b.i)",
    "external_ref": "'bench-' || b.i",
    "content_sha256": "encode(sha256(convert_to(c.content, 'UTF8')), 'hex')",
    "request_sha256": "encode(sha256(convert_to(b.i::text, 'UTF8')), 'hex')",
    "status": "CASE WHEN b.rank < %(open)s THEN 'escalated' ELSE 'decided' END",
    "lenses_asked": "3",
    "lenses_answered": "3",
    "tally": """CASE WHEN b.rank < %(open)s THEN jsonb_build_object(
                   'passed', 1, 'failed', 2, 'asked', 3, 'need', 2,
                   'outcome', CASE WHEN b.i %% 2 = 1 THEN 'no_quorum' ELSE 'reached_fail' END)
               ELSE '{"passed": 3, "failed": 0, "asked": 3, "need": 2,
                      "outcome": "reached_pass"}'::jsonb END""",
    "evaluation_started_at": "b.created + interval '1 second'",
    "finalized_at": "b.created + interval '3 seconds'",
    "created_at": "b.created",
    "updated_at": "b.created + interval '3 seconds'",
}
_PROPOSAL_FROM = f"""
    FROM ({_BATCH}) b
    JOIN bench_template t ON t.t = b.t
    CROSS JOIN LATERAL (
        SELECT t.body || E'\\n\\nTicket #' || lpad(b.i::text, 7, '0') AS content
    ) c
"""

_JUDGEMENT = {
    "proposal_id": "b.i",
    "lens_id": "l.id",
    "lens_name": "l.name",
    "lens_version": "l.version",
    "verdict": "a.verdict",
    "rationale": "a.rationale",
    "raw_response": "a.raw_response",
    "attempts": "1",
    "requote_rounds": "0",
    "created_at": "b.created",
}


def _judgement_from(lens_rows: str) -> str:
    return f"""
    FROM ({_BATCH}) b
    CROSS JOIN (VALUES {lens_rows}) AS l(k, id, version, name)
    JOIN bench_answer a ON a.t = b.t AND a.lens_id = l.id
      AND a.verdict = CASE WHEN b.rank < %(open)s AND l.k > 0 AND b.i %% 2 = 1
                           THEN 'fail' ELSE 'pass' END
    ORDER BY b.i, l.k
    """


_CLAIM = {
    "judgement_id": "j.id",
    **{
        column: f"c.{column}"
        for column in (
            "position",
            "claim_id",
            "cite",
            "text",
            "assessment",
            "note",
            "anchor_kind",
            "start_utf16",
            "end_utf16",
        )
    },
    "dropped": "false",
}
_CLAIM_FROM = """
    FROM review_judgement j
    JOIN bench_claim c ON c.t = j.proposal_id %% %(templates)s
    WHERE j.proposal_id BETWEEN %(first)s AND %(last)s
    ORDER BY j.id, c.position
"""

_EVIDENCE = {
    "proposal_id": "b.i",
    "checker_id": "%(checker)s",
    "checker_name": "%(checker_name)s::text",
    "checker_version": "%(checker_version)s",
    "verdict": "'pass'",
    "reason": "''",
    "digests": "jsonb_build_object('content_sha256', repeat('0', 64))",
    "unenforced": "'[]'::jsonb",
    "payload": """json_build_object('checker', %(checker_name)s::text, 'proposal', b.i,
                                    'verdict', 'pass')::text""",
    "signature": "repeat('A', 88)",
    "key_id": "'bench-key'",
    "created_at": "b.created",
}

# 1 in 10 open escalations is claimed by one of the reviewers.
_ESCALATION = {
    "proposal_id": "b.i",
    "reasons": """CASE WHEN b.i %% 7 = 0 THEN '["inconclusive"]'::jsonb ELSE '[]'::jsonb END
               || CASE WHEN b.i %% 2 = 1 THEN '["no_quorum"]'::jsonb
                       ELSE '["lens_failed"]'::jsonb END""",
    "detail": """'{"explanation": "the panel reached no quorum", "failed_lenses": [],
                  "inconclusive_checkers": []}'::jsonb""",
    "status": "s.status",
    "claimed_by_id": """CASE WHEN s.status = 'claimed'
                    THEN (%(users)s::bigint[])[1 + b.i %% cardinality(%(users)s::bigint[])]
               END""",
    "claimed_at": """CASE WHEN s.status = 'claimed'
                    THEN %(now)s::timestamptz - interval '5 minutes' END""",
    "resolved_at": "CASE WHEN s.status = 'resolved' THEN b.created + interval '1 hour' END",
    "created_at": "b.created + interval '3 seconds'",
}
_ESCALATION_FROM = f"""
    FROM ({_BATCH}) b
    CROSS JOIN LATERAL (
        SELECT CASE
            WHEN b.rank >= %(open)s THEN 'resolved'
            WHEN b.rank %% 10 = 0 AND %(has_users)s THEN 'claimed'
            ELSE 'open' END AS status
    ) s
    WHERE b.rank < %(open)s + %(resolved)s
    ORDER BY b.i
"""

# Every proposal not escalated now is decided; a reviewer decided the ones whose
# escalation was resolved.
_DECISION = {
    "proposal_id": "b.i",
    "escalation_id": "e.id",
    "outcome": "CASE WHEN b.i %% 5 = 0 THEN 'rejected' ELSE 'approved' END",
    "basis": "CASE WHEN e.id IS NULL THEN 'system' ELSE 'reviewer' END",
    "decided_by_name": "CASE WHEN e.id IS NULL THEN 'system' ELSE 'rita' END",
    "rationale": "'Checked against the policy.'",
    "payload": """json_build_object('type', 'reviewapp.decision/v1',
                                    'proposal', json_build_object('id', b.i))::text""",
    "signature": "repeat('A', 88)",
    "key_id": "'bench-key'",
    "prev_hash": "encode(sha256(convert_to('prev-' || b.i, 'UTF8')), 'hex')",
    "hash": "encode(sha256(convert_to('hash-' || b.i, 'UTF8')), 'hex')",
    "created_at": "b.created + interval '4 seconds'",
}
_DECISION_FROM = f"""
    FROM ({_BATCH}) b
    LEFT JOIN review_escalation e ON e.proposal_id = b.i AND e.status = 'resolved'
    WHERE b.rank >= %(open)s
    ORDER BY b.i
"""


# Proposal 3 is in the first ten and escalated: its ticket number matches it alone.
SEARCHES = {
    "search: a word in 1 in 8 (refund)": "/?q=refund",
    "search: a word in every one (ticket)": "/?q=ticket",
    'search: a phrase ("breach notification")': "/?q=%22breach+notification%22",
    "search: one ticket number": "/?q=0000003",
    "search: two words that never meet": "/?q=refund+password",
    "search: refund, reason none has": "/?q=refund&reason=no_quorum",
}


def page_urls() -> dict[str, str]:
    """The pages measured, by label: the inbox, its last page, the searches, a proposal."""
    from reviewapp.review.models import Escalation
    from reviewapp.web.inbox import COUNT_LIMIT

    first = Escalation.objects.filter(status__in=["open", "claimed"]).first().proposal_id
    open_count = Escalation.objects.filter(status__in=["open", "claimed"]).count()
    # A list pages through its first COUNT_LIMIT rows (reviewapp.web.inbox).
    last_page = max(1, -(-min(open_count, COUNT_LIMIT) // 25))
    return {
        "inbox /": "/",
        "inbox ?reason=no_quorum": "/?reason=no_quorum",
        "inbox last page": f"/?page={last_page}",
        **SEARCHES,
        "proposal page (escalated)": f"/proposals/{first}",
    }


def count_queries(client, url: str) -> tuple[int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, HTTP_HOST="127.0.0.1")
    return len(ctx), response.status_code


LUA = r"""
local paths = { %(paths)s }
local cookie = "%(cookie)s"
math.randomseed(%(seed)d)
request = function()
  local path = paths[math.random(#paths)]
  return wrk.format("GET", path, { ["Cookie"] = cookie })
end
local bad = 0
response = function(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT requests=%%d duration_us=%%d p50_us=%%d p95_us=%%d p99_us=%%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95),
    latency:percentile(99)))
end
"""


def wrk(
    port: int, paths: list[str], cookie: str, duration: int, connections: int, tmp: Path
) -> dict:
    script = tmp / f"get-{time.time_ns()}.lua"
    script.write_text(
        LUA
        % {
            "paths": ", ".join(json.dumps(p) for p in paths),
            "cookie": cookie,
            "seed": SEED,
        }
    )
    result = subprocess.run(
        [
            "wrk",
            "-t",
            "1",
            "-c",
            str(connections),
            "-d",
            f"{duration}s",
            "--timeout",
            "30s",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}/",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = {"non2xx": 0}
    for raw in result.stdout.splitlines():
        if raw.startswith("RESULT "):
            for pair in raw.split()[1:]:
                key, _, value = pair.partition("=")
                out[key] = int(value)
        if "Non-2xx" in raw:
            out["non2xx"] = int(raw.rsplit(":", 1)[1])
    return out


def server_times(access_log: Path, offset: int, prefix: str) -> list[float]:
    out = []
    with open(access_log, "rb") as f:
        f.seek(offset)
        for raw in f.read().decode(errors="replace").splitlines():
            parts = raw.split()
            if len(parts) == 4 and parts[0] == "GET" and parts[1].startswith(prefix):
                out.append(int(parts[3]) / 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proposals", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=100_000, help="unresolved escalations")
    parser.add_argument("--duration", type=int, default=15, help="seconds per page under wrk")
    parser.add_argument("--connections", type=int, default=2, help="wrk -c (2 = one per worker)")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument(
        "--warmup", type=int, default=3, help="seconds of wrk before each page's measurement"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure the database the previous run loaded, without re-creating it",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")

    s.heading(
        f"reviewer pages with {args.proposals:,} proposals and {args.open:,} open escalations"
    )
    s.line("load average at start", s.load_average())
    if args.reuse:
        env = s.bench_env("inbox")
        s.django_setup(env)
    else:
        env = s.fresh_stack("inbox")
        s.pipeline_panel()
    s.collectstatic()
    reviewer, cookie = s.reviewer_session("bench-reviewer")

    from django.conf import settings
    from django.test import Client

    from reviewapp.review.models import Escalation, Proposal

    client = Client()
    client.force_login(reviewer)

    counts_small = {}
    if not args.reuse:
        loader = Loader()
        loader.users = [reviewer, *(s.reviewer_session(f"bench-reviewer-{k}")[0] for k in range(3))]
        small = loader.load(10, 10, 0)
        counts_small = {label: count_queries(client, url) for label, url in page_urls().items()}
        started = time.monotonic()
        big = loader.load(args.proposals - small["proposals"], args.open - 10, args.open // 2)
        loaded = time.monotonic() - started
        s.line(
            "bulk load (INSERT ... SELECT)",
            f"{loaded:.0f} s: " + ", ".join(f"{k} {small[k] + big[k]:,}" for k in big),
        )
        s.line(
            "  of which",
            ", ".join(f"{table} {seconds:.0f} s" for table, seconds in loader.seconds.items()),
        )
        started = time.monotonic()
        loader.vacuum_analyze()
        s.line("VACUUM ANALYZE", f"{time.monotonic() - started:.0f} s")
    open_count = Escalation.objects.filter(status__in=["open", "claimed"]).count()
    s.line("rows", f"proposals {Proposal.objects.count():,}, open escalations {open_count:,}")
    pages = page_urls()
    counts_big = {label: count_queries(client, url) for label, url in pages.items()}

    s.heading("queries per page (CaptureQueriesContext, in-process)")
    for label, (n_big, st_big) in counts_big.items():
        if label not in counts_small:
            s.line(label, f"{n_big} with {open_count:,} (HTTP {st_big})")
            continue
        n_small, st_small = counts_small[label]
        verdict = "same" if n_small == n_big else "DIFFERENT"
        s.line(
            label,
            f"{n_small} with 10 rows, {n_big} with {open_count:,} ({verdict}; "
            f"HTTP {st_small}/{st_big})",
        )

    escalated_ids = list(
        Escalation.objects.filter(status__in=["open", "claimed"]).values_list(
            "proposal_id", flat=True
        )
    )
    sample = random.Random(SEED).sample(escalated_ids, min(500, len(escalated_ids)))
    access_log = Path(env["REVIEWAPP_VAR_DIR"]) / "logs" / f"access-{time.time_ns()}.log"
    web, port = s.start_gunicorn(env, workers=args.web_workers, access_log=access_log)
    cookie_header = f"{settings.SESSION_COOKIE_NAME}={cookie}"
    runs = [
        (label, [url], url.split("?")[0]) for label, url in pages.items() if "proposal" not in label
    ]
    runs.append(
        (
            "proposal pages (500 random escalated)",
            [f"/proposals/{i}" for i in sample],
            "/proposals/",
        )
    )
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, paths, prefix in runs:
                if args.warmup:
                    wrk(port, paths, cookie_header, args.warmup, args.connections, Path(tmp))
                    time.sleep(0.3)
                offset = access_log.stat().st_size
                meter = s.CpuMeter(web=web.pid)
                meter.start()
                out = wrk(port, paths, cookie_header, args.duration, args.connections, Path(tmp))
                out["cpu"] = meter.stop()
                time.sleep(0.5)
                out["server"] = server_times(access_log, offset, prefix)
                results.append((label, out))
    finally:
        web.stop()

    s.heading(
        f"under load: wrk -t1 -c{args.connections}, {args.duration} s per page, gunicorn "
        f"{args.web_workers} workers"
    )
    worst = 0.0
    for label, out in results:
        server = out["server"]
        p95 = s.percentile(server, 95)
        worst = max(worst, p95)
        s.line(
            label,
            f"{out['requests'] / (out['duration_us'] / 1e6):.1f} req/s, non-200 {out['non2xx']}",
        )
        s.line(
            "  server p50 / p95 / p99 (gunicorn)",
            f"{s.percentile(server, 50):.1f} / {p95:.1f} / {s.percentile(server, 99):.1f} ms",
        )
        s.line(
            "  CPU per page: gunicorn + PostgreSQL",
            f"{1000 * out['cpu']['web'] / max(out['requests'], 1):.1f} + "
            f"{1000 * out['cpu']['postgres'] / max(out['requests'], 1):.1f} ms",
        )
        s.line(
            "  client p50 / p95 / p99 (wrk)",
            f"{out['p50_us'] / 1000:.1f} / {out['p95_us'] / 1000:.1f} / "
            f"{out['p99_us'] / 1000:.1f} ms",
        )
    s.line(
        "worst p95 server time",
        f"{worst:.1f} ms "
        f"({'meets' if worst < TARGET_P95_MS else 'MISSES'} the {TARGET_P95_MS:.0f} ms target)",
    )
    s.line("load average at end", s.load_average())


if __name__ == "__main__":
    main()
