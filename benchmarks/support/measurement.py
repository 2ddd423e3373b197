"""Figures from a run: percentiles, task run times from a worker log, CPU seconds per process."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path

from .stack import BENCH_DB, PG_URL


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def task_runtimes(log_path: Path, start_offset: int = 0) -> dict[str, list[float]]:
    """Seconds per task run, by task name, from a worker log (Celery's "succeeded in" lines)."""
    import re

    pattern = re.compile(
        r"Task ([\w.]+)\[[0-9a-f-]+\] (?:succeeded|raised|retry)[^\n]*? in ([0-9.e-]+)s"
    )
    out: dict[str, list[float]] = {}
    with open(log_path, "rb") as f:
        f.seek(start_offset)
        text = f.read().decode(errors="replace")
    for name, seconds in pattern.findall(text):
        out.setdefault(name, []).append(float(seconds))
    return out


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return out


def cpu_seconds(pids: Iterable[int]) -> dict[int, float]:
    """User + system CPU seconds each live process has used so far."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / _CLK_TCK
    return out


def on_cpu_seconds(pid: int) -> float:
    """Seconds a single-threaded process (a PostgreSQL backend) has run on a CPU, to the
    nanosecond (`cpu_seconds` counts 10 ms ticks: a short run's backend shows none);
    0 when it is not on this machine."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except OSError:
        return 0.0


class CpuMeter:
    """CPU seconds used between start() and stop() by process trees and PostgreSQL backends.

    The machine may be shared, so wall-clock figures move with other people's
    load; CPU seconds per unit of work do not, and bound what 2 idle cores could
    do. PostgreSQL backends come and go (CONN_MAX_AGE), so they are sampled
    every half second from a thread; a backend that exits loses at most that.
    Sessions of this process are excluded.
    """

    def __init__(self, database: str = BENCH_DB, server_url: str = PG_URL, **roots: int):
        import threading

        self.roots = roots
        self.database = database
        self.server_url = server_url
        self.before: dict[str, dict[int, float]] = {}
        self.pg_first: dict[int, float] = {}
        self.pg_last: dict[int, float] = {}
        self.used: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch_postgres, daemon=True)

    def _watch_postgres(self) -> None:
        import psycopg

        mine = set(self._mine)
        with psycopg.connect(f"{self.server_url}/postgres", autocommit=True) as conn:
            mine.add(conn.info.backend_pid)
            while True:
                pids = [
                    row[0]
                    for row in conn.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s", [self.database]
                    )
                    if row[0] not in mine
                ]
                for pid, used in cpu_seconds(pids).items():
                    self.pg_first.setdefault(pid, used)
                    self.pg_last[pid] = used
                if self._stop.wait(0.5):
                    return

    def start(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self._mine = {cursor.fetchone()[0]}
        self.before = {name: cpu_seconds(process_tree(pid)) for name, pid in self.roots.items()}
        self._thread.start()
        time.sleep(0.6)
        # Backends alive now count from here; later ones from birth.
        self._born_before = set(self.pg_first)

    def stop(self) -> dict[str, float]:
        for name, pid in self.roots.items():
            after = cpu_seconds(process_tree(pid))
            self.used[name] = sum(v - self.before[name].get(p, 0.0) for p, v in after.items())
        self._stop.set()
        self._thread.join(5)
        # A last look at the backends still alive: a run shorter than the poll's period
        # would otherwise count nothing of them.
        self.pg_last.update(cpu_seconds(self.pg_last))
        self.used["postgres"] = sum(
            last - (self.pg_first[pid] if pid in self._born_before else 0.0)
            for pid, last in self.pg_last.items()
        )
        return self.used


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min, {os.cpu_count()} CPUs)"
