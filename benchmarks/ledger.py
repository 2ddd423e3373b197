"""Benchmark the ledger: append 100,000 signed decisions, then verify them all.

Run: python benchmarks/ledger.py [--count N] [--batch B] [--workers W] [--postgres] [--keep]
     python benchmarks/ledger.py --appenders 1,2,4,8 [--appends N] [--keep]

With --appenders: concurrent appends on PostgreSQL only (the server of
DATABASE_URL if it is PostgreSQL, else BENCH_PG_URL; the database
`<DATABASE_URL's name>_bench_ledger`, or `reviewapp_bench_ledger`). At each
level, that many processes append --appends decisions between them through the
real `decision_append`, each in its own transaction, whose commit wakes the
sequencer in that process as in production. It prints, per level:

- decisions/s end to end: from the start until every decision is signed,
  committed and has its ledger index;
- commit-to-index p50/p95: from each decision's COMMIT (an on_commit hook
  registered before the sequencer's) to the moment the sequencer that indexed it
  held its lock (the entry's `sequenced_at`); the batch's own statement and
  COMMIT follow, and are the hold below;
- the sequencer's lock hold per batch that indexed something (p50/p95, from the
  lock's grant to the end of COMMIT) and the mean batch size;
- CPU per decision: the appenders' own and their PostgreSQL backends' (each
  appender's sequencer runs on its own connection), when the server is on this
  machine.

Then it integrates the tree, signs a checkpoint and verifies the whole ledger.
Targets: >= 1,000 decisions/s with 8 appenders; commit-to-index p95 <= 250 ms.

Sets up its own database — a temporary SQLite file under var/bench/ledger-<pid>,
or with --postgres the database `reviewapp_bench_ledger` on BENCH_PG_URL
(default postgres://postgres@127.0.0.1:5432), dropped and re-created — and
migrates it (the append-only triggers included). Then:

1. appends decisions one at a time through the real `decision_append`
   (signing, storing, one transaction each, sequenced after each commit) and
   reports decisions per second;
2. creates the bulk of the decisions as real rows with synthetic but genuinely
   signed payloads, appends them to the ledger in batches through
   `ledger_append` (what a backfill does) and sequences them, reporting appends
   per second;
3. signs a checkpoint and verifies everything three ways, timing each:
   `manage.py verify_ledger` (every signature, every row against its signed
   bytes, stored subtrees, checkpoints), `export_decisions`, and the
   offline verifier `reviewapp-verify` on the export, in a fresh
   process without Django settings.

Target: verifying 100,000 entries in under 30 s on a 2-core machine.
"""

import argparse
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
PG_DB = "reviewapp_bench_ledger"
TARGET_APPENDS_PER_SECOND = 1000
TARGET_INDEX_P95_MS = 250


def _pg_server_and_db() -> tuple[str, str]:
    """DATABASE_URL's server if it is PostgreSQL (a database beside its own), else BENCH_PG_URL."""
    from urllib.parse import urlsplit

    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}", f"{parts.path.lstrip('/')}_bench_ledger"
    return PG_URL, PG_DB


SEED = base64.b64encode(b"reviewapp-ledger-benchmark-key!!").decode()
TARGET_SECONDS = 30.0


def _public_key_b64(seed_b64: str) -> str:
    from nacl.signing import SigningKey

    return base64.b64encode(bytes(SigningKey(base64.b64decode(seed_b64)).verify_key)).decode()


def setup(args) -> Path:
    var_dir = ROOT / "var" / "bench" / f"ledger-{os.getpid()}"
    var_dir.mkdir(parents=True, exist_ok=True)
    if args.postgres:
        import psycopg

        server, name = args.pg
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        database_url = f"{server}/{name}"
    else:
        database_url = f"sqlite:///{var_dir / 'ledger.sqlite3'}"
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "DEBUG": "false",
            "SECRET_KEY": "benchmark-only-" + "k" * 50,
            "DATABASE_URL": database_url,
            "REVIEWAPP_VAR_DIR": str(var_dir),
            "REVIEWAPP_SIGNING_KEY": SEED,
            # The trust anchor: production verifies with anchored keys only (DEBUG is off).
            "REVIEWAPP_TRUSTED_KEYS": _public_key_b64(SEED),
            "CELERY_BROKER_URL": "filesystem://",
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return var_dir


