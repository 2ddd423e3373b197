"""A real Celery worker process, pointed at the test database and broker."""

import os
import signal
import subprocess
import sys
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
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log()}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.1)
        raise TimeoutError(f"worker not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process and its pool children."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
