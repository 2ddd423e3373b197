"""LLM lenses at the provider's speed: the `llm` pipeline against the `recorded` one, same run.

Run:  .venv/bin/python benchmarks/llm_pipeline.py [--latency 1] [--n 300]
          [--max-concurrency N] [--fail-429 K] [--recorded-n 300]
          [--scenario ratio|cap|refusals|only-429]

On a fresh bench PostgreSQL database and Redis (BENCH_DB, BENCH_BROKER_URL) it
starts what docker-compose starts with the project's defaults — gunicorn (2
sync workers) and the worker (prefork 2, beat; each pool process judges LLM
lenses on its own event loop, REVIEWAPP_LLM_PROPOSALS_PER_PROCESS at once) —
and a loopback OpenAI-compatible server (benchmarks/_provider.py, asyncio, in
a process of its own) that answers every call with a valid judgement (a
verbatim cite) after `--latency` seconds. Then, in one run:

0. a warm-up of `--warm-up` proposals of each kind, not measured (the first
   proposals after a start pay for connections and first imports);
1. the `recorded` pipeline: `--recorded-n` proposals on `pipeline.py`'s panel
   shape (3 recorded lenses, need 2, one constraints checker), over HTTP;
2. the `llm` pipeline: `--n` proposals on the same shape with 3 `llm` lenses
   (`--max-concurrency` sets the lenses' per-endpoint limit; `--fail-429 K`
   answers every K-th call with 429 and `Retry-After: 1`), over HTTP, all at once;
3. the `recorded` pipeline again, as in 1: the ratio is taken against both
   recorded runs together (their proposals over their time), because this
   machine's speed drifts by a quarter within a minute, and a single run
   before the llm one measured the drift as much as the pipelines;
4. the same `llm` pipeline paced at half the rate step 2 reached, for the
   latency a proposal sees below saturation.

That is ``--scenario ratio``, the default. The others measure a provider
that answers 429 (issue 31), with the lenses' limits at their defaults and
no recorded or paced run:

- ``cap``: the provider serves at most ``--cap`` calls in flight and answers
  429 with ``Retry-After: 1`` beyond; prints proposals/s against
  ``cap / (3 × latency)``, the escalations, and the most calls the provider
  saw in flight after the first ``--settle`` seconds.
- ``refusals``: the llm run without 429s, then the same run with
  ``--refuse-percent`` of calls answered 429 with ``Retry-After:
  --retry-after``; prints the ratio of the two rates and the escalations.
- ``only-429``: every call answered 429, the lenses' deadline set to
  ``--deadline``; prints whether every proposal ended escalated once naming
  the lens and the 429s, and the slowest submit→final against the deadline.

Prints proposals/s (for the llm run also its ceiling: it ends no sooner than
`--latency` after its last submission, so N ÷ (its submissions' time + latency),
and the ratio that ceiling allows), p50/p95 submit→final, the CPU per proposal of each
process (worker, web, PostgreSQL, the provider, this process's submitters),
the most calls the server saw in flight, the worker's RSS (peak, all its
processes) and the most database connections open (peak, every process), the
exactly-once audit, and last a machine-readable line:

    RESULT llm_per_s=<x> recorded_per_s=<y> ratio=<x/y> paced_p50_s=<s> max_inflight=<n>
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402
from benchmarks._provider import TICKET  # noqa: E402
from benchmarks.support.profiling import Profiler, summarise_profile  # noqa: E402

LLM_LENSES = ("bench-llm-accuracy", "bench-llm-tone", "bench-llm-safety")


class Provider:
    """The loopback provider (``benchmarks/_provider.py``), in a process of its own."""

    def __init__(self, latency: float, fail_429: int) -> None:
        import subprocess

        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks._provider",
                "--latency",
                str(latency),
                "--fail-429",
                str(fail_429),
            ],
            cwd=s.ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.pid = self.process.pid

    def mode(self, **mode) -> dict:
        """Switch the provider's refusals (``_provider.MODES``); what is left out is off."""
        import httpx

        return (
            httpx.post(f"{self.base_url.removesuffix('/v1')}/mode", json=mode)
            .raise_for_status()
            .json()
        )

    def stats(self, reset: bool = False) -> dict:
        import httpx

        root = self.base_url.removesuffix("/v1")
        if reset:
            return httpx.post(f"{root}/stats/reset").json()
        return httpx.get(f"{root}/stats").json()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def llm_panel(base_url: str, max_concurrency: int | None):
    from reviewapp.review.models import CheckerConfig, Lens
    from reviewapp.review.services.panels import panel_configure

    limits = {"max_concurrent_calls": max_concurrency} if max_concurrency else {}
    lenses = []
    for name in LLM_LENSES:
        lens, _ = Lens.objects.update_or_create(
            name=name,
            defaults={
                "backend": Lens.Backend.LLM,
                "base_url": base_url,
                "model": "bench-model",
                "instructions": f"Judge as {name}.",
                "timeout_seconds": 60,
                **limits,
            },
        )
        lenses.append(lens)
    s.pipeline_panel()  # the recorded panel, and its constraints checker
    checker = CheckerConfig.objects.get(name="bench-mandate")
    return panel_configure(
        name="bench-llm-panel", need=2, lenses=lenses, checkers=[checker], grounding_policy="reject"
    )


