"""Notifications under a burst: N escalations assigned in one minute, digests, a killed worker.

Run:  .venv/bin/python benchmarks/notifications.py [--n 1000] [--people 5] [--period 1]
          [--spread 60] [--smtp-delay 1.5] [--minute 60] [--sweep 5] [--lease 15]

On a fresh bench PostgreSQL database and Redis (BENCH_DB, BENCH_BROKER_URL) it
makes `--people` reviewers in a group whose email channel tells of assignments,
each wanting a digest every `--period` minutes, and a real SMTP server on
loopback (aiosmtpd, in this process) that takes `--smtp-delay` seconds per
message. A worker and its scheduler start (prefork 2, beat; the sweep every
`--sweep` seconds, a lease of `--lease`); then `--n` escalations are assigned to the group over
`--spread` seconds through the service staff use (`escalation_assign`), each an
event in its own transaction. The drill: as soon as the SMTP server is in the
middle of receiving a message, the whole worker is killed with SIGKILL and a new
one started; what the dead one held is sent again once its lease runs out.
`--minute` shortens the digest's minute (REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS), so a
tiny run (the suite's) sees its digests in seconds.

Checks, and prints: every notice went into a message, every message reached the
SMTP server (by its Message-ID; a message the killed worker was sending may
arrive twice, the same Message-ID, as at-least-once allows), and no person got
more than one digest in any period. Last a machine-readable line:

    RESULT escalations=<n> people=<p> digests=<d> most_per_period=<m> lost=<l>
        resends=<r> killed_mid_send=<true|false> ok=<true|false>
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from email import message_from_bytes
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402


class SlowSmtp:
    """aiosmtpd's handler: each message takes `delay` seconds, and who got which is kept."""

    def __init__(self, delay: float):
        self.delay = delay
        self.received: list[tuple[str, str, float]] = []  # (to, Message-ID, when)
        self.receiving = threading.Event()

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        import asyncio

        self.receiving.set()
        await asyncio.sleep(self.delay)
        message = message_from_bytes(envelope.original_content)
        for to in envelope.rcpt_tos:
            self.received.append((to, message["Message-ID"], time.time()))
        return "250 OK"


def seed(people: int, period: int):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from reviewapp.notifications.models import Channel, Event
    from reviewapp.notifications.services import preference_set
    from reviewapp.review.groups import REVIEWERS_GROUP

    reviewers, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    team = Group.objects.create(name="bench-billing")
    Channel.objects.create(name="team mail", kind="email", group=team, events=[Event.ASSIGNED])
    for i in range(people):
        person = get_user_model().objects.create_user(
            f"reviewer-{i}", email=f"reviewer-{i}@example.com"
        )
        person.groups.add(reviewers, team)
        preference_set(user=person, mode="digest", digest_minutes=period)
    staff = get_user_model().objects.create_user("bench-staff", is_staff=True)
    return team, staff


def escalations(n: int):
    """`n` escalated proposals written in bulk (as benchmarks/deadlines.py does)."""
    from django.utils import timezone

    from benchmarks.deadlines import seed as seed_escalations
    from reviewapp.review.models import Escalation

    seed_escalations(n, timezone.now() + timedelta(days=1), 1)
    Escalation.objects.update(due_at=None, on_deadline="")  # no deadline here
    return list(Escalation.objects.order_by("id"))


