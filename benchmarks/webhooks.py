"""Webhooks: deliveries per second to a loopback receiver, and what the outbox adds to a proposal.

Run:  .venv/bin/python benchmarks/webhooks.py [--proposals 300] [--deliveries 1000]

On a fresh PostgreSQL database of its own (`reviewapp_bench_webhooks`, or
BENCH_WEBHOOKS_DB) and Redis /13, so it never disturbs the other benchmarks'
`reviewapp_bench` and /14 (production settings, DEBUG off; loopback receivers allowed
with REVIEWAPP_WEBHOOK_ALLOW_LOCAL):

1. The outbox's cost per proposal, in this process, on the 3-lens recorded
   panel of benchmarks/pipeline.py: each proposal is submitted and evaluated
   in-process (`proposal_submit`, then `evaluate_proposal.run`), three times
   over fresh proposals:
     a. with the webhook recording calls replaced by no-ops (the pipeline alone),
     b. with the outbox in place and an endpoint of another client, which may
        not see the proposal (checked, nothing written),
     c. with one endpoint subscribed to every event, so each proposal writes a
        delivery row and publishes its send task after commit.
   CPU is this process plus its PostgreSQL backend (the work a proposal costs
   the web process and the worker together, without the broker hop). Prints
   CPU ms per proposal for each and the outbox's share: target under 10 %.
2. Deliveries per second: one Celery worker (`--concurrency 2`) sends
   `--deliveries` pings, recorded in one transaction, to a loopback HTTP
   receiver in this process that answers 204; prints deliveries per second and
   the worker's CPU per delivery.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402

TARGET_SHARE = 0.10
DATABASE = os.environ.get("BENCH_WEBHOOKS_DB", "reviewapp_bench_webhooks")
BROKER = os.environ.get("BENCH_WEBHOOKS_BROKER_URL", "redis://127.0.0.1:6379/13")


class Counter(BaseHTTPRequestHandler):
    """Answers every POST with 204 and counts it: the cheapest honest receiver."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real receivers do
    count = 0
    lock = threading.Lock()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
        with Counter.lock:
            Counter.count += 1

    def log_message(self, *args):
        pass


def backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def run_proposals(panel_name: str, items: list[dict], client) -> float:
    """Submit and evaluate each item in this process; CPU seconds (this process + its backend)."""
    from reviewapp.review.evaluation.tasks import evaluate_proposal
    from reviewapp.review.services.proposals import proposal_submit

    pid = backend_pid()
    cpu_before, db_before = time.process_time(), s.cpu_seconds([pid]).get(pid, 0.0)
    for item in items:
        proposal, _ = proposal_submit(
            panel_name=panel_name, content=item["content"], title=item["title"], client=client
        )
        evaluate_proposal.run(proposal.pk)
    db_after = s.cpu_seconds([pid]).get(pid, 0.0)
    return (time.process_time() - cpu_before) + (db_after - db_before)