def panel():
    from reviewapp.review.models import Lens, Panel, PanelLens

    lens = Lens.objects.create(name="bench-lens", backend=Lens.Backend.RECORDED)
    p = Panel.objects.create(name="bench-panel", need=1)
    PanelLens.objects.create(panel=p, lens=lens, position=0)
    return p


def proposals(p, count: int, offset: int):
    from reviewapp.review.models import Proposal

    snapshot = {
        "name": p.name,
        "version": 1,
        "need": 1,
        "lenses": [],
        "checkers": [],
        "requires_sign_off": False,
    }
    rows = []
    for i in range(offset, offset + count):
        content = f"Benchmark proposal {i}: the answer is {i * 7 % 1000}."
        digest = hashlib.sha256(content.encode()).hexdigest()
        rows.append(
            Proposal(
                panel=p,
                panel_version=1,
                panel_snapshot=snapshot,
                content=content,
                content_sha256=digest,
                request_sha256=digest,
                status=Proposal.Status.DECIDED,
            )
        )
    return Proposal.objects.bulk_create(rows, batch_size=1000)


def real_appends(p, count: int) -> float:
    from reviewapp.review.services.decisions import decision_append

    rows = proposals(p, count, 0)
    started = time.perf_counter()
    for proposal in rows:
        decision_append(
            proposal=proposal,
            outcome="approved",
            basis="system",
            rationale="All checkers passed and the panel reached pass.",
        )
    return time.perf_counter() - started


def bulk_appends(p, count: int, batch: int) -> tuple[float, float]:
    """Returns (seconds in ledger_append and sequencing, seconds overall)."""
    from django.db import transaction
    from django.utils import timezone

    from reviewapp.core.signing import sha256_hex
    from reviewapp.ledger.keys import server_signer
    from reviewapp.ledger.services import ledger_append, ledger_sequence, signed_entry
    from reviewapp.review.models import Decision
    from reviewapp.review.services.decisions import DECISION_PAYLOAD_TYPE

    signer = server_signer()
    in_ledger = 0.0
    started = time.perf_counter()
    done = 0
    while done < count:
        n = min(batch, count - done)
        rows = proposals(p, n, 10_000_000 + done)
        decisions = []
        for proposal in rows:
            payload = {
                "type": DECISION_PAYLOAD_TYPE,
                "proposal": {"id": proposal.pk, "content_sha256": proposal.content_sha256},
                "panel": {"name": p.name, "version": 1, "need": 1},
                "lenses": [{"lens_name": "bench-lens", "lens_version": 1}],
                "tally": {
                    "passed": 1,
                    "failed": 0,
                    "asked": 1,
                    "need": 1,
                    "outcome": "reached_pass",
                },
                "evidence": [],
                "escalation": None,
                "outcome": "approved",
                "basis": "system",
                "decided_by": "system",
                "rationale": "All checkers passed and the panel reached pass.",
                "decided_at": timezone.now().isoformat(),
            }
            signed = signer.sign(payload)
            decisions.append(
                Decision(
                    proposal=proposal,
                    outcome="approved",
                    basis="system",
                    decided_by_name="system",
                    rationale=payload["rationale"],
                    payload=signed.payload_bytes.decode(),
                    signature=signed.signature_b64,
                    key_id=signed.key_id,
                    hash=sha256_hex(signed.payload_bytes),
                )
            )
        with transaction.atomic():
            Decision.objects.bulk_create(decisions, batch_size=1000)
            t = time.perf_counter()
            ledger_append(signed_entry("decision", d) for d in decisions)
            in_ledger += time.perf_counter() - t
        t = time.perf_counter()
        ledger_sequence()
        in_ledger += time.perf_counter() - t
        done += n
        print(f"\r  {done:,} / {count:,}", end="", flush=True)
    print()
    return in_ledger, time.perf_counter() - started