def contents(n: int, tag: str) -> list[dict]:
    """Support replies that every lens passes (no mandate breach), one ticket line each."""
    from reviewapp.review.demo.data import SUPPORT_DOCS

    out = []
    for i in range(n):
        title, body, thought, *_ = SUPPORT_DOCS[i % len(SUPPORT_DOCS)]
        out.append(
            {
                "title": f"{title} ({tag}{i})",
                "content": f"{body}\n\nTicket #{tag}{i:07d}",
                "thought_process": thought,
            }
        )
    return out


def record_passes(items: list[dict]) -> None:
    """For the recorded run: every recorded lens passes with the same verbatim cite."""
    import json

    from reviewapp.review.models import Lens, RecordedResponse

    lenses = list(Lens.objects.filter(name__in=s.PIPELINE_LENSES))
    rows = []
    for item in items:
        cite = TICKET.search(item["content"]).group(0)
        answer = json.dumps(
            {
                "verdict": "pass",
                "rationale": "The reply answers the ticket it names.",
                "claims": [{"cite": cite, "assessment": "verified", "note": "names the ticket"}],
            }
        )
        digest = hashlib.sha256(item["content"].encode()).hexdigest()
        rows += [
            RecordedResponse(lens=lens, content_sha256=digest, responses=[answer])
            for lens in lenses
        ]
    RecordedResponse.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)


