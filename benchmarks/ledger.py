"""Benchmark the ledger: append 100,000 signed decisions, then verify them all.

Run: python benchmarks/ledger.py [--count N] [--batch B] [--workers W] [--postgres] [--keep]
     python benchmarks/ledger.py --appenders 1,2,4,8 [--appends N] [--keep]

With --appenders: concurrent appends on PostgreSQL only (the server of
DATABASE_URL if it is PostgreSQL, else BENCH_PG_URL; the database
`<DATABASE_URL's name>_bench_ledger`, or `reviewapp_bench_ledger`). At each
level, that many processes append --appends decisions between them through the
real `decision_append`, and it prints decisions appended per second and how
long each decision held the chain head's lock: timed in each process from the
moment the locked row is returned to the end of COMMIT (an on_commit hook,
registered before the decision's NOTIFY hook, so that is not counted), so the
code path itself is unchanged. Then it integrates the tree, signs a
checkpoint and verifies the whole ledger. Target: the lock allows 1,000
decisions/s, i.e. a hold under 1 ms per decision. It also prints PostgreSQL's own floor
here (a bare row lock held through COMMIT, psycopg alone) and the hold per
decision when 10 or 50 decisions share one transaction, as a batch sequencer
would chain them.

Sets up its own database — a temporary SQLite file under var/bench/ledger-<pid>,
or with --postgres the database `reviewapp_bench_ledger` on BENCH_PG_URL
(default postgres://postgres@127.0.0.1:5432), dropped and re-created — and
migrates it (the append-only triggers included). Then:

1. appends decisions one at a time through the real `decision_append`
   (signing, chain head, ledger append, one transaction each) and reports
   decisions per second;
2. creates the bulk of the decisions as real rows with synthetic but genuinely
   signed payloads, chained, and appends them to the ledger in batches through
   `ledger_append` (what a backfill does), reporting appends per second;
3. signs a checkpoint and verifies everything three ways, timing each:
   `manage.py verify_ledger` (every signature, every row against its signed
   bytes, chain, stored subtrees, checkpoints), `export_decisions`, and the
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
    """Returns (seconds in ledger_append, seconds overall)."""
    from django.db import transaction
    from django.utils import timezone

    from reviewapp.core.signing import sha256_hex
    from reviewapp.ledger.services import NewEntry, ledger_append
    from reviewapp.review.keys import server_signer
    from reviewapp.review.models import ChainHead, Decision
    from reviewapp.review.services.decisions import DECISION_PAYLOAD_TYPE

    signer = server_signer()
    head, _ = ChainHead.objects.get_or_create(singleton=True, defaults={"last_hash": "0" * 64})
    prev = head.last_hash
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
                "prev_hash": prev,
            }
            signed = signer.sign(payload)
            digest = sha256_hex(signed.payload_bytes)
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
                    prev_hash=prev,
                    hash=digest,
                )
            )
            prev = digest
        with transaction.atomic():
            Decision.objects.bulk_create(decisions, batch_size=1000)
            # The chain head may only advance one stored decision at a time (a trigger).
            for d in decisions:
                ChainHead.objects.filter(pk=head.pk).update(last_hash=d.hash)
            t = time.perf_counter()
            ledger_append(
                NewEntry("decision", d.payload, d.signature, d.key_id, decision=d)
                for d in decisions
            )
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
    """One appending process: `decision_append` for each proposal, timing the lock's hold."""
    from django.db import connection, transaction

    from reviewapp.review.models import Proposal
    from reviewapp.review.services import decisions

    connection.close()  # the parent's socket is not this process's to share
    holds: list[float] = []
    locked_chain_head = decisions._locked_chain_head

    def timed_locked_chain_head():
        head = locked_chain_head()
        held_from = time.perf_counter()
        # Runs right after COMMIT has returned, when the row lock is released.
        transaction.on_commit(lambda: holds.append(time.perf_counter() - held_from))
        return head

    decisions._locked_chain_head = timed_locked_chain_head
    rows = list(Proposal.objects.filter(pk__in=ids).order_by("pk"))
    signer = decisions.server_signer()
    start.wait()
    for proposal in rows:
        system_decision(proposal, signer)
    connection.close()
    results.put(holds)


def concurrent_appends(p, levels: list[int], appends: int) -> list[tuple[int, float, list[float]]]:
    """(appenders, decisions/s, hold seconds of each decision) at each level."""
    import multiprocessing

    from django.db import connection

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
        holds = [hold for _ in workers for hold in results.get(timeout=600)]
        elapsed = time.perf_counter() - started
        for worker in workers:
            worker.join()
            if worker.exitcode:
                raise SystemExit(f"an appender failed (exit code {worker.exitcode})")
        figures.append((level, len(holds) / elapsed, holds))
    return figures


