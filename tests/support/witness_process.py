"""A real `manage.py run_witness` process on loopback, for the witness protocol's tests."""

import io
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def init_witness_key(path: Path, name: str) -> str:
    """Create a witness key file the way an operator does; returns the printed vkey."""
    out = io.StringIO()
    call_command("run_witness", "--name", name, "--init-key", str(path), stdout=out)
    return out.getvalue().strip()


class WitnessProcess:
    def __init__(
        self, directory: Path, name: str, logs: list[str], *, key: Path | None = None, port=0
    ):
        directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.key_file = key or directory / "witness.key"
        self.vkey = init_witness_key(self.key_file, name) if key is None else None
        self.state = directory / "state.json"
        args = [sys.executable, "manage.py", "run_witness", "--name", name, "--port", str(port),
                "--key-file", str(self.key_file), "--state", str(self.state)]  # fmt: skip
        for log in logs:
            args += ["--log", log]
        self.process = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = self._wait_for_url()

    def _wait_for_url(self, timeout: float = 60.0) -> str:
        """The submission prefix the witness prints once it listens."""
        lines: queue.Queue = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(line) for line in self.process.stdout], daemon=True
        ).start()
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line.startswith("witness "):
                self.vkey = self.vkey or line.split()[1]
            if " at http://" in line:
                return line.rsplit(" at ", 1)[1].strip().removesuffix("/add-checkpoint")
        self.process.kill()
        raise RuntimeError(f"run_witness did not start: {self.process.communicate()[1]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process.stderr.close()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def configured(self) -> tuple[str, str]:
        """This witness as a REVIEWAPP_LEDGER_WITNESSES entry."""
        return (self.vkey, self.url)
