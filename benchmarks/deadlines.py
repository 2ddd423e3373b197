"""Review deadlines: N open escalations all due in the same minute, each decided once, in time.

Run:  .venv/bin/python benchmarks/deadlines.py [--n 10000] [--concurrency 2] [--target 60]

On a fresh bench PostgreSQL database and Redis (BENCH_DB, BENCH_BROKER_URL) it
writes `--n` escalated proposals in bulk (SQL through the ORM, no pipeline: the
benchmark is about the deadline, not how the escalations came), their review
deadlines spread over one minute starting a little after a worker and its
scheduler (prefork `--concurrency`, beat, as compose runs them) are up; three in
four reject on deadline, one in eight approves, one in eight is kept open. Then
it waits until every deadline has been acted on and reads, per escalation, how
late that was (`expired_at - due_at`: the fallback decision is signed and
committed in that transaction).

Prints the lateness p50 / p95 / max against `--target`, how many fallback
decisions were signed and that no escalation got two, that the ledger holds each
exactly once, and last a machine-readable line:

    RESULT deadlines=<n> decided=<d> kept_open=<k> late_p95_s=<s> late_max_s=<s>
        target_s=<t> ok=<true|false>
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402

BATCH = 2000


def seed(n: int, first_due, spread_s: float) -> None:
    """`n` escalated proposals on one panel, due between `first_due` and `spread_s` later."""
    import hashlib

    from reviewapp.review.models import Escalation, Panel, Proposal
    from reviewapp.review.services.panels import panel_configure
    from reviewapp.review.services.proposals import panel_snapshot

    panel = panel_configure(
        name="bench-deadlines", need=2, lenses=list(_lenses()), grounding_policy="reject"
    )
    Panel.objects.filter(pk=panel.pk).update(review_deadline=timedelta(hours=4))
    snapshot = panel_snapshot(panel)
    tally = {"passed": 1, "failed": 1, "asked": 2, "need": 2, "outcome": "no_quorum"}
    for start in range(0, n, BATCH):
        numbers = range(start, min(n, start + BATCH))
        proposals = Proposal.objects.bulk_create(
            Proposal(
                panel=panel,
                panel_version=panel.version,
                panel_snapshot=snapshot,
                content=f"Deadline case {i}: refund 40 EUR.",
                content_sha256=hashlib.sha256(f"Deadline case {i}".encode()).hexdigest(),
                request_sha256=hashlib.sha256(f"request {i}".encode()).hexdigest(),
                status=Proposal.Status.ESCALATED,
                lenses_asked=2,
                lenses_answered=2,
                tally=tally,
            )
            for i in numbers
        )
        Escalation.objects.bulk_create(
            Escalation(
                proposal=proposal,
                reasons=["no_quorum"],
                detail={"explanation": "The lenses split.", "failed_lenses": []},
                due_at=first_due + timedelta(seconds=spread_s * i / n),
                on_deadline=_on_deadline(i),
            )
            for i, proposal in zip(numbers, proposals, strict=True)
        )


def _on_deadline(i: int) -> str:
    return {0: "keep_open", 1: "approve"}.get(i % 8, "reject")


def _lenses():
    from reviewapp.review.models import Lens

    for name in ("bench-deadline-a", "bench-deadline-b"):
        yield Lens.objects.create(name=name, backend=Lens.Backend.RECORDED, instructions="Judge.")


def wait_all_acted(n: int, timeout: float) -> None:
    from reviewapp.review.models import Escalation

    began = time.monotonic()
    while True:
        left = Escalation.objects.filter(expired_at__isnull=True).count()
        if not left:
            return
        if time.monotonic() - began > timeout:
            raise SystemExit(f"{left} of {n} deadlines still not acted on after {timeout:g} s")
        time.sleep(0.5)


def lateness() -> list[float]:
    from reviewapp.review.models import Escalation

    return [
        (expired - due).total_seconds()
        for due, expired in Escalation.objects.values_list("due_at", "expired_at")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="escalations due in one minute")
    parser.add_argument("--spread", type=float, default=60.0, help="seconds the deadlines span")
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes")
    parser.add_argument("--target", type=float, default=60.0, help="most seconds late allowed")
    parser.add_argument("--lead", type=float, default=20.0, help="seconds before the first is due")
    args = parser.parse_args()

    s.heading(f"deadlines: {args.n} escalations due within {args.spread:g} s")
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("deadlines")
    worker = None
    try:
        from django.db.models import Count
        from django.utils import timezone

        from reviewapp.ledger.models import LedgerEntry
        from reviewapp.review.models import Decision, Escalation

        began = time.perf_counter()
        first_due = timezone.now() + timedelta(seconds=args.lead)
        seed(args.n, first_due, args.spread)
        s.line("seeded (bulk, in this process)", f"{time.perf_counter() - began:.1f} s")
        if timezone.now() >= first_due:
            raise SystemExit("seeding outlasted --lead: raise it so no deadline passes before")
        worker = s.start_worker(env, concurrency=args.concurrency, beat=True)
        wait_all_acted(args.n, timeout=args.spread + args.target + 240)
        late = sorted(lateness())
        decided = Decision.objects.filter(basis=Decision.Basis.FALLBACK).count()
        kept_open = Escalation.objects.filter(status=Escalation.Status.OPEN).count()
        twice = (
            Decision.objects.values("proposal").annotate(n=Count("id")).filter(n__gt=1).count()
        )
        in_ledger = LedgerEntry.objects.filter(kind="decision").count()
        p50, p95 = s.percentile(late, 50), s.percentile(late, 95)
        s.line("fallback decisions signed", f"{decided} (+ {kept_open} kept open)")
        s.line("escalations decided twice", str(twice))
        s.line("decisions in the ledger", f"{in_ledger} (one entry each)")
        s.line(
            "late after the deadline, p50 / p95 / max",
            f"{p50:.1f} s / {p95:.1f} s / {late[-1]:.1f} s (target ≤ {args.target:g} s)",
        )
        s.line("load average at end", s.load_average())
        ok = (
            decided + kept_open == args.n
            and twice == 0
            and in_ledger == decided
            and late[-1] <= args.target
        )
        print(
            f"RESULT deadlines={args.n} decided={decided} kept_open={kept_open} "
            f"late_p95_s={p95:.1f} late_max_s={late[-1]:.1f} target_s={args.target:g} "
            f"ok={str(ok).lower()}"
        )
    finally:
        if worker is not None:
            worker.stop()


if __name__ == "__main__":
    main()
