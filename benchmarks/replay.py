"""A replay of a draft panel on history: N proposals × 3 new LLM lenses at the provider's speed.

Run:  .venv/bin/python benchmarks/replay.py [--n 100] [--latency 1] [--target 10]
          [--live 0] [--live-rate 4]

On a fresh bench PostgreSQL database and Redis (BENCH_DB, BENCH_BROKER_URL) it
seeds `--n` proposals that a split panel of two recorded lenses escalated and a
reviewer decided (in this process, through the services), starts the loopback
OpenAI-compatible provider (benchmarks/_provider.py, answering after
`--latency` seconds) and a worker as compose runs it (prefork 2, beat), then
plans a replay whose draft panel is three LLM lenses new to it (need 2), so
every proposal needs three real calls, starts it, and times start → done.

The calls overlap on the worker's LLM loop under the lenses' endpoint limits,
as live traffic's do: sequentially they would take n × 3 × latency.

With ``--live K``, gunicorn starts too and K live proposals on
`llm_pipeline.py`'s LLM panel (3 LLM lenses, need 2) are submitted over HTTP
at ``--live-rate`` per second, the replay starting two seconds into them;
their submit→final p50 is set against `llm_pipeline.py`'s paced target
(latency + 1 s).

Prints the calls planned and made, the replay's time against `--target`, the
side-by-side counts, and last a machine-readable line:

    RESULT replay_s=<s> proposals=<n> calls=<c> target_s=<t> ok=<true|false>
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402
from benchmarks.llm_pipeline import Provider, contents, llm_panel, run  # noqa: E402

RECORDED = ("bench-replay-accuracy", "bench-replay-tone")
LLM = ("bench-replay-llm-accuracy", "bench-replay-llm-tone", "bench-replay-llm-safety")


def seed(n: int) -> object:
    """A split panel (need 2 of 2 recorded lenses: one passes, one fails) and `n` decided cases."""
    import hashlib
    import json

    from benchmarks._provider import TICKET
    from reviewapp.review.evaluation.tasks import evaluate_proposal, finalize_proposal
    from reviewapp.review.models import Escalation, Lens, RecordedResponse
    from reviewapp.review.services.escalations import escalation_decide
    from reviewapp.review.services.panels import panel_configure
    from reviewapp.review.services.proposals import proposal_submit

    lenses = [
        Lens.objects.create(name=name, backend=Lens.Backend.RECORDED, instructions="Judge.")
        for name in RECORDED
    ]
    panel = panel_configure(name="bench-replay", need=2, lenses=lenses, grounding_policy="reject")
    for i, item in enumerate(contents(n, "replay-")):
        cite = TICKET.search(item["content"]).group(0)
        digest = hashlib.sha256(item["content"].encode()).hexdigest()
        for lens, verdict in zip(lenses, ("pass", "fail"), strict=True):
            answer = {"verdict": verdict, "rationale": "Read.", "claims": [{"cite": cite}]}
            RecordedResponse.objects.create(
                lens=lens, content_sha256=digest, responses=[json.dumps(answer)]
            )
        proposal, _ = proposal_submit(panel_name=panel.name, **item)
        evaluate_proposal(proposal.pk, llm_answers=[])
        finalize_proposal(proposal.pk)
        escalation_decide(
            escalation_id=Escalation.objects.get(proposal=proposal).pk,
            outcome="approved" if i % 2 else "rejected",
            rationale="Checked against the ticket.",
            decided_by_name="bench-reviewer",
        )
    return panel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="human-decided proposals replayed")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--target", type=float, default=10.0, help="seconds the replay must beat")
    parser.add_argument("--live", type=int, default=0, help="live proposals submitted meanwhile")
    parser.add_argument("--live-rate", type=float, default=4.0, help="live proposals per second")
    args = parser.parse_args()

    s.heading(f"replay: {args.n} proposals × {len(LLM)} new llm lenses, {args.latency:g} s a call")
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("replay")
    provider = Provider(args.latency, 0)
    worker = web = None
    live: dict = {}
    try:
        from reviewapp.replay.models import Replay
        from reviewapp.replay.services import replay_plan, replay_start
        from reviewapp.review.models import Lens

        started = time.perf_counter()
        panel = seed(args.n)
        s.line("seeded (in this process)", f"{time.perf_counter() - started:.1f} s")
        s.flush_redis(env["CELERY_BROKER_URL"])  # the seed's own tasks: already final
        fresh = [
            Lens.objects.create(
                name=name,
                backend=Lens.Backend.LLM,
                base_url=provider.base_url,
                model="bench-model",
                instructions=f"Judge as {name}.",
                timeout_seconds=60,
            )
            for name in LLM
        ]
        worker = s.start_worker(env, concurrency=2, beat=True)
        replay = replay_plan(panel=panel, members=fresh, need=2, size=args.n)
        s.line("calls planned (shown before it starts)", str(replay.planned_calls))
        provider.stats(reset=True)
        traffic = None
        if args.live:
            web, port = s.start_gunicorn(env, workers=2)
            live_panel = llm_panel(provider.base_url, None)
            token = s.api_token("bench-replay-live", "submit,read")
            roots = {"worker": worker.pid, "web": web.pid, "provider": provider.pid}

            def submit_live() -> None:
                live.update(
                    run(
                        port,
                        token,
                        live_panel.name,
                        contents(args.live, "live-"),
                        clients=8,
                        rate=args.live_rate,
                        meter_roots=roots,
                    )
                )

            traffic = threading.Thread(target=submit_live)
            traffic.start()
            time.sleep(2.0)
        began = time.perf_counter()
        replay_start(replay=replay)
        while True:
            replay.refresh_from_db()
            if replay.is_finished:
                break
            if time.perf_counter() - began > 300:
                raise SystemExit(f"the replay did not finish in 300 s:\n{worker.log()}")
            time.sleep(0.05)
        took = time.perf_counter() - began
        if traffic is not None:
            traffic.join()
        stats = provider.stats()
        s.line("status", replay.status)
        s.line("calls the provider answered", str(stats.get("calls", stats)))
        s.line("most calls in flight at once", str(stats.get("max_in_flight", "?")))
        s.line("replay, start → done", f"{took:.2f} s (target < {args.target:g} s)")
        s.line(
            "sequential calls would take",
            f"{args.n * len(LLM) * args.latency:.0f} s",
        )
        for side in ("current", "draft"):
            counts = replay.result[side]
            s.line(
                f"{side}",
                f"{counts['automatic']} automatic, {counts['escalated']} escalated, "
                f"{len(counts['contradictions'])} contradict the reviewer",
            )
        ok = replay.status == Replay.Status.DONE and took < args.target
        live_part = ""
        if live:
            paced_target = args.latency + 1
            verdict = "meets" if live["p50"] <= paced_target else "MISSES"
            s.line(
                f"live: {args.live} at {args.live_rate:g}/s, submit→final p50 / p95",
                f"{live['p50']:.2f} s / {live['p95']:.2f} s ({verdict} p50 ≤ {paced_target:g} s)",
            )
            s.line("live outcomes", str(dict(live["outcomes"])))
            ok = ok and live["p50"] <= paced_target
            live_part = f" live_p50_s={live['p50']:.2f}"
        print(
            f"RESULT replay_s={took:.2f} proposals={args.n} calls={replay.planned_calls} "
            f"target_s={args.target:g}{live_part} ok={str(ok).lower()}"
        )
    finally:
        if web is not None:
            web.stop()
        if worker is not None:
            worker.stop()
        provider.stop()


if __name__ == "__main__":
    main()
