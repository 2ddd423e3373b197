"""A checker that runs a configured executable on the proposal."""

from __future__ import annotations

import signal
from collections.abc import Iterable

from .contract import Checker, CheckInput, Judgement, _positive_seconds
from .errors import CheckerConfigError
from .grants import grant_covers_path
from .sandbox import Sandbox, resolve_executable, run_confined


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time and other unnamed signals
        return f"signal {number}"


class CommandChecker(Checker):
    """Run a configured executable on the proposal.

    No shell; the proposal content arrives on stdin (UTF-8). The command runs
    confined by ``sandbox``: a clean environment (``COMMAND_ENV`` only), a
    fresh temporary working directory that is removed afterwards, an
    unprivileged user, resource limits, no network, and nothing it started
    outlives the check (see ``jail``). Exit 0 passes; exit 1 fails with
    stderr as the reason (stdout if stderr is empty); a timeout, a signal,
    any other exit status or an executable that cannot be started is
    INCONCLUSIVE. Requires a ``proc:exec`` grant covering the file
    ``argv[0]`` resolves to; that resolved file is what runs.
    """

    def __init__(
        self,
        name: str,
        version: int,
        argv: list[str],
        timeout_seconds: float,
        grants: Iterable[str],
        *,
        sandbox: Sandbox | None = None,
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
        self.sandbox = sandbox or Sandbox()
        if not self._may_exec(resolve_executable(self.argv[0])):
            raise CheckerConfigError(
                f"checker {name!r}: running {argv[0]!r} needs a proc:exec grant covering it"
            )

    def _may_exec(self, executable: str | None) -> bool:
        return any(grant_covers_path(g, "proc:exec", executable) for g in self.grants)

    def judge(self, inputs: CheckInput) -> Judgement:
        # Resolved again on every run: a symlink may have been repointed since.
        executable = resolve_executable(self.argv[0])
        if not self._may_exec(executable):
            return Judgement.inconclusive(f"not granted proc:exec for {self.argv[0]!r}")
        if executable is None:
            return Judgement.inconclusive(f"could not run {self.argv[0]!r}: not found on PATH")
        try:
            done = run_confined(
                executable,
                self.argv,
                inputs.content.encode("utf-8"),
                self.timeout_seconds,
                self.sandbox,
            )
        except OSError as exc:
            return Judgement.inconclusive(f"could not run {self.argv[0]!r}: {exc.strerror or exc}")
        if done.exec_error:
            return Judgement.inconclusive(f"could not run {self.argv[0]!r}: {done.exec_error}")
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