def floor_hold(count: int = 2000) -> float:
    """PostgreSQL's own floor on this machine: a bare row lock held through COMMIT.

    One client, back to back, with no signing and no Django: from the locked
    row's return to COMMIT's, after one UPDATE of that row. No decision can hold
    the chain head for less, since the next one must see it committed.
    """
    import psycopg
    from django.db import connection

    settings_dict = connection.settings_dict
    with psycopg.connect(
        host=settings_dict["HOST"] or None,
        port=settings_dict["PORT"] or None,
        user=settings_dict["USER"],
        password=settings_dict["PASSWORD"] or None,
        dbname=settings_dict["NAME"],
    ) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id int PRIMARY KEY, h text)")
        conn.execute("INSERT INTO bench_floor VALUES (1, '') ON CONFLICT DO NOTHING")
        conn.commit()
        holds = []
        for i in range(count):
            row = conn.execute("SELECT h FROM bench_floor WHERE id = 1 FOR UPDATE").fetchone()
            held_from = time.perf_counter()
            conn.execute("UPDATE bench_floor SET h = %s WHERE id = 1", [f"{row[0][:8]}{i}"])
            conn.commit()
            holds.append(time.perf_counter() - held_from)
    return sum(holds[100:]) / len(holds[100:])


def batched_hold(p, batch: int, batches: int) -> float:
    """The hold per decision when ``batch`` decisions share one transaction, as a batch
    sequencer would chain them: the real `decision_append`, called ``batch`` times in one
    transaction. What a sequencer holds is counted: each call from its locked row to its
    return (its payload and statement are built before that, as a sequencer would build
    them before its lock), and one COMMIT; divided by ``batch``."""
    from django.db import transaction

    from reviewapp.review.services import decisions

    rows = proposals(p, batch * batches, 40_000_000)
    signer = decisions.server_signer()
    locked_chain_head = decisions._locked_chain_head
    held: list[float] = []
    per_batch: list[float] = []
    commit_ends: list[float] = []

    def timed_locked_chain_head():
        head = locked_chain_head()
        held.append(time.perf_counter())
        return head

    decisions._locked_chain_head = timed_locked_chain_head
    try:
        for start in range(0, len(rows), batch):
            under_lock = 0.0
            with transaction.atomic():
                # The first hook after COMMIT (each decision adds its NOTIFY hook after it).
                transaction.on_commit(lambda: commit_ends.append(time.perf_counter()))
                for proposal in rows[start : start + batch]:
                    system_decision(proposal, signer)
                    under_lock += time.perf_counter() - held.pop()
                committing = time.perf_counter()
            per_batch.append(under_lock + commit_ends[-1] - committing)
    finally:
        decisions._locked_chain_head = locked_chain_head
    return sum(per_batch) / len(per_batch) / batch


def appenders_main(args) -> int:
    from django.db import connection

    from reviewapp.ledger.services import checkpoint_create
    from reviewapp.ledger.verification import ledger_verify

    levels = [int(n) for n in args.appenders.split(",")]
    print(
        f"ledger appenders: {args.appends:,} decisions per level on "
        f"{connection.vendor} ({connection.settings_dict['NAME']}), {os.cpu_count()} CPUs"
    )
    p = panel()
    figures = concurrent_appends(p, levels, args.appends)
    print(f"{'appenders':>9}  {'decisions/s':>11}  {'hold ms mean':>12}  {'p50':>6}  {'p95':>6}")
    for level, rate, holds in figures:
        ordered = sorted(holds)
        mean = sum(holds) / len(holds) * 1000
        p50 = ordered[len(ordered) // 2] * 1000
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000
        print(f"{level:>9}  {rate:>11,.0f}  {mean:>12.2f}  {p50:>6.2f}  {p95:>6.2f}")
    best = min(sum(holds) / len(holds) for _, _, holds in figures)
    print(
        f"target: the lock allows {TARGET_APPENDS_PER_SECOND:,} decisions/s (hold < "
        f"{1000 / TARGET_APPENDS_PER_SECOND:.1f} ms): shortest mean hold {best * 1000:.2f} ms "
        f"allows {1 / best:,.0f}/s — {'met' if best * TARGET_APPENDS_PER_SECOND < 1 else 'MISSED'}"
    )
    floor = floor_hold()
    print(
        f"PostgreSQL's floor here (a bare row lock held through COMMIT, no signing): "
        f"{floor * 1000:.2f} ms = {1 / floor:,.0f}/s"
    )
    for batch in (10, 50):
        per_decision = batched_hold(p, batch, batches=max(1, args.appends // batch))
        print(
            f"{batch} decisions in one transaction (as a batch sequencer would chain them): "
            f"hold {per_decision * 1000:.2f} ms per decision = {1 / per_decision:,.0f}/s"
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
    print(f"verify_ledger: {result.entries:,} entries, chain and tree intact")
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
                f"ledger_append in batches of {args.batch:,}: {bulk:,} in {in_ledger:.1f}s = "
                f"{bulk / in_ledger:,.0f} appends/s (with signing and rows: {overall:.1f}s)"
            )

        from reviewapp.ledger.services import checkpoint_create, export_lines
        from reviewapp.ledger.verification import ledger_verify
        from reviewapp.review.keys import server_signer

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
