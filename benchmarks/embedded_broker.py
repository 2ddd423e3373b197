"""Drill: the embedded broker (what `make run` uses) under beat and several producers.

Run:  .venv/bin/python benchmarks/embedded_broker.py [--producers 4] [--tasks 1000]

Starts what `make run` starts, on the embedded defaults (no CELERY_BROKER_URL, no
DATABASE_URL) in a private var directory: a prefork worker with beat (every beat
task firing twice a second instead of every 30 s) on the `celery` queue; plus a
second prefork worker on the same queue, so the broker shares one queue between
two consumers (a scaled-out worker); and a process asking every worker for its
queues in a loop, as /healthz does (broadcasts through the pidbox exchange).
Then several producer processes push tasks at once. Each task appends its
number to a log with one O_APPEND write.

With BENCH_SQLITE_TEMPLATE (a migrated SQLite file, as the suite's tiny run passes),
the database starts as a copy of it instead of being migrated from nothing.

It passes when both workers are still running at the end, no log says
"Unrecoverable error" or JSONDecodeError, and every task ran (none lost).
Prints: tasks sent, ran, lost, ran twice, wall time and rate, tasks run by each
worker, worker exits.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARKS = "EMBEDDED_BROKER_DRILL_MARKS"


def _register_task():
    from reviewapp.celery import app

    @app.task(name="benchmarks.embedded_broker.mark", ignore_result=True)
    def mark(n: int) -> None:
        """Record that task `n` ran: one short O_APPEND write is atomic."""
        fd = os.open(os.environ[MARKS], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{n}\n".encode())
        finally:
            os.close(fd)

    return mark


mark = _register_task()


def drill_env(var_dir: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CELERY_BROKER_URL", "DATABASE_URL", "CACHE_URL")
    }
    env.update(
        PYTHONPATH=str(ROOT),
        DJANGO_SETTINGS_MODULE="reviewapp.settings",
        DEBUG="true",
        REVIEWAPP_VAR_DIR=str(var_dir),
        REVIEWAPP_SWEEP_EVERY_SECONDS="0.5",
        REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS="0.5",
        REVIEWAPP_STUCK_AFTER_SECONDS="1",
        **{MARKS: str(var_dir / "marks.log")},
    )
    return env


def _celery(env, var_dir: Path, name: str, *args: str) -> subprocess.Popen:
    log = open(var_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "reviewapp", "worker",
         "-I", "benchmarks.embedded_broker", "--loglevel", "INFO",
         "--hostname", f"{name}@%h", *args],
        env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


def _wait_ready(var_dir: Path, names: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(b" ready." in (var_dir / f"{n}.log").read_bytes() for n in names):
            return
        time.sleep(0.2)
    raise SystemExit(f"workers not ready within {timeout} s; see {var_dir}")


def produce(first: int, count: int) -> None:
    import django

    django.setup()
    from reviewapp.celery import app

    with app.producer_or_acquire() as producer:
        for n in range(first, first + count):
            mark.apply_async((n,), producer=producer)


def ping_forever() -> None:
    import django

    django.setup()
    from reviewapp.celery import app

    while True:
        app.control.inspect(timeout=0.5).active_queues()
        time.sleep(0.2)


def ran(marks: Path) -> list[int]:
    if not marks.exists():
        return []
    return [int(line) for line in marks.read_text().split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks per producer")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--produce", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ping", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.produce:
        produce(*args.produce)
        return 0
    if args.ping:
        ping_forever()
        return 0

    var_dir = ROOT / "var" / "bench" / f"embedded-broker-{os.getpid()}"
    shutil.rmtree(var_dir, ignore_errors=True)
    var_dir.mkdir(parents=True)
    env = drill_env(var_dir)
    template = os.environ.get("BENCH_SQLITE_TEMPLATE")
    if template:  # migrated already: the migrate below finds nothing to apply
        shutil.copyfile(template, var_dir / "reviewapp.sqlite3")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, cwd=ROOT, check=True)

    workers = {
        "beat": _celery(env, var_dir, "beat", "--beat", "--schedule", str(var_dir / "beat"),
                        "--concurrency", "2", "--queues", "celery"),
        "other": _celery(env, var_dir, "other", "--concurrency", "2", "--queues", "celery"),
    }
    helpers: list[subprocess.Popen] = []
    try:
        _wait_ready(var_dir, list(workers))
        me = [sys.executable, __file__]
        helpers.append(subprocess.Popen([*me, "--ping"], env=env, cwd=ROOT))
        total = args.producers * args.tasks
        started = time.monotonic()
        producers = [
            subprocess.Popen([*me, "--produce", str(i * args.tasks), str(args.tasks)],
                             env=env, cwd=ROOT)
            for i in range(args.producers)
        ]
        sent_ok = all(p.wait() == 0 for p in producers)
        sent_s = time.monotonic() - started
        marks = var_dir / "marks.log"
        deadline = started + args.timeout
        while time.monotonic() < deadline and len(set(ran(marks))) < total:
            if any(w.poll() is not None for w in workers.values()):
                break
            time.sleep(0.5)
        wall = time.monotonic() - started
        time.sleep(2)  # let beat fire a few more times on an idle queue
        done = ran(marks)
        unique = set(done)
        exits = {name: w.poll() for name, w in workers.items()}
        logs_by_worker = {n: (var_dir / f"{n}.log").read_bytes() for n in workers}
        logs = b"".join(logs_by_worker.values())
        # Both consumers of the one queue should have been handed some of it.
        ran_by = {
            n: len(re.findall(rb"embedded_broker\.mark\[[^\]]+\] succeeded", log))
            for n, log in logs_by_worker.items()
        }
        crashed = b"Unrecoverable error" in logs or b"JSONDecodeError" in logs
        sweeps = logs.count(b"sweep_stuck_proposals")

        print(f"embedded broker drill ({env['REVIEWAPP_VAR_DIR']})")
        print(f"  producers                 {args.producers} processes x {args.tasks} tasks")
        print(f"  sent                      {total} in {sent_s:.1f} s (producers ok: {sent_ok})")
        print(f"  ran                       {len(unique)}")
        print(f"  lost                      {total - len(unique & set(range(total)))}")
        print(f"  ran twice                 {len(done) - len(unique)}")
        print(f"  wall time to last task    {wall:.1f} s ({len(unique) / wall:.0f} tasks/s)")
        print(f"  ran by each worker        {ran_by}")
        print(f"  beat tasks received       {sweeps}")
        print(f"  workers still running     {[n for n, code in exits.items() if code is None]}")
        print(f"  crash in worker logs      {crashed}")
        ok = sent_ok and len(unique) == total and not crashed and all(
            code is None for code in exits.values()
        )
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        for process in [*helpers, *workers.values()]:
            if process.poll() is None:
                # A worker's main process alone: it stops its pool and exits. Signalled
                # as a group, the pool died first and the main process waited out its
                # own timeout for it (20 s a worker).
                process.terminate()
        for process in [*helpers, *workers.values()]:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
