"""The reviewer pages under volume: 100,000 proposals, 10,000 open escalations.

Run:  .venv/bin/python benchmarks/inbox.py [--proposals 100000] [--open 10000] [--duration 15]

On a fresh `reviewapp_bench` PostgreSQL database it bulk-loads (COPY, not the
pipeline) proposals on a 3-lens panel with their judgements (3 each, 2
grounded claims each), checker evidence, decisions for the decided ones, and
escalations: `--open` unresolved (9 in 10 open, 1 in 10 claimed), plus as
many resolved ones again. Content comes from the demo's support and
regulatory replies, so claims anchor into real text (emoji, CRLF, markdown).

1. Query counts, in-process with CaptureQueriesContext, for the inbox (`/`)
   and a proposal page (`/proposals/<id>`): first with 10 proposals and 10 open
   escalations, then after loading the full volume. They must be equal.
2. Server time under load: gunicorn (2 sync workers, DEBUG=false, ANALYZEd
   tables) driven by `wrk` over loopback with a reviewer's session cookie, for
   the inbox, a filtered inbox, the inbox's last page, and proposal pages of
   random escalated proposals. p50/p95/p99 come from gunicorn's own access log
   (%(D)s: server time) and from wrk (client time). Target: p95 < 150 ms.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _support as s  # noqa: E402

TARGET_P95_MS = 150.0
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


class Loader:
    """Writes rows with COPY, ids assigned here; sequences are moved past them at the end."""

    def __init__(self):
        from django.db import connection

        from reviewapp.review.models import CheckerConfig, Lens, Panel
        from reviewapp.review.services.proposals import panel_snapshot

        self.connection = connection
        self.panel = Panel.objects.get(name="bench-panel")
        self.snapshot = panel_snapshot(self.panel)
        self.lenses = list(Lens.objects.filter(name__in=s.PIPELINE_LENSES).order_by("name"))
        self.checker = CheckerConfig.objects.get(name="bench-mandate")
        self.templates = templates()
        self.grounded = [ground_template(t) for t in self.templates]
        self.rng = random.Random(SEED)
        self.next_ids = {}
        from django.utils import timezone

        self.now = timezone.now()
        self.users = []

    def _ids(self, table: str, count: int) -> range:
        start = self.next_ids.get(table, 1)
        self.next_ids[table] = start + count
        return range(start, start + count)

    def copy(self, table: str, columns: list[str], rows) -> int:
        from psycopg.types.json import Jsonb

        n = 0
        with self.connection.cursor() as cursor:
            raw = cursor.cursor
            with raw.copy(f'COPY "{table}" ({", ".join(columns)}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row([Jsonb(v) if isinstance(v, dict | list) else v for v in row])
                    n += 1
        return n

    def load(self, proposals: int, open_escalations: int, resolved_escalations: int) -> dict:
        """Add `proposals` proposals, of which `open_escalations` have an unresolved escalation."""
        rng = self.rng
        ids = self._ids("review_proposal", proposals)
        escalated = set(rng.sample(list(ids), open_escalations))
        rest = [i for i in ids if i not in escalated]
        resolved = set(rng.sample(rest, min(resolved_escalations, len(rest))))
        status = {}
        for i in ids:
            status[i] = "escalated" if i in escalated else "decided"
        lens_versions = {lens.pk: lens.version for lens in self.lenses}

        def when(i: int):
            # Spread over 30 days, newest ids newest.
            return self.now - timedelta(seconds=(self.next_ids["review_proposal"] - i) * 20)

        def proposal_rows():
            for i in ids:
                t = i % len(self.templates)
                template = self.templates[t]
                content = f"{template['body']}\n\nTicket #{i:07d}"
                created = when(i)
                finalized = created + timedelta(seconds=3)
                passed = 1 if i in escalated else 3
                tally = {
                    "passed": passed,
                    "failed": 3 - passed,
                    "asked": 3,
                    "need": 2,
                    "outcome": "no_quorum"
                    if i in escalated and i % 2
                    else ("reached_fail" if passed < 2 else "reached_pass"),
                }
                yield [
                    i,
                    self.panel.pk,
                    self.panel.version,
                    self.snapshot,
                    None,
                    None,
                    f"{template['title']} #{i}",
                    content,
                    template["thought"],
                    {"agent": "bench", "ticket": i},
                    f"bench-{i}",
                    hashlib.sha256(content.encode()).hexdigest(),
                    hashlib.sha256(str(i).encode()).hexdigest(),
                    status[i],
                    3,
                    3,
                    tally,
                    created + timedelta(seconds=1),
                    finalized,
                    created,
                    finalized,
                    0,
                    "",
                ]

        n_proposals = self.copy(
            "review_proposal",
            [
                "id",
                "panel_id",
                "panel_version",
                "panel_snapshot",
                "client_id",
                "submitted_by_id",
                "title",
                "content",
                "thought_process",
                "metadata",
                "external_ref",
                "content_sha256",
                "request_sha256",
                "status",
                "lenses_asked",
                "lenses_answered",
                "tally",
                "evaluation_started_at",
                "finalized_at",
                "created_at",
                "updated_at",
                "final_step_attempts",
                "final_step_error",
            ],
            proposal_rows(),
        )

        judgement_ids = self._ids("review_judgement", proposals * len(self.lenses))
        claim_ids = iter(self._ids("review_claim", proposals * len(self.lenses) * 2))
        claims: list[list] = []

        def judgement_rows():
            jid = iter(judgement_ids)
            for i in ids:
                t = i % len(self.templates)
                for lens_i, lens in enumerate(self.lenses):
                    verdict = "fail" if (i in escalated and lens_i > 0 and i % 2) else "pass"
                    j = next(jid)
                    answer = {
                        "verdict": verdict,
                        "rationale": f"{lens.name} judged {verdict} on the quoted passages.",
                        "claims": [
                            {"cite": c, "assessment": "verified"}
                            for c in self.templates[t]["cites"]
                        ],
                    }
                    yield [
                        j,
                        i,
                        lens.pk,
                        lens.name,
                        lens_versions[lens.pk],
                        verdict,
                        answer["rationale"],
                        json.dumps(answer, ensure_ascii=False),
                        1,
                        0,
                        when(i),
                    ]
                    for position, claim in enumerate(self.grounded[t]):
                        anchor = claim.anchor
                        claims.append(
                            [
                                next(claim_ids),
                                j,
                                position,
                                claim.claim_id or "",
                                claim.cite,
                                claim.text,
                                _value(claim.assessment),
                                claim.note or "",
                                _value(anchor.kind) if anchor is not None else "unresolved",
                                getattr(anchor, "start_utf16", None),
                                getattr(anchor, "end_utf16", None),
                                False,
                            ]
                        )

        n_judgements = self.copy(
            "review_judgement",
            [
                "id",
                "proposal_id",
                "lens_id",
                "lens_name",
                "lens_version",
                "verdict",
                "rationale",
                "raw_response",
                "attempts",
                "requote_rounds",
                "created_at",
            ],
            judgement_rows(),
        )
        n_claims = self.copy(
            "review_claim",
            [
                "id",
                "judgement_id",
                "position",
                "claim_id",
                "cite",
                "text",
                "assessment",
                "note",
                "anchor_kind",
                "start_utf16",
                "end_utf16",
                "dropped",
            ],
            claims,
        )
        claims.clear()

        evidence_ids = iter(self._ids("review_evidence", proposals))
        n_evidence = self.copy(
            "review_evidence",
            [
                "id",
                "proposal_id",
                "checker_id",
                "checker_name",
                "checker_version",
                "verdict",
                "reason",
                "digests",
                "unenforced",
                "payload",
                "signature",
                "key_id",
                "created_at",
            ],
            (
                [
                    next(evidence_ids),
                    i,
                    self.checker.pk,
                    self.checker.name,
                    self.checker.version,
                    "pass",
                    "",
                    {"content_sha256": "0" * 64},
                    [],
                    json.dumps({"checker": self.checker.name, "proposal": i, "verdict": "pass"}),
                    "A" * 88,
                    "bench-key",
                    when(i),
                ]
                for i in ids
            ),
        )

        escalation_rows = []
        escalation_of = {}
        for i in sorted(escalated | resolved):
            e = self._ids("review_escalation", 1)[0]
            escalation_of[i] = e
            reasons = ["no_quorum"] if i % 2 else ["lens_failed"]
            if i % 7 == 0:
                reasons = ["inconclusive", *reasons]
            if i in resolved:
                state, claimed_by, claimed_at, resolved_at = (
                    "resolved",
                    None,
                    None,
                    when(i) + timedelta(hours=1),
                )
            elif i % 10 == 0 and self.users:
                state, claimed_by, claimed_at, resolved_at = (
                    "claimed",
                    self.users[i % len(self.users)].pk,
                    self.now - timedelta(minutes=5),
                    None,
                )
            else:
                state, claimed_by, claimed_at, resolved_at = "open", None, None, None
            escalation_rows.append(
                [
                    e,
                    i,
                    reasons,
                    {
                        "explanation": "the panel reached no quorum",
                        "failed_lenses": [],
                        "inconclusive_checkers": [],
                    },
                    state,
                    claimed_by,
                    claimed_at,
                    resolved_at,
                    when(i) + timedelta(seconds=3),
                ]
            )
        n_escalations = self.copy(
            "review_escalation",
            [
                "id",
                "proposal_id",
                "reasons",
                "detail",
                "status",
                "claimed_by_id",
                "claimed_at",
                "resolved_at",
                "created_at",
            ],
            escalation_rows,
        )

        def decision_rows():
            for i in ids:
                if i in escalated:
                    continue
                d = self._ids("review_decision", 1)[0]
                reviewer = i in resolved
                yield [
                    d,
                    i,
                    escalation_of.get(i) if reviewer else None,
                    "approved" if i % 5 else "rejected",
                    "reviewer" if reviewer else "system",
                    None,
                    "rita" if reviewer else "system",
                    "Checked against the policy.",
                    json.dumps({"type": "reviewapp.decision/v1", "proposal": {"id": i}}),
                    "A" * 88,
                    "bench-key",
                    hashlib.sha256(f"prev-{d}".encode()).hexdigest(),
                    hashlib.sha256(f"hash-{d}".encode()).hexdigest(),
                    when(i) + timedelta(seconds=4),
                ]

        n_decisions = self.copy(
            "review_decision",
            [
                "id",
                "proposal_id",
                "escalation_id",
                "outcome",
                "basis",
                "decided_by_id",
                "decided_by_name",
                "rationale",
                "payload",
                "signature",
                "key_id",
                "prev_hash",
                "hash",
                "created_at",
            ],
            decision_rows(),
        )
        self.reset_sequences()
        return {
            "proposals": n_proposals,
            "judgements": n_judgements,
            "claims": n_claims,
            "evidence": n_evidence,
            "escalations": n_escalations,
            "decisions": n_decisions,
        }

    def reset_sequences(self) -> None:
        with self.connection.cursor() as cursor:
            for table, next_id in self.next_ids.items():
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)", [next_id - 1]
                )


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
    parser.add_argument("--proposals", type=int, default=100_000)
    parser.add_argument("--open", type=int, default=10_000, help="unresolved escalations")
    parser.add_argument("--duration", type=int, default=15, help="seconds per page under wrk")
    parser.add_argument("--connections", type=int, default=2, help="wrk -c (2 = one per worker)")
    parser.add_argument("--web-workers", type=int, default=2)
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
        reviewer, cookie = s.reviewer_session("bench-reviewer")
    else:
        env = s.fresh_stack("inbox")
        s.collectstatic()
        s.pipeline_panel()
        reviewer, cookie = s.reviewer_session("bench-reviewer")
        others = [s.reviewer_session(f"bench-reviewer-{k}")[0] for k in range(3)]

    from django.conf import settings
    from django.test import Client

    from reviewapp.review.models import Escalation, Proposal

    client = Client()
    client.force_login(reviewer)

    def page_urls() -> dict[str, str]:
        first = Escalation.objects.filter(status__in=["open", "claimed"]).first().proposal_id
        return {
            "inbox /": "/",
            "inbox ?reason=no_quorum": "/?reason=no_quorum",
            "inbox ?q=refund (search)": "/?q=refund",
            "proposal page (escalated)": f"/proposals/{first}",
        }

    counts_small = {}
    if not args.reuse:
        loader = Loader()
        loader.users = [reviewer, *others]
        small = loader.load(10, 10, 0)
        counts_small = {label: count_queries(client, url) for label, url in page_urls().items()}
        started = time.monotonic()
        big = loader.load(args.proposals - small["proposals"], args.open - 10, args.open // 2)
        with loader.connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        s.line(
            "bulk load (COPY) + ANALYZE",
            f"{time.monotonic() - started:.1f} s: "
            + ", ".join(f"{k} {small[k] + big[k]:,}" for k in big),
        )
    open_count = Escalation.objects.filter(status__in=["open", "claimed"]).count()
    s.line("rows", f"proposals {Proposal.objects.count():,}, open escalations {open_count:,}")
    pages = page_urls()
    last_page = -(-open_count // 25)
    pages_big = {**pages, "inbox last page": f"/?page={last_page}"}
    counts_big = {label: count_queries(client, url) for label, url in pages_big.items()}

    s.heading("queries per page (CaptureQueriesContext, in-process)")
    for label in pages:
        n_big, st_big = counts_big[label]
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
    s.line("inbox last page", f"{counts_big['inbox last page'][0]} queries")

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
        ("inbox /", ["/"], "/"),
        ("inbox ?reason=no_quorum", ["/?reason=no_quorum"], "/"),
        ("inbox ?q=refund (search)", ["/?q=refund"], "/"),
        ("inbox last page", [f"/?page={last_page}"], "/"),
        (
            "proposal pages (500 random escalated)",
            [f"/proposals/{i}" for i in sample],
            "/proposals/",
        ),
    ]
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, paths, prefix in runs:
                wrk(port, paths, cookie_header, 3, args.connections, Path(tmp))  # warm-up
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