def outbox_cost(n: int) -> None:
    from unittest import mock

    from reviewapp.review.services.clients import api_client_create
    from reviewapp.webhooks.models import Delivery
    from reviewapp.webhooks.services import endpoint_create

    s.heading(f"Outbox cost per proposal ({n} proposals per variant, in-process)")
    panel = s.pipeline_panel()
    client, _ = api_client_create(name="bench-agent", scopes=["submit", "read"])
    batches = [s.pipeline_contents(n, tag=f"{tag}-") for tag in ("warm", "a", "b", "c")]
    s.record_answers([item for batch in batches for item in batch])
    run_proposals(panel.name, batches[0][: max(10, n // 10)], client)  # warm caches and plans

    # What the webhooks app does on review's events (webhooks/receivers.py).
    hooks = [
        f"reviewapp.webhooks.receivers.{name}"
        for name in (
            "webhook_decided_watchers",
            "webhook_record_decided",
            "webhook_record_escalated",
            "webhook_record_judgement_requested",
        )
    ]
    no_outbox = [mock.patch(target, lambda **kwargs: None) for target in hooks]
    idle_client, _ = api_client_create(name="bench-unsubscribed", scopes=["submit", "read"])
    endpoint_create(
        client=client,
        url="http://127.0.0.1:9/never-called",  # no worker runs in this step
        events=["proposal.decided", "proposal.escalated"],
    )
    used = {"alone": 0.0, "idle": 0.0, "full": 0.0}
    before = Delivery.objects.count()
    # Interleaved in small rounds, so drift (caches, table growth, neighbours) hits all three.
    rounds = 10
    for r in range(rounds):
        part = slice(r * n // rounds, (r + 1) * n // rounds)
        for patch in no_outbox:
            patch.start()
        used["alone"] += run_proposals(panel.name, batches[1][part], idle_client)
        for patch in no_outbox:
            patch.stop()
        # The endpoint belongs to `client`: it may not see `idle_client`'s proposals.
        used["idle"] += run_proposals(panel.name, batches[2][part], idle_client)
        used["full"] += run_proposals(panel.name, batches[3][part], client)
    written = Delivery.objects.count() - before
    s.flush_redis(BROKER)  # the send tasks published for "full": no worker will take them
    alone, idle, full = used["alone"], used["idle"], used["full"]

    per = {k: v / n * 1000 for k, v in (("alone", alone), ("idle", idle), ("full", full))}
    s.line("pipeline alone (outbox calls are no-ops)", f"{per['alone']:.2f} ms CPU/proposal")
    s.line(
        "outbox, another client's endpoint (checked)",
        f"{per['idle']:.2f} ms  (+{per['idle'] - per['alone']:.2f} ms, "
        f"{(per['idle'] - per['alone']) / per['alone']:+.1%})",
    )
    share = (per["full"] - per["alone"]) / per["alone"]
    s.line(
        "outbox, one endpoint: a delivery per proposal",
        f"{per['full']:.2f} ms  (+{per['full'] - per['alone']:.2f} ms, {share:+.1%})",
    )
    s.line("deliveries written in (c)", f"{written} for {n} proposals")
    verdict = "meets" if share < TARGET_SHARE else "MISSES"
    s.line("target: outbox adds < 10 % of a proposal's CPU", f"{verdict} ({share:.1%})")


def delivery_rate(env: dict[str, str], m: int) -> None:
    from django.db import transaction

    from reviewapp.review.services.clients import api_client_create
    from reviewapp.webhooks.events import webhook_record_ping
    from reviewapp.webhooks.models import Delivery
    from reviewapp.webhooks.services import endpoint_create

    s.heading(f"Deliveries per second ({m} pings, one worker --concurrency 2)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client, _ = api_client_create(name="bench-receiver", scopes=["read"])
    endpoint, _ = endpoint_create(
        client=client,
        url=f"http://127.0.0.1:{server.server_port}/hook",
        events=["proposal.decided"],
    )
    worker = s.start_worker(env, concurrency=2)
    try:
        meter = s.CpuMeter(database=DATABASE, worker=worker.pid)
        meter.start()
        started = time.perf_counter()
        with transaction.atomic():
            for _ in range(m):
                webhook_record_ping(endpoint=endpoint)
        deadline = time.monotonic() + 300
        while Counter.count < m:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{Counter.count} of {m} deliveries arrived in 300 s")
            time.sleep(0.01)
        wall = time.perf_counter() - started
        used = meter.stop()
        time.sleep(1)  # let the last status updates commit
        delivered = Delivery.objects.filter(status="delivered").count()
    finally:
        worker.stop()
        server.shutdown()
    s.line("deliveries per second (commit → receiver)", f"{m / wall:.0f}/s  ({wall:.1f} s)")
    s.line("worker CPU per delivery", f"{used['worker'] / m * 1000:.2f} ms")
    s.line("postgres CPU per delivery", f"{used['postgres'] / m * 1000:.2f} ms")
    s.line("marked delivered / received", f"{delivered} / {Counter.count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proposals", type=int, default=300)
    parser.add_argument("--deliveries", type=int, default=1000)
    args = parser.parse_args()
    env = s.bench_env(
        "webhooks",
        database_url=f"{s.PG_URL}/{DATABASE}",
        broker_url=BROKER,
        REVIEWAPP_WEBHOOK_ALLOW_LOCAL="true",
    )
    s.reset_database(DATABASE)
    s.flush_redis(BROKER)
    s.django_setup(env)
    s.migrate()
    print(f"load average: {s.load_average()}")
    outbox_cost(args.proposals)
    delivery_rate(env, args.deliveries)


if __name__ == "__main__":
    main()
