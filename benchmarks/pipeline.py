"""End-to-end pipeline throughput: HTTP submission → Celery lenses → checker → signed outcome.

Run:  .venv/bin/python benchmarks/pipeline.py [--n 500] [--clients 8] [--profile]

On a fresh `reviewapp_bench` PostgreSQL database and Redis /14 it configures a
3-lens `recorded` panel (need 2) with one constraints checker, records every
lens's answer for N distinct support replies (70% approved, 10% rejected by
the panel, 10% rejected by the mandate, 10% escalated because a lens answers
garbage), starts gunicorn (2 sync workers) and one Celery worker
(`--concurrency 2 --beat`, importing the no-op tasks with
`-I benchmarks.support.noop`; a proposal of CPU lenses is one task, its lenses
inline), then:

1. counts the SQL queries each task of one proposal runs (in-process probe);
2. times a bare no-op Celery task: sequential round trips, and the throughput
   of as many no-op tasks as the pipeline will run (1 per proposal);
3. submits `--warm-up` proposals, unmeasured, then N proposals with
   `POST /api/proposals` from `--clients` threads, and waits until every one is
   decided or escalated.

Prints proposals per second end to end, p50/p95 submit-to-final latency
(finalized_at − created_at), the no-op figures and the ratios between them, and
audits that each proposal ended exactly once and the decision chain verifies,
and the total CPU per proposal against the CPU of one no-op task (sent and
run) measured in the same run: target ≤ 10×.
`--profile` samples the worker (and gunicorn) with py-spy during step 3 and
prints where the time goes. Target: ≥ 50 proposals/s.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402
from benchmarks.support.profiling import Profiler, summarise_profile  # noqa: E402

TARGET_PER_SECOND = 50.0
TASKS_PER_PROPOSAL = 1  # evaluate_proposal: the 3 lenses inline, then the final step
CPU_RATIO_TARGET = 10.0  # total CPU per proposal ÷ CPU of one no-op task (send + run)


def probe_queries(panel_name: str) -> dict[str, int]:
    """SQL statements per task for one proposal, run in-process (before any worker starts)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from reviewapp.review.evaluation.tasks import evaluate_proposal
    from reviewapp.review.services.proposals import proposal_submit

    item = s.pipeline_contents(1, tag="probe-")[0]
    s.record_answers([item])
    counts: dict[str, int] = {}
    with CaptureQueriesContext(connection) as ctx:
        proposal, _ = proposal_submit(
            panel_name=panel_name, content=item["content"], title=item["title"]
        )
    counts["proposal_submit (service)"] = len(ctx)
    with CaptureQueriesContext(connection) as ctx:
        evaluate_proposal.run(proposal.pk)
    counts["evaluate_proposal (3 lenses inline + the final step)"] = len(ctx)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="proposals to submit (default 500)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP submitters")
    parser.add_argument(
        "--rate",
        type=float,
        default=0,
        help="submit at this many proposals/s instead of all at once (latency below saturation)",
    )
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--noop-round-trips", type=int, default=200)
    parser.add_argument(
        "--warm-up", type=int, default=24, help="proposals submitted first, not measured"
    )
    parser.add_argument("--profile", action="store_true", help="py-spy the worker and gunicorn")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument(
        "--worker-arg",
        action="append",
        default=[],
        help="extra `celery worker` argument, e.g. --worker-arg=--prefetch-multiplier=4",
    )
    parser.add_argument(
        "--worker-env",
        action="append",
        default=[],
        help="KEY=VALUE for the worker only (experiments), "
        "e.g. --worker-env PGOPTIONS='-c synchronous_commit=off'",
    )
    args = parser.parse_args()

    s.heading(f"pipeline: {args.n} proposals, 3 recorded lenses + 1 constraints checker")
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("pipeline")
    panel = s.pipeline_panel()
    items = s.pipeline_contents(args.n)
    warm_up = s.pipeline_contents(args.warm_up, tag="warm-")
    s.record_answers(items + warm_up)
    token = s.api_token("bench-pipeline", "submit,read")
    expected_routes = Counter(item["route"] for item in items)

    queries = probe_queries(panel.name)
    s.flush_redis(env["CELERY_BROKER_URL"])  # the probe's messages
    s.heading("SQL statements per step (one proposal, in-process)")
    for name, count in queries.items():
        s.line(name, str(count))
    s.line(
        "total per proposal (worker side)",
        str(sum(v for k, v in queries.items() if not k.startswith("proposal_submit"))),
    )

    web, port = s.start_gunicorn(env, workers=args.web_workers)
    worker_env = {**env, **s.env_from_args(args.worker_env)}
    worker = s.start_worker(
        worker_env,
        concurrency=args.worker_concurrency,
        beat=True,
        extra_args=args.worker_arg,
    )
    if args.worker_arg or args.worker_env:
        s.line("worker experiment", " ".join([*args.worker_arg, *args.worker_env]))
    profilers: list[Profiler] = []
    try:
        s.heading("no-op Celery task (same broker, same worker)")
        s.noop_round_trips(20)  # warm the pool processes' connections
        trips = s.noop_round_trips(args.noop_round_trips)
        noop_tasks = TASKS_PER_PROPOSAL * args.n
        noop_meter = s.CpuMeter(worker=worker.pid)
        noop_meter.start()
        noop_rate, publish_cpu = s.noop_throughput(noop_tasks)
        consume_cpu = noop_meter.stop()["worker"] / noop_tasks
        s.line(
            "round trip p50 / p95 (sequential)",
            f"{s.percentile(trips, 50):.2f} ms / {s.percentile(trips, 95):.2f} ms",
        )
        s.line(f"throughput ({noop_tasks} tasks at once)", f"{noop_rate:.0f} tasks/s")
        s.line(
            "CPU per no-op task: send / worker",
            f"{1000 * publish_cpu:.2f} ms / {1000 * consume_cpu:.2f} ms "
            f"(× {TASKS_PER_PROPOSAL} per proposal = "
            f"{1000 * TASKS_PER_PROPOSAL * (publish_cpu + consume_cpu):.1f} ms "
            f"of the {1000 * os.cpu_count() / TARGET_PER_SECOND:.0f} ms a proposal may use)",
        )

        s.heading(
            f"submitting {args.n} proposals over HTTP ({args.clients} clients"
            + (f", paced at {args.rate:g}/s)" if args.rate else ", as fast as they go)")
        )
        import httpx

        url = f"http://127.0.0.1:{port}/api/proposals"
        headers = {"Authorization": f"Bearer {token}"}
        local = threading.local()
        statuses: Counter[int] = Counter()
        ids: list[int] = []
        submit_ms: list[float] = []
        lock = threading.Lock()

        def submit(item: dict, measured: bool = True) -> None:
            client = getattr(local, "client", None)
            if client is None:
                client = local.client = httpx.Client(timeout=60, headers=headers)
            body = {
                "panel": panel.name,
                "title": item["title"],
                "content": item["content"],
                "thought_process": item["thought_process"],
                "metadata": {"agent": "bench", "route": item["route"]},
            }
            started = time.perf_counter()
            response = client.post(url, json=body)
            elapsed = (time.perf_counter() - started) * 1000
            if not measured:
                response.raise_for_status()
                return
            with lock:
                statuses[response.status_code] += 1
                submit_ms.append(elapsed)
                if response.status_code == 202:
                    ids.append(response.json()["id"])

        from reviewapp.review.models import Proposal

        # Every web and pool process has built what it builds once (its URLconf
        # is imported at start: support/gunicorn_hooks.py) and run the whole path.
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(lambda item: submit(item, measured=False), warm_up))
        s.wait_all_final(Proposal.objects.count(), timeout=args.timeout)
        baseline_final = Proposal.objects.filter(status__in=["decided", "escalated"]).count()
        if args.profile:
            prof_dir = Path(env["REVIEWAPP_VAR_DIR"]) / "profiles"
            prof_dir.mkdir(exist_ok=True)
            profilers = [
                Profiler(worker.pid, prof_dir / "worker.txt"),
                Profiler(web.pid, prof_dir / "gunicorn.txt"),
            ]

        log_offset = worker.log_path.stat().st_size
        meter = s.CpuMeter(worker=worker.pid, web=web.pid)
        meter.start()
        started = time.monotonic()
        with ThreadPoolExecutor(args.clients) as pool:
            if args.rate:
                # Paced arrivals: latency below saturation instead of a backlog's drain time.
                futures = []
                for k, item in enumerate(items):
                    time.sleep(max(0.0, started + k / args.rate - time.monotonic()))
                    futures.append(pool.submit(submit, item))
                for future in futures:
                    future.result()
            else:
                list(pool.map(submit, items))
        submitted = time.monotonic()

        def progress(done: int, _last=[0.0]) -> None:  # noqa: B006 - a tiny rate limiter
            if time.monotonic() - _last[0] > 5:
                _last[0] = time.monotonic()
                print(f"  … {done - baseline_final}/{len(ids)} final", flush=True)

        finished = s.wait_all_final(
            baseline_final + len(ids), timeout=args.timeout, progress=progress
        )
        cpu = meter.stop()
    finally:
        for profiler in profilers:
            profiler.stop()
        worker.stop()
        web.stop()

    from reviewapp.review.models import Proposal

    s.heading("worker time per task (from the worker log)")
    runtimes = s.task_runtimes(worker.log_path, log_offset)
    s.print_task_runtimes(runtimes, finished - started, args.worker_concurrency)
    rows = list(
        Proposal.objects.filter(pk__in=ids).values_list("created_at", "finalized_at", "status")
    )
    latency = [(f - c).total_seconds() * 1000 for c, f, _ in rows if f]
    span = finished - started
    rate = len(ids) / span
    s.heading("figures")
    s.line("HTTP statuses", ", ".join(f"{k}×{v}" for k, v in sorted(statuses.items())))
    s.line(
        "submission (HTTP) rate",
        f"{len(ids) / (submitted - started):.1f} proposals/s "
        f"(request p50 {s.percentile(submit_ms, 50):.0f} ms, "
        f"p95 {s.percentile(submit_ms, 95):.0f} ms)",
    )
    s.line("end to end: first submit → last final", f"{span:.2f} s")
    verdict = "meets" if rate >= TARGET_PER_SECOND else "MISSES"
    s.line(
        "end-to-end throughput",
        f"{rate:.1f} proposals/s "
        + (
            f"(paced at {args.rate:g}/s: a latency run, not a throughput one)"
            if args.rate
            else f"({verdict} the {TARGET_PER_SECOND:.0f}/s target)"
        ),
    )
    s.line(
        "submit→final latency p50 / p95 / max",
        f"{s.percentile(latency, 50):.0f} ms / {s.percentile(latency, 95):.0f} ms / "
        f"{max(latency):.0f} ms",
    )
    tasks_run = sum(
        len(v)
        for k, v in runtimes.items()
        if k.startswith("reviewapp.review.tasks.") and not k.endswith("sweep_stuck_proposals")
    )
    s.line(
        "pipeline tasks run / per proposal",
        f"{tasks_run} / {tasks_run / len(ids):.1f} ({tasks_run / span:.0f} tasks/s)",
    )
    s.line("ratio: pipeline tasks/s ÷ no-op tasks/s", f"{tasks_run / span / noop_rate:.2f}")
    s.line(
        "ratio: p50 latency ÷ no-op round trip p50",
        f"{s.percentile(latency, 50) / s.percentile(trips, 50):.0f}×",
    )
    statuses_by = Counter(status for *_, status in rows)
    s.line("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(statuses_by.items())))
    s.line("expected routes", ", ".join(f"{k} {v}" for k, v in sorted(expected_routes.items())))
    audit = s.outcome_audit()
    s.line("exactly-once audit", ", ".join(f"{k}={v}" for k, v in audit.items()))
    checked, problem = s.verify_chain()
    s.line("decision chain", f"{checked} verified" + (f"; PROBLEM: {problem}" if problem else ""))
    s.heading("CPU per proposal (independent of other load on the machine)")
    for name, used in cpu.items():
        s.line(f"{name} CPU", f"{1000 * used / len(ids):.1f} ms per proposal ({used:.1f} s)")
    total_cpu = sum(cpu.values()) / len(ids)
    s.line("total (worker + web + PostgreSQL)", f"{1000 * total_cpu:.1f} ms per proposal")
    noop_cpu = publish_cpu + consume_cpu
    ratio = total_cpu / noop_cpu
    s.line(
        "ratio: CPU per proposal ÷ CPU per no-op task",
        f"{ratio:.1f}× ({1000 * total_cpu:.1f} ms / {1000 * noop_cpu:.2f} ms; "
        f"{'meets' if ratio <= CPU_RATIO_TARGET else 'MISSES'} the ≤ {CPU_RATIO_TARGET:g}× target)",
    )
    s.line(
        f"ceiling on {os.cpu_count()} idle CPUs",
        f"{os.cpu_count() / total_cpu:.0f} proposals/s (Redis and the client excluded)",
    )
    s.line("load average at end", s.load_average())
    if profilers:
        for profiler in profilers:
            s.heading(f"profile: {profiler.out.name} (share of samples holding the GIL)")
            summarise_profile(profiler.out)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