def system_decision(proposal, signer):
    """An automatic approval of ``proposal``, through the real `decision_append`."""
    from reviewapp.review.services import decisions

    return decisions.decision_append(
        proposal=proposal,
        outcome="approved",
        basis="system",
        rationale="All checkers passed and the panel reached pass.",
        signer=signer,
        evidence=[],
        lenses=[{"lens_name": "bench-lens", "lens_version": 1}],
    )


def _appender(ids: list[int], start, results) -> None:
    """One appending process: `decision_append` for each proposal, each in its own
    transaction; records each decision's commit time and each sequencer batch's hold, and
    the CPU it and its PostgreSQL backend used (its sequencer runs on that connection)."""
    from django.db import connection, transaction

    from benchmarks.support.measurement import on_cpu_seconds
    from reviewapp.ledger.services import sequence
    from reviewapp.review.models import Proposal
    from reviewapp.review.services import decisions

    connection.close()  # the parent's socket is not this process's to share
    committed: dict[int, float] = {}
    holds: list[tuple[int, float]] = []  # (entries indexed, seconds held) per batch
    lock, batch = sequence._lock, sequence.ledger_sequence_batch
    granted: list[float] = []

    def timed_lock(**kwargs):
        held = lock(**kwargs)
        granted.append(time.perf_counter() if held else None)
        return held

    def timed_batch(**kwargs):
        done = batch(**kwargs)  # returns after its COMMIT
        since = granted.pop()
        if since is not None:  # not a try that found the lock held
            holds.append((done, time.perf_counter() - since))
        return done

    sequence._lock, sequence.ledger_sequence_batch = timed_lock, timed_batch
    rows = list(Proposal.objects.filter(pk__in=ids).order_by("pk"))
    signer = decisions.server_signer()
    with connection.cursor() as cursor:  # this appender's backend, on this machine
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    start.wait()
    cpu, backend_cpu = time.process_time(), on_cpu_seconds(backend)
    for proposal in rows:
        with transaction.atomic():
            # Registered first, so it runs right after COMMIT, before the sequencer's hook.
            transaction.on_commit(lambda pk=proposal.pk: committed.__setitem__(pk, time.time()))
            system_decision(proposal, signer)
    cpu = time.process_time() - cpu
    backend_cpu = on_cpu_seconds(backend) - backend_cpu
    connection.close()
    results.put((committed, holds, cpu, backend_cpu))


def concurrent_appends(p, levels: list[int], appends: int) -> list[dict]:
    """Per level: appenders, decisions/s end to end, commit-to-index and hold figures."""
    import multiprocessing

    from django.db import connection

    from reviewapp.ledger.services import ledger_sequence
    from reviewapp.review.models import RecordEntry

    context = multiprocessing.get_context("fork")
    figures = []
    offset = 20_000_000
    for level in levels:
        rows = proposals(p, appends, offset)
        offset += appends
        ids = [row.pk for row in rows]
        connection.close()  # each child opens its own
        start, results = context.Barrier(level + 1), context.Queue()
        workers = [
            context.Process(target=_appender, args=(ids[i::level], start, results))
            for i in range(level)
        ]
        for worker in workers:
            worker.start()
        start.wait()
        started = time.perf_counter()
        outcomes = [results.get(timeout=600) for _ in workers]
        ledger_sequence()  # normally nothing: each commit woke a sequencer
        elapsed = time.perf_counter() - started
        for worker in workers:
            worker.join()
            if worker.exitcode:
                raise SystemExit(f"an appender failed (exit code {worker.exitcode})")
        committed = {pk: t for c, *_ in outcomes for pk, t in c.items()}
        sequenced = dict(
            RecordEntry.objects.filter(decision__proposal_id__in=ids).values_list(
                "decision__proposal_id", "sequenced_at"
            )
        )
        waits = [sequenced[pk].timestamp() - t for pk, t in committed.items()]
        holds = [hold for _, h, *_ in outcomes for hold in h if hold[0]]
        figures.append(
            {
                "level": level,
                "rate": len(committed) / elapsed,
                "waits": waits,
                "holds": [seconds for _, seconds in holds],
                "batch": sum(n for n, _ in holds) / max(1, len(holds)),
                "cpu_ms": sum(c for _, _, c, _ in outcomes) / len(committed) * 1000,
                "pg_cpu_ms": sum(b for *_, b in outcomes) / len(committed) * 1000,
            }
        )
    return figures


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000 if ordered else 0.0


