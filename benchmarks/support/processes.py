"""The servers and workers a benchmark starts: gunicorn and Celery workers, as child processes.

The Celery worker is started with ``-I benchmarks.support.noop`` so it
registers the no-op tasks; a benchmark measures a bare task round trip
against them and compares the pipeline with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from .stack import ROOT, VENV_BIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout}s")


class Service:
    """A child process in its own session, logging to a file; stopped with its children."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = log_dir / f"{name}-{time.strftime('%H%M%S')}-{os.getpid()}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def wait_log(self, needle: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited early:\n{self.log()}")
            if needle in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise TimeoutError(f"{self.name}: no {needle!r} after {timeout}s:\n{self.log()}")

    def children(self) -> list[int]:
        """Direct children of the main process (Celery's pool processes)."""
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill(self) -> None:
        """SIGKILL the whole process group: nothing gets to clean up."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 30.0) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def start_gunicorn(
    env: dict[str, str],
    *,
    workers: int = 2,
    port: int | None = None,
    access_log: Path | None = None,
) -> tuple[Service, int]:
    """gunicorn with `workers` sync workers on loopback; returns (service, port).

    With `access_log`, each request is logged as "METHOD PATH STATUS MICROSECONDS":
    gunicorn's own measure of the server time (%(D)s).
    """
    port = port or free_port()
    argv = [
        str(VENV_BIN / "gunicorn"),
        "reviewapp.wsgi:application",
        "--workers",
        str(workers),
        "--bind",
        f"127.0.0.1:{port}",
        "--backlog",
        "2048",
        "--worker-tmp-dir",
        "/dev/shm",
        "--log-level",
        "warning",
    ]
    if access_log is not None:
        argv += [
            "--access-logfile",
            str(access_log),
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
        ]
    # Each worker imports the URLconf when it starts and leaves a file under its
    # master's pid (gunicorn_hooks.py); the server is returned once every worker has.
    argv += ["--config", "python:benchmarks.support.gunicorn_hooks"]
    service = Service("gunicorn", argv, env, Path(env["REVIEWAPP_VAR_DIR"]) / "logs")
    ready = Path(env["REVIEWAPP_VAR_DIR"]) / "gunicorn-ready" / str(service.pid)
    shutil.rmtree(ready, ignore_errors=True)  # an earlier master's, with this pid; workers
    wait_port(port)  # take seconds to set Django up before they write theirs
    deadline = time.monotonic() + 60
    while len(list(ready.glob("*"))) < workers:
        if not service.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn: {workers} workers not ready:\n{service.log()}")
        time.sleep(0.05)
    # A first request still builds what only a request builds (templates, sessions).
    import httpx

    for _ in range(workers * 2):
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/login/", timeout=30)
    return service, port


def start_worker(
    env: dict[str, str],
    *,
    concurrency: int = 2,
    beat: bool = False,
    name: str = "worker",
    extra_args: Iterable[str] = (),
) -> Service:
    """A real Celery worker (prefork, `concurrency` processes) that also knows the no-op tasks."""
    var_dir = Path(env["REVIEWAPP_VAR_DIR"])
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "reviewapp",
        "worker",
        "-I",
        "benchmarks.support.noop",
        "--loglevel",
        "INFO",
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"bench-{name}-{os.getpid()}-{time.monotonic_ns()}@%h",
        "--without-gossip",
        "--without-mingle",
        *extra_args,
    ]
    if beat:
        schedule = var_dir / f"beat-schedule-{time.monotonic_ns()}"
        argv += ["--beat", "--schedule", str(schedule)]
    service = Service(name, argv, env, var_dir / "logs")
    service.wait_log("ready.")
    return service
