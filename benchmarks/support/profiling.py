"""py-spy profiles of benchmark processes: record GIL-holding samples, say where they went."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from .stack import VENV_BIN


class Profiler:
    """py-spy recording a process tree (collapsed stacks), stopped with SIGINT."""

    def __init__(self, pid: int, out: Path, rate: int = 200):
        self.out = out
        self.process = subprocess.Popen(
            [
                str(VENV_BIN / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--subprocesses",
                "--format",
                "raw",
                "--rate",
                str(rate),
                "--output",
                str(out),
                "--nonblocking",
                # Only samples holding the GIL: CPU, not time spent waiting on a socket.
                "--gil",
                # Each stack starts with its thread, so a process's threads
                # (a pool process's main thread, its LLM loop) can be told apart.
                "--threads",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


CATEGORIES = [
    # (label, substring of a frame's file path); the leaf-most match names a sample.
    ("psycopg: socket I/O and waiting on PostgreSQL", "psycopg/"),
    ("Django ORM: SQL compilation", "django/db/models/sql/"),
    ("Django ORM: querysets, model instances, fields", "django/db/"),
    ("JSON encode/decode", "json/"),
    ("signing (PyNaCl) and canonical JSON", "nacl/"),
    ("redis-py (broker/cache client)", "redis/"),
    ("kombu (messaging)", "kombu/"),
    ("Celery/billiard (task machinery, pool IPC)", "celery/"),
    ("Celery/billiard (task machinery, pool IPC)", "billiard/"),
    ("logging", "logging/"),
    ("gunicorn", "gunicorn/"),
    ("django-ninja / pydantic", "ninja/"),
    ("django-ninja / pydantic", "pydantic"),
    ("Django request/response, middleware, templates", "django/"),
    ("reviewapp domain code (core: cite, quorum, routing, merkle)", "reviewapp/core/"),
    ("reviewapp services, tasks, views", "reviewapp/"),
]


def summarise_profile(path: Path, top: int = 15) -> None:
    """Busy samples by category (leaf-most matching frame) and the heaviest project functions."""
    if not path.exists():
        print(f"  (no profile written at {path})")
        return
    by_category: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for raw in path.read_text(errors="replace").splitlines():
        stack, _, count = raw.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        label = "other (interpreter, stdlib)"
        for frame in reversed(frames):
            hit = next((name for name, needle in CATEGORIES if needle in frame), None)
            if hit:
                label = hit
                break
        by_category[label] += n
        seen = set()
        for frame in frames:
            if "reviewapp/" in frame:
                name = frame.split(" (")[0]
                where = frame.rsplit("reviewapp/", 1)[-1].split(":")[0].rstrip(")")
                key = f"{name} ({where})"
                if key not in seen:
                    seen.add(key)
                    inclusive[key] += n
    print(f"  samples (py-spy, holding the GIL): {total}")
    for label, n in by_category.most_common():
        print(f"  {100 * n / max(total, 1):5.1f}%  {label}")
    print("  heaviest project functions (inclusive):")
    for key, n in inclusive.most_common(top):
        print(f"  {100 * n / max(total, 1):5.1f}%  {key}")