def assign_over(rows, team, staff, spread: float) -> None:
    from reviewapp.review.services.assignments import escalation_assign

    began = time.monotonic()
    for i, escalation in enumerate(rows):
        wait = began + spread * i / len(rows) - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        escalation_assign(escalation=escalation, group=team, by=staff)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="escalations assigned")
    parser.add_argument("--people", type=int, default=5, help="reviewers in the group")
    parser.add_argument("--period", type=int, default=1, help="digest period, minutes")
    parser.add_argument("--spread", type=float, default=60.0, help="seconds the burst spans")
    parser.add_argument("--smtp-delay", type=float, default=1.5, help="seconds per message")
    parser.add_argument("--minute", type=int, default=60, help="seconds a digest minute lasts")
    parser.add_argument("--sweep", type=float, default=5.0, help="seconds between sweeps")
    parser.add_argument(
        "--lease", type=float, default=15.0, help="seconds a sender holds a message"
    )
    args = parser.parse_args()

    from aiosmtpd.controller import Controller

    smtp = SlowSmtp(args.smtp_delay)
    controller = Controller(smtp, hostname="127.0.0.1", port=s.free_port())
    controller.start()
    s.heading(f"notifications: {args.n} escalations in {args.spread:g} s, {args.people} people")
    s.line("load average at start", s.load_average())
    env = s.fresh_stack(
        "notifications",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(controller.port),
        EMAIL_USE_TLS="false",
        # Two thirds of the lease, which must exceed it: 10 s of the default 15.
        EMAIL_TIMEOUT=f"{args.lease * 2 / 3:g}",
        REVIEWAPP_NOTIFY_SWEEP_SECONDS=f"{args.sweep:g}",
        REVIEWAPP_NOTIFY_LEASE_SECONDS=f"{args.lease:g}",
        REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS=str(args.minute),
    )
    workers = []
    try:
        from django.db.models import Count

        from reviewapp.notifications.models import Message, Notice

        team, staff = seed(args.people, args.period)
        rows = escalations(args.n)
        workers.append(s.start_worker(env, concurrency=2, beat=True))
        burst = threading.Thread(target=assign_over, args=(rows, team, staff, args.spread))
        burst.start()
        killed = smtp.receiving.wait(timeout=args.spread + 180)
        if killed:
            # Mid-send: the SMTP server is inside a message's DATA right now.
            os.killpg(workers[0].pid, signal.SIGKILL)
            workers[0].process.wait()
            s.line("drill", "SIGKILL to the whole worker while a message was being sent")
            workers.append(s.start_worker(env, concurrency=2, beat=True, name="worker-2"))
        burst.join()
        period_s = args.period * args.minute
        deadline = time.monotonic() + period_s * 3 + 120
        while True:
            waiting = Notice.objects.filter(message__isnull=True).count()
            pending = Message.objects.exclude(status=Message.Status.DELIVERED).count()
            if not waiting and not pending:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{waiting} notices and {pending} messages still not sent")
            time.sleep(1)
        messages = list(Message.objects.select_related("mailbox__user"))
        per_period = Counter(
            (m.to, int(m.created_at.timestamp() // period_s)) for m in messages
        )
        ids = {m.message_id for m in messages}
        received_ids = Counter(message_id for _, message_id, _ in smtp.received)
        lost = len(ids - set(received_ids))
        resends = sum(count - 1 for count in received_ids.values() if count > 1)
        unnoticed = Notice.objects.count() - args.n * args.people
        biggest = Notice.objects.values("message").annotate(n=Count("id")).order_by("-n").first()
        most = max(per_period.values())
        s.line("notices (one per person per escalation)", f"{Notice.objects.count()}")
        s.line("digests composed", f"{len(messages)} ({len(messages) / args.people:.1f} a person)")
        s.line("largest digest", f"{biggest['n']} escalations")
        s.line("most digests one person got in one period", str(most))
        s.line("messages the SMTP server never got", str(lost))
        s.line("re-sent after the kill (same Message-ID)", str(resends))
        s.line("load average at end", s.load_average())
        ok = lost == 0 and most <= 1 and unnoticed == 0 and killed
        print(
            f"RESULT escalations={args.n} people={args.people} digests={len(messages)} "
            f"most_per_period={most} lost={lost} resends={resends} "
            f"killed_mid_send={str(bool(killed)).lower()} ok={str(ok).lower()}"
        )
    finally:
        for worker in workers:
            if worker.alive():
                worker.stop()
        controller.stop()


if __name__ == "__main__":
    main()