def appenders_main(args) -> int:
    from django.db import connection

    from reviewapp.ledger.services import checkpoint_create
    from reviewapp.review.in_ledger.verification import ledger_verify

    levels = [int(n) for n in args.appenders.split(",")]
    print(
        f"ledger appenders: {args.appends:,} decisions per level on "
        f"{connection.vendor} ({connection.settings_dict['NAME']}), {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    p = panel()
    figures = concurrent_appends(p, levels, args.appends)
    print(
        f"{'appenders':>9}  {'decisions/s':>11}  {'commit→index p50':>16}  {'p95':>7}  "
        f"{'lock hold/batch p50':>19}  {'p95':>6}  {'entries/batch':>13}  "
        f"{'CPU ms/decision (appenders + PostgreSQL)':>40}"
    )
    for f in figures:
        print(
            f"{f['level']:>9}  {f['rate']:>11,.0f}  {_pct(f['waits'], 0.5):>13.1f} ms  "
            f"{_pct(f['waits'], 0.95):>7.1f}  {_pct(f['holds'], 0.5):>16.2f} ms  "
            f"{_pct(f['holds'], 0.95):>6.2f}  {f['batch']:>13.1f}  "
            f"{f['cpu_ms'] + f['pg_cpu_ms']:>21.2f} ({f['cpu_ms']:.2f} + {f['pg_cpu_ms']:.2f})"
        )
    cpu = figures[-1]["cpu_ms"] + figures[-1]["pg_cpu_ms"]
    unseen = (
        ""
        if figures[-1]["pg_cpu_ms"]
        else " (the PostgreSQL server is not on this machine: appenders only)"
    )
    print(
        f"CPU bound with {figures[-1]['level']} appenders: {cpu:.2f} ms a decision{unseen}, so "
        f"{os.cpu_count()} idle cores would allow at most {os.cpu_count() * 1000 / cpu:,.0f} "
        "decisions/s (the wall-clock rate moves with the neighbours' load)"
    )
    top = figures[-1]
    p95 = max(_pct(f["waits"], 0.95) for f in figures)
    met = top["rate"] >= TARGET_APPENDS_PER_SECOND and p95 <= TARGET_INDEX_P95_MS
    print(
        f"target: >= {TARGET_APPENDS_PER_SECOND:,} decisions/s with {top['level']} appenders "
        f"({top['rate']:,.0f}), commit-to-index p95 <= {TARGET_INDEX_P95_MS} ms (worst "
        f"{p95:.1f}) — {'met' if met else 'MISSED'}; load average {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    checkpoint = checkpoint_create()
    seconds = time.perf_counter() - started
    print(
        f"integrator (checkpoint_create): {checkpoint.tree_size:,} entries into the tree and "
        f"signed in {seconds:.2f}s = {checkpoint.tree_size / seconds:,.0f} entries/s"
    )
    result = ledger_verify(workers=1)
    if not result.ok:
        print(f"verify_ledger FAILED: {result.problem}")
        return 1
    print(f"verify_ledger: {result.entries:,} entries, every decision once, tree intact")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="decisions in the ledger")
    parser.add_argument(
        "--real",
        type=int,
        default=1_000,
        help="of which appended one by one through decision_append",
    )
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--workers", type=int, default=2, help="signature-checking processes")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    parser.add_argument("--keep", action="store_true", help="keep the database and export")
    parser.add_argument(
        "--appenders",
        help="concurrent appends instead, at each of these levels (e.g. 1,2,4,8); PostgreSQL",
    )
    parser.add_argument(
        "--appends", type=int, default=800, help="with --appenders: decisions per level"
    )
    args = parser.parse_args()
    if args.appenders:
        args.postgres = True
    args.pg = _pg_server_and_db() if args.appenders else (PG_URL, PG_DB)
    var_dir = setup(args)
    from django.db import connection

    if args.appenders:
        try:
            return appenders_main(args)
        finally:
            _teardown(args, var_dir)

    print(
        f"ledger benchmark: {args.count:,} decisions on {connection.vendor}, "
        f"{os.cpu_count()} CPUs, {args.workers} verifier workers"
    )
    try:
        p = panel()
        real = min(args.real, args.count)
        seconds = real_appends(p, real)
        print(
            f"decision_append, one transaction each: {real:,} in {seconds:.1f}s = "
            f"{real / seconds:,.0f} decisions/s ({seconds / real * 1000:.2f} ms each)"
        )
        bulk = args.count - real
        if bulk:
            in_ledger, overall = bulk_appends(p, bulk, args.batch)
            print(
                f"ledger_append and sequencing in batches of {args.batch:,}: {bulk:,} in "
                f"{in_ledger:.1f}s = "
                f"{bulk / in_ledger:,.0f} appends/s (with signing and rows: {overall:.1f}s)"
            )

        from reviewapp.ledger.keys import server_signer
        from reviewapp.ledger.services import checkpoint_create, export_lines
        from reviewapp.review.in_ledger.verification import ledger_verify

        checkpoint_create()
        started = time.perf_counter()
        result = ledger_verify(workers=args.workers)
        verify_db = time.perf_counter() - started
        if not result.ok:
            print(f"verify_ledger FAILED: {result.problem}")
            return 1
        print(
            f"verify_ledger: {result.entries:,} entries, {result.checkpoints} checkpoint in "
            f"{verify_db:.1f}s ({result.entries / verify_db:,.0f} entries/s)"
        )

        export = var_dir / "export.jsonl"
        started = time.perf_counter()
        with open(export, "w", encoding="utf-8") as handle:
            handle.writelines(export_lines())
        print(
            f"export: {export.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - started:.1f}s"
        )

        env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
        started = time.perf_counter()
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "reviewapp_client.verify",
                str(export),
                "--public-key",
                server_signer().public_key_b64,
                "--workers",
                str(args.workers),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        verify_offline = time.perf_counter() - started
        if run.returncode:
            print(f"offline verifier FAILED: {run.stderr}")
            return 1
        print(
            f"offline verifier (fresh process, no Django settings): {verify_offline:.1f}s — "
            f"{run.stdout.strip()[:80]}…"
        )
        worst = max(verify_db, verify_offline)
        verdict = "met" if worst < TARGET_SECONDS else "MISSED"
        print(
            f"target: verify {args.count:,} entries in < {TARGET_SECONDS:.0f}s — {verdict} "
            f"(slowest path {worst:.1f}s)"
        )
        return 0 if worst < TARGET_SECONDS or args.count < 100_000 else 1
    finally:
        _teardown(args, var_dir)


def _teardown(args, var_dir: Path) -> None:
    from django.db import connection

    connection.close()
    if not args.keep:
        shutil.rmtree(var_dir, ignore_errors=True)
        if args.postgres:
            import psycopg

            server, name = args.pg
            with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
