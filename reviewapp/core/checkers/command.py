"""A checker that runs a configured executable on the proposal."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass

from .contract import Checker, CheckInput, Judgement, _positive_seconds
from .errors import CheckerConfigError
from .grants import _grant_covers

# The child sees nothing of the parent's environment: no API keys, no proxy
# settings, no credentials — nothing a model provider could be reached with.
COMMAND_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
OUTPUT_LIMIT = 64 * 1024
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class _Completed:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_bounded(argv: list[str], stdin: bytes, timeout: float, cwd: str) -> _Completed:
    """Run ``argv`` with ``stdin``, keeping at most OUTPUT_LIMIT bytes of each stream.

    The child leads its own process group. Once the leader exits, or the
    deadline passes, the whole group is killed, so nothing it started can
    hold the pipes open or outlive the check.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=COMMAND_ENV,
        shell=False,
        start_new_session=True,
    )
    captured = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    pending = memoryview(stdin)
    deadline = time.monotonic() + timeout
    timed_out = False
    with selectors.DefaultSelector() as selector:
        try:
            for stream in captured:
                os.set_blocking(stream.fileno(), False)
                selector.register(stream, selectors.EVENT_READ)
            if pending:
                os.set_blocking(proc.stdin.fileno(), False)
                selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()

            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(min(remaining, _POLL_SECONDS)):
                    if key.fileobj is proc.stdin:
                        try:
                            pending = pending[os.write(proc.stdin.fileno(), pending[:65536]) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]  # the child stopped reading; that is its call
                        if not pending:
                            selector.unregister(proc.stdin)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    sink = captured[key.fileobj]
                    # One byte past the limit is kept only to tell that it was passed.
                    sink += chunk[: max(0, OUTPUT_LIMIT + 1 - len(sink))]
                if proc.poll() is not None:
                    _kill_group(proc.pid)  # stragglers would keep the pipes open

            if not timed_out:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            _kill_group(proc.pid)
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                stream.close()

    def text(stream) -> str:
        data = captured[stream]
        suffix = "… [truncated]" if len(data) > OUTPUT_LIMIT else ""
        return data[:OUTPUT_LIMIT].decode("utf-8", "replace").strip() + suffix

    return _Completed(None if timed_out else proc.returncode, text(proc.stdout), text(proc.stderr))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time and other unnamed signals
        return f"signal {number}"


class CommandChecker(Checker):
    """Run a configured executable on the proposal.

    No shell; the proposal content arrives on stdin (UTF-8). The child gets a
    clean environment (``COMMAND_ENV`` only) and a fresh temporary working
    directory that is removed afterwards. Exit 0 passes; exit 1 fails with
    stderr as the reason (stdout if stderr is empty); a timeout, a signal,
    any other exit status or an executable that cannot be started is
    INCONCLUSIVE. Requires a ``proc:exec`` grant covering ``argv[0]``.
    """

    def __init__(
        self,
        name: str,
        version: int,
        argv: list[str],
        timeout_seconds: float,
        grants: Iterable[str],
    ) -> None:
        if (
            not isinstance(argv, list | tuple)
            or not argv
            or not all(isinstance(a, str) and a and "\0" not in a for a in argv)
        ):
            raise CheckerConfigError(f"checker {name!r}: argv must be a non-empty list of strings")
        if not _positive_seconds(timeout_seconds):
            raise CheckerConfigError(f"checker {name!r}: timeout must be a positive number")
        super().__init__(
            name,
            version,
            grants=grants,
            settings={"argv": list(argv), "timeout_seconds": timeout_seconds},
        )
        self.argv = list(argv)
        self.timeout_seconds = timeout_seconds
        if not self._may_exec():
            raise CheckerConfigError(
                f"checker {name!r}: running {argv[0]!r} needs a proc:exec grant covering it"
            )

    def _may_exec(self) -> bool:
        return any(_grant_covers(g, "proc:exec", self.argv[0]) for g in self.grants)

    def judge(self, inputs: CheckInput) -> Judgement:
        if not self._may_exec():
            return Judgement.inconclusive(f"not granted proc:exec for {self.argv[0]!r}")
        with tempfile.TemporaryDirectory(
            prefix="reviewapp-check-", ignore_cleanup_errors=True
        ) as workdir:
            try:
                done = _run_bounded(
                    self.argv, inputs.content.encode("utf-8"), self.timeout_seconds, workdir
                )
            except OSError as exc:
                return Judgement.inconclusive(f"could not run {self.argv[0]!r}: {exc.strerror}")
        if done.returncode is None:
            return Judgement.inconclusive(
                f"{self.argv[0]!r} timed out after {self.timeout_seconds}s"
            )
        if done.returncode == 0:
            return Judgement.passed()
        if done.returncode == 1:
            return Judgement.failed(
                done.stderr or done.stdout or f"{self.argv[0]!r} exited 1 without output"
            )
        if done.returncode < 0:
            what = f"was killed by {_signal_name(-done.returncode)}"
        else:
            what = f"exited {done.returncode}"
        return Judgement.inconclusive(
            f"{self.argv[0]!r} {what}" + (f": {done.stderr}" if done.stderr else "")
        )