class Sampler:
    """Peaks of each worker's memory (all its processes) and of open database connections.

    RSS counts pages shared between a prefork parent and its children once per
    process (how "RSS across its processes" is usually summed); PSS splits them.
    """

    def __init__(self, database: str, roots: dict[str, int]) -> None:
        self.database, self.roots = database, roots
        self.rss_mb = dict.fromkeys(roots, 0.0)
        self.pss_mb = dict.fromkeys(roots, 0.0)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(f"{s.PG_URL}/postgres", autocommit=True) as conn:
            while not self._stop.is_set():
                (count,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [self.database]
                ).fetchone()
                self.connections = max(self.connections, count)
                for name, root in self.roots.items():
                    pids = s.process_tree(root)
                    rss = sum(memory_mb(p, "/proc/{}/status", "VmRSS:") for p in pids)
                    pss = sum(memory_mb(p, "/proc/{}/smaps_rollup", "Pss:") for p in pids)
                    self.rss_mb[name] = max(self.rss_mb[name], rss)
                    self.pss_mb[name] = max(self.pss_mb[name], pss)
                self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def memory_mb(pid: int, path: str, field: str) -> float:
    try:
        for row in Path(path.format(pid)).read_text().splitlines():
            if row.startswith(field):
                return int(row.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(
    port: int,
    token: str,
    panel: str,
    items: list[dict],
    *,
    clients: int,
    rate: float = 0,
    meter_roots: dict[str, int],
):
    """Submit `items` over HTTP (all at once, or paced at `rate`/s) and wait until all are final.

    Also measures the CPU the processes in `meter_roots` and PostgreSQL spent meanwhile.
    """
    import httpx

    from reviewapp.review.models import Proposal

    url = f"http://127.0.0.1:{port}/api/proposals"
    headers = {"Authorization": f"Bearer {token}"}
    local = threading.local()
    ids: list[int] = []
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def submit(item: dict) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(timeout=60, headers=headers)
        response = client.post(url, json={"panel": panel, **item})
        with lock:
            statuses[response.status_code] += 1
            if response.status_code == 202:
                ids.append(response.json()["id"])

    baseline = Proposal.objects.filter(status__in=["decided", "escalated"]).count()
    meter = s.CpuMeter(**meter_roots)
    meter.start()
    own_cpu = time.process_time()
    # Wall-clock, to compare with the proposals' own finalized_at: the last of
    # them ends the run, not the poll that saw it (a quarter-second poll is a
    # few per cent of a four-second run).
    started = time.time()
    paced_from = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        if rate:
            futures = []
            for k, item in enumerate(items):
                time.sleep(max(0.0, paced_from + k / rate - time.monotonic()))
                futures.append(pool.submit(submit, item))
            for future in futures:
                future.result()
        else:
            list(pool.map(submit, items))
    submitted = time.time()
    s.wait_all_final(baseline + len(items), timeout=3600)
    cpu = meter.stop()
    # This process: the HTTP submitters.
    cpu["benchmark"] = time.process_time() - own_cpu
    if statuses != Counter({202: len(items)}):
        raise SystemExit(f"submissions refused: {dict(statuses)}")
    rows = Proposal.objects.filter(pk__in=ids).values_list("created_at", "finalized_at", "status")
    latency = [(f - c).total_seconds() for c, f, _ in rows]
    finished = max(f for _, f, _ in rows).timestamp()
    return {
        "rate": len(items) / (finished - started),
        "submit_s": submitted - started,
        "p50": s.percentile(latency, 50),
        "p95": s.percentile(latency, 95),
        "outcomes": Counter(status for *_, status in rows),
        "cpu_ms": {name: 1000 * used / len(items) for name, used in cpu.items()},
    }


def print_cpu(result: dict) -> None:
    per = result["cpu_ms"]
    s.line(
        "CPU per proposal",
        " + ".join(f"{name} {ms:.1f}" for name, ms in per.items())
        + f" = {sum(per.values()):.1f} ms",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--n", type=int, default=300, help="proposals through the llm pipeline")
    parser.add_argument("--recorded-n", type=int, default=300, help="proposals per recorded run")
    parser.add_argument("--warm-up", type=int, default=30, help="unmeasured proposals of each kind")
    parser.add_argument("--paced-n", type=int, default=100, help="proposals in the paced run")
    parser.add_argument(
        "--max-concurrency", type=int, default=0, help="the llm lenses' per-endpoint limit"
    )
    parser.add_argument("--fail-429", type=int, default=0, metavar="K", help="every K-th call 429")
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP submitters")
    parser.add_argument(
        "--profile", action="store_true", help="py-spy the worker during the llm run"
    )
    parser.add_argument(
        "--scenario",
        choices=("ratio", "cap", "refusals", "only-429"),
        default="ratio",
        help="what to measure (see the module's docstring)",
    )
    parser.add_argument("--cap", type=int, default=8, help="cap: calls the provider serves at once")
    parser.add_argument(
        "--settle", type=float, default=10.0, help="cap: seconds before in-flight is watched"
    )
    parser.add_argument(
        "--refuse-percent", type=float, default=20.0, help="refusals: share of calls answered 429"
    )
    parser.add_argument(
        "--retry-after", type=int, default=2, help="refusals: the 429s' Retry-After"
    )
    parser.add_argument(
        "--deadline", type=int, default=30, help="only-429: the lenses' deadline, seconds"
    )
    args = parser.parse_args()
    if args.scenario != "ratio":
        throttled(args)
        return

    s.heading(
        f"llm pipeline: {args.n} proposals × 3 llm lenses, {args.latency:g} s per call"
        + (f", limit {args.max_concurrency} calls" if args.max_concurrency else "")
        + (f", every {args.fail_429}th call 429" if args.fail_429 else "")
    )
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("llm-pipeline")
    s.collectstatic()  # DEBUG=false: gunicorn refuses to start without the manifest
    from django.conf import settings

    provider = Provider(args.latency, args.fail_429)
    panel = llm_panel(provider.base_url, args.max_concurrency or None)
    warm_items = contents(args.warm_up, "warm-rec-")
    recorded_items = contents(args.recorded_n, "rec-")
    again_items = contents(args.recorded_n, "rec-again-")
    record_passes(warm_items + recorded_items + again_items)
    token = s.api_token("bench-llm", "submit,read")
    s.line(
        "proposals on each process's LLM loop (at most)",
        str(settings.REVIEWAPP_LLM_PROPOSALS_PER_PROCESS),
    )
    limit = panel.lenses.first()
    s.line(
        "per-endpoint limits", f"{limit.max_concurrent_calls} calls, {limit.calls_per_minute}/min"
    )

    web, port = s.start_gunicorn(env, workers=2)
    worker = s.start_worker(env, concurrency=2, beat=True, name="worker")
    sampler = Sampler(s.BENCH_DB, {"worker": worker.pid})
    meter = {"meter_roots": {"worker": worker.pid, "web": web.pid, "provider": provider.pid}}
    try:
        if args.warm_up:
            s.heading(f"warm-up: {args.warm_up} proposals of each kind (not measured)")
            run(port, token, "bench-panel", warm_items, clients=args.clients, **meter)
            warm_llm = contents(args.warm_up, "warm-llm-")
            run(port, token, panel.name, warm_llm, clients=args.clients, **meter)

        def recorded_run(items: list[dict], label: str) -> dict:
            s.heading(f"recorded pipeline{label}: {args.recorded_n} proposals (same panel shape)")
            result = run(port, token, "bench-panel", items, clients=args.clients, **meter)
            s.line("proposals/s", f"{result['rate']:.2f}")
            s.line("submit→final p50 / p95", f"{result['p50']:.2f} s / {result['p95']:.2f} s")
            print_cpu(result)
            return result

        recorded = recorded_run(recorded_items, "")

        s.heading(f"llm pipeline: {args.n} proposals, all at once")
        before = provider.stats(reset=True)
        profiler = None
        if args.profile:
            profiler = Profiler(worker.pid, Path(env["REVIEWAPP_VAR_DIR"]) / "llm-worker.txt")
        llm = run(port, token, panel.name, contents(args.n, "llm-"), clients=args.clients, **meter)
        if profiler:
            profiler.stop()
        after = provider.stats()
        max_inflight = after["max_in_flight"]
        s.line("proposals/s", f"{llm['rate']:.2f}")
        # The run ends no sooner than its last submission's calls: their latency after it.
        ceiling = args.n / (llm["submit_s"] + args.latency)
        s.line(
            "at most, with the calls' latency",
            f"{ceiling:.2f} (submissions took {llm['submit_s']:.2f} s, "
            f"the last calls {args.latency:g} s more)",
        )
        s.line("submit→final p50 / p95", f"{llm['p50']:.2f} s / {llm['p95']:.2f} s")
        print_cpu(llm)
        calls = after["calls"] - before["calls"]
        limited = after["rate_limited"] - before["rate_limited"]
        s.line("calls / answered 429", f"{calls} / {limited}")
        s.line("most calls in flight at the server", str(max_inflight))
        if args.max_concurrency:
            s.line(
                "ideal under the limit: limit ÷ (3 × latency)",
                f"{args.max_concurrency / (3 * args.latency):.2f} proposals/s",
            )

        again = recorded_run(again_items, ", again")
        # Both runs' proposals over both runs' time.
        recorded_rate = 2 / (1 / recorded["rate"] + 1 / again["rate"])
        s.line(
            "recorded proposals/s, both runs",
            f"{recorded_rate:.2f} (before {recorded['rate']:.2f}, after {again['rate']:.2f})",
        )
        s.line("ratio at most (the llm run's ceiling above)", f"{ceiling / recorded_rate:.2f}")

        paced_rate = llm["rate"] / 2
        s.heading(
            f"llm pipeline paced at {paced_rate:.2f}/s (half the rate above), "
            f"{args.paced_n} proposals"
        )
        paced = run(
            port,
            token,
            panel.name,
            contents(args.paced_n, "paced-"),
            clients=args.clients,
            rate=paced_rate,
            **meter,
        )
        s.line("submit→final p50 / p95", f"{paced['p50']:.2f} s / {paced['p95']:.2f} s")
        s.line(
            "target p50 ≤ latency + 1 s",
            f"{'meets' if paced['p50'] <= args.latency + 1 else 'MISSES'} ({args.latency + 1:g} s)",
        )
    finally:
        sampler.stop()
        worker.stop()
        web.stop()
        provider.stop()

    s.heading("resources (peaks over the whole run)")
    for name in sampler.roots:
        s.line(
            f"{name} memory (all its processes)",
            f"RSS {sampler.rss_mb[name]:.0f} MB, PSS {sampler.pss_mb[name]:.0f} MB",
        )
    s.line(
        "database connections open (every process)",
        f"{sampler.connections} (at most web 2 + worker 2 × (pool, LLM loop, recorder) + this one)",
    )
    s.heading("exactly once")
    outcomes = llm["outcomes"] + recorded["outcomes"] + again["outcomes"] + paced["outcomes"]
    s.line("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    audit = s.outcome_audit()
    s.line("audit", ", ".join(f"{k}={v}" for k, v in audit.items()))
    checked, problem = s.verify_chain()
    s.line("decision chain", f"{checked} verified" + (f"; PROBLEM: {problem}" if problem else ""))
    if audit["exactly_once"] != audit["proposals"]:
        raise SystemExit("exactly-once audit failed")
    s.line("load average at end", s.load_average())
    if args.profile:
        s.heading("profile: the worker during the llm run (share of samples holding the GIL)")
        summarise_profile(Path(env["REVIEWAPP_VAR_DIR"]) / "llm-worker.txt", top=30)
    ratio = llm["rate"] / recorded_rate
    print(
        f"RESULT llm_per_s={llm['rate']:.2f} recorded_per_s={recorded_rate:.2f} "
        f"ratio={ratio:.2f} paced_p50_s={paced['p50']:.2f} max_inflight={max_inflight}",
        flush=True,
    )


def throttled(args) -> None:
    """The scenarios of a provider answering 429 (``--scenario cap|refusals|only-429``)."""
    s.heading(
        f"llm pipeline, scenario {args.scenario}: {args.n} proposals × 3 llm lenses, "
        f"{args.latency:g} s per call, lens limits at their defaults"
    )
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("llm-pipeline")
    s.collectstatic()  # DEBUG=false: gunicorn refuses to start without the manifest
    from reviewapp.review.models import Lens

    provider = Provider(args.latency, 0)
    panel = llm_panel(provider.base_url, args.max_concurrency or None)
    if args.scenario == "only-429":
        Lens.objects.filter(name__in=LLM_LENSES).update(deadline_seconds=args.deadline)
    limit = panel.lenses.first()
    s.line(
        "per-endpoint limits",
        f"{limit.max_concurrent_calls} calls, {limit.calls_per_minute}/min, "
        f"deadline {limit.deadline_seconds} s",
    )
    token = s.api_token("bench-llm", "submit,read")
    web, port = s.start_gunicorn(env, workers=2)
    worker = s.start_worker(env, concurrency=2, beat=True, name="worker")
    meter = {"meter_roots": {"worker": worker.pid, "web": web.pid, "provider": provider.pid}}

    def llm_run(tag: str) -> dict:
        result = run(port, token, panel.name, contents(args.n, tag), clients=args.clients, **meter)
        s.line("proposals/s", f"{result['rate']:.2f}")
        s.line("submit→final p50 / p95", f"{result['p50']:.2f} s / {result['p95']:.2f} s")
        s.line("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(result["outcomes"].items())))
        print_cpu(result)
        return result

    try:
        if args.warm_up:
            s.heading(f"warm-up: {args.warm_up} proposals, no 429 (not measured)")
            run(
                port,
                token,
                panel.name,
                contents(args.warm_up, "warm-"),
                clients=args.clients,
                **meter,
            )
        if args.scenario == "cap":
            result = capped(args, provider, llm_run)
        elif args.scenario == "refusals":
            result = refusals(args, provider, llm_run)
        else:
            result = only_429(args, provider, llm_run)
    finally:
        worker.stop()
        web.stop()
        provider.stop()
    audit = s.outcome_audit()
    s.line("audit", ", ".join(f"{k}={v}" for k, v in audit.items()))
    if audit["exactly_once"] != audit["proposals"]:
        raise SystemExit("exactly-once audit failed")
    s.line("load average at end", s.load_average())
    print("RESULT " + " ".join(f"{k}={v}" for k, v in result.items()), flush=True)


def capped(args, provider: Provider, llm_run) -> dict:
    provider.mode(cap=args.cap)
    s.heading(f"provider capped at {args.cap} calls in flight, 429 (Retry-After: 1) beyond")
    before = provider.stats(reset=True)
    settled: dict = {}
    timer = threading.Timer(args.settle, lambda: settled.update(provider.stats(reset=True)))
    timer.start()
    result = llm_run("cap-")
    timer.cancel()
    after = provider.stats()
    ideal = args.cap / (3 * args.latency)
    escalated = result["outcomes"].get("escalated", 0)
    s.line(
        "calls / answered 429",
        f"{after['calls'] - before['calls']} / {after['rate_limited'] - before['rate_limited']}",
    )
    s.line("ideal: cap ÷ (3 × latency)", f"{ideal:.2f} proposals/s")
    s.line("throughput ÷ ideal (target ≥ 0.85)", f"{result['rate'] / ideal:.2f}")
    s.line(
        f"most calls in flight after {args.settle:g} s (target ≤ 10)", str(after["max_in_flight"])
    )
    s.line("escalations (target 0)", str(escalated))
    return {
        "per_s": f"{result['rate']:.2f}",
        "of_ideal": f"{result['rate'] / ideal:.2f}",
        "max_inflight_settled": after["max_in_flight"] if settled else "n/a",
        "escalated": escalated,
    }


def refusals(args, provider: Provider, llm_run) -> dict:
    s.heading(f"llm pipeline without 429s: {args.n} proposals, all at once")
    plain = llm_run("plain-")
    provider.mode(refuse_percent=args.refuse_percent, retry_after=args.retry_after)
    s.heading(
        f"the same with {args.refuse_percent:g} % of calls answered 429, "
        f"Retry-After: {args.retry_after}"
    )
    before = provider.stats(reset=True)
    refused = llm_run("refused-")
    after = provider.stats()
    ratio = refused["rate"] / plain["rate"]
    escalated = refused["outcomes"].get("escalated", 0)
    s.line(
        "calls / answered 429",
        f"{after['calls'] - before['calls']} / {after['rate_limited'] - before['rate_limited']}",
    )
    s.line("ratio to the run without 429s (target ≥ 0.7)", f"{ratio:.2f}")
    s.line("escalations (target 0)", str(escalated))
    return {
        "plain_per_s": f"{plain['rate']:.2f}",
        "refused_per_s": f"{refused['rate']:.2f}",
        "ratio": f"{ratio:.2f}",
        "escalated": escalated,
    }


def only_429(args, provider: Provider, llm_run) -> dict:
    from reviewapp.review.models import Escalation, LensFailure, Proposal

    provider.mode(only_429=True)
    s.heading(f"every call answered 429; the lenses' deadline {args.deadline} s")
    started = Proposal.objects.count()
    result = llm_run("only-429-")
    ids = list(Proposal.objects.order_by("pk").values_list("pk", flat=True)[started:])
    rows = Proposal.objects.filter(pk__in=ids).values_list("created_at", "finalized_at")
    slowest = max((f - c).total_seconds() for c, f in rows)
    escalations = Counter(
        Escalation.objects.filter(proposal_id__in=ids).values_list("proposal_id", flat=True)
    )
    named = Escalation.objects.filter(
        proposal_id__in=ids, reasons__contains=["lens_failed"]
    ).values_list("proposal_id", "detail")
    naming = sum(1 for _, detail in named if set(detail.get("failed_lenses", [])) & set(LLM_LENSES))
    failures = LensFailure.objects.filter(proposal_id__in=ids)
    saying_429 = failures.filter(error__contains="answered 429 for").count()
    once = sum(1 for pid in ids if escalations[pid] == 1)
    s.line("escalated exactly once (target all)", f"{once} of {len(ids)}")
    s.line("escalations naming a failed llm lens", f"{naming} of {len(ids)}")
    s.line("lens failures saying 'answered 429 for'", f"{saying_429} of {failures.count()}")
    s.line("example", str(failures.values_list("lens_name", "error").first()))
    s.line(
        f"slowest submit→final (target ≤ deadline + 10 = {args.deadline + 10} s)",
        f"{slowest:.1f} s",
    )
    return {
        "escalated_once": f"{once}/{len(ids)}",
        "naming_429": f"{saying_429}/{failures.count()}",
        "slowest_s": f"{slowest:.1f}",
        "per_s": f"{result['rate']:.2f}",
    }


if __name__ == "__main__":
    main()
