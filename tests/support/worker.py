"""A real Celery worker process, pointed at the test database and broker."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def test_database_url() -> str:
    """The URL of the database the test run created, for a child process."""
    s = connection.settings_dict
    if s["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    host = s["HOST"] or "127.0.0.1"
    port = s["PORT"] or 5432
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


class WorkerProcess:
    def __init__(
        self,
        *,
        concurrency: int = 2,
        beat: bool = False,
        extra_env=None,
        queues: str = "celery",
        pool: str | None = None,
    ):
        """A prefork worker by default, as deployed: its processes run every lens."""
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": test_database_url(),
            **(extra_env or {}),
        }
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "reviewapp",
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            str(concurrency),
            "--hostname",
            f"test-{os.getpid()}-{time.monotonic_ns()}@%h",
            "--without-gossip",
            "--without-mingle",
            "--queues",
            queues,
        ]
        if pool is not None:
            args += ["--pool", pool]
        if beat:
            schedule = Path(env.get("REVIEWAPP_VAR_DIR", ROOT / "var" / "test")) / "beat-schedule"
            args += ["--beat", "--schedule", str(schedule)]
        self.log_path = ROOT / "var" / "test" / f"worker-{time.monotonic_ns()}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._ready = threading.Event()
        self.process = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        # The worker's output, copied to its log as it comes; "ready." sets the event.
        self._copier = threading.Thread(target=self._copy_output, daemon=True)
        self._copier.start()

    def _copy_output(self) -> None:
        with open(self.log_path, "wb") as log:
            for line in self.process.stdout:
                log.write(line)
                log.flush()
                if b"ready." in line:
                    self._ready.set()
        self._ready.set()  # the output ended: the process is gone; wait_ready says so

    def wait_ready(self, timeout: float = 30.0) -> None:
        if not self._ready.wait(timeout):
            raise TimeoutError(f"worker not ready after {timeout}s:\n{self.log()}")
        if self.process.poll() is not None:
            raise RuntimeError(f"worker exited early:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process and its pool children (drills)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._close()

    def stop(self, timeout: float = 20.0) -> None:
        """Warm shutdown, as a deployment's SIGTERM does: to the main process alone.

        Signalled with its pool children at once (the whole group), the children
        die first and the main process waits out its own timeout for them.
        """
        self.signal_stop()
        self.wait_stopped(timeout)

    def signal_stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)

    def wait_stopped(self, timeout: float = 20.0) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()  # whatever outlived the warm shutdown, pool children included

    def _close(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # orphans of a main process gone
        except ProcessLookupError:
            pass
        self._copier.join(10)
        self.process.stdout.close()
