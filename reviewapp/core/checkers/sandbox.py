"""Running a command checker's executable confined, with bounded output.

The worker starts ``jail.py`` in a fresh interpreter, which confines the
command (namespaces, user, limits) and reports its outcome on a pipe of its
own; this side feeds stdin, keeps at most ``OUTPUT_LIMIT`` bytes of each
stream and enforces the wall-clock deadline. What holds on which platform is
in docs/operators.md "Security".
"""

from __future__ import annotations

import json
import logging
import math
import os
import pwd
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# The child sees nothing of the parent's environment: no API keys, no proxy
# settings, no credentials — nothing a model provider could be reached with.
COMMAND_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
OUTPUT_LIMIT = 64 * 1024
JAIL = str(Path(__file__).with_name("jail.py"))
# What the jail enters on Linux when the kernel lets it (docs/operators.md, the sandbox
# table's first column).
FULL_CONFINEMENT = frozenset({"pid", "net", "mount"})
_POLL_SECONDS = 0.05
# After SIGTERM the jail kills its namespace at once; this only bounds a jail
# that is itself stuck.
_KILL_GRACE_SECONDS = 2.0
# Soft limits the command runs under (a checker needs little; a fork bomb,
# a memory hog or a disk filler gets an error instead of the machine).
LIMITS = {
    "RLIMIT_AS": 1 << 30,
    "RLIMIT_FSIZE": 16 << 20,
    "RLIMIT_NOFILE": 256,
    "RLIMIT_CORE": 0,
}
# Per user, so only meaningful (and only set) once the command has a user of its own.
NPROC_LIMIT = 128


log = logging.getLogger(__name__)
_warned: set[frozenset[str]] = set()


@dataclass(frozen=True)
class Sandbox:
    """How a command is confined beyond the fixed parts (environment, limits, namespaces).

    ``user``: who the command runs as when the worker is root (otherwise it
    stays the worker's own user). ``hidden``: paths the command must not see
    at all (the app's data directory, its secrets), covered by something
    empty where the platform allows a mount namespace. ``readable``: the
    checker's own files (scripts, data it judges with) that stay in reach,
    read-only, even where they lie in a scratch directory the sandbox empties
    (/tmp, /run...); the executable always does. Hidden wins over readable.
    """

    user: str = "nobody"
    hidden: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()

    def identity(self) -> tuple[int, int] | None:
        """(uid, gid) to drop to, or None when there is nothing to drop (not root)."""
        if os.geteuid() != 0:
            return None
        try:
            entry = pwd.getpwnam(self.user)
        except KeyError:
            raise OSError(f"the checker sandbox user {self.user!r} does not exist") from None
        if entry.pw_uid == 0:
            raise OSError(f"the checker sandbox user {self.user!r} is root")
        return entry.pw_uid, entry.pw_gid


@dataclass(frozen=True)
class Completed:
    returncode: int | None  # None: killed at the deadline; negative: killed by that signal
    stdout: str
    stderr: str
    exec_error: str = ""  # why the executable could not be started


def resolve_executable(name: str) -> str | None:
    """The file ``name`` runs, resolved (symlinks and ``..`` followed), or None.

    A bare name is looked up on ``COMMAND_ENV``'s PATH, as the child would; a
    relative path means nothing in a fresh working directory.
    """
    if "/" not in name:
        found = shutil.which(name, path=COMMAND_ENV["PATH"])
        return None if found is None else os.path.realpath(found)
    return os.path.realpath(name) if os.path.isabs(name) else None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_confined(
    executable: str, argv: list[str], stdin: bytes, timeout: float, sandbox: Sandbox
) -> Completed:
    """Run ``executable`` (as ``argv``) confined, in a fresh working directory.

    Raises OSError when the sandbox itself cannot start; the command not
    starting is ``Completed.exec_error``.
    """
    identity = sandbox.identity()
    with tempfile.TemporaryDirectory(prefix="reviewapp-check-", ignore_cleanup_errors=True) as tmp:
        workdir = os.path.realpath(tmp)
        limits = {**LIMITS, "RLIMIT_CPU": math.ceil(timeout) + 1}
        if identity is not None:
            os.chown(workdir, *identity)  # the only place the sandbox user may write
            limits["RLIMIT_NPROC"] = NPROC_LIMIT
        spec = {
            "executable": executable,
            "argv": argv,
            "env": COMMAND_ENV,
            "workdir": workdir,
            "uid": None if identity is None else identity[0],
            "gid": None if identity is None else identity[1],
            "limits": limits,
            "readable": [os.path.realpath(p) for p in (executable, *sandbox.readable)],
            "hidden": [os.path.realpath(p) for p in sandbox.hidden],
        }
        status_read, status_write = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", JAIL, json.dumps(spec), str(status_write)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=COMMAND_ENV,
                pass_fds=(status_write,),
                start_new_session=True,
            )
        except OSError:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        with os.fdopen(status_read, "rb") as status:
            stdout, stderr, timed_out = _exchange(proc, stdin, timeout)
            outcome = json.loads(status.read() or b"{}")
    _warn_if_partial(frozenset(outcome.get("namespaces", FULL_CONFINEMENT)))
    if timed_out:
        return Completed(None, stdout, stderr)
    if "exec_error" in outcome:
        return Completed(None, stdout, stderr, exec_error=outcome["exec_error"])
    if "returncode" not in outcome:
        # The jail died without a word: nothing says how the command ended.
        return Completed(None, stdout, stderr, exec_error="the sandbox ended without an outcome")
    return Completed(outcome["returncode"], stdout, stderr)


def _warn_if_partial(entered: frozenset[str]) -> None:
    # Once per process and shortfall: an operator should know, a log should not flood.
    missing = FULL_CONFINEMENT - entered
    if missing and sys.platform.startswith("linux") and missing not in _warned:
        _warned.add(missing)
        log.warning(
            "command checkers run without %s namespaces here (the kernel refused them); "
            "see docs/operators.md 'Security' for what is not enforced",
            ", ".join(sorted(missing)),
        )


def _exchange(proc: subprocess.Popen, stdin: bytes, timeout: float) -> tuple[str, str, bool]:
    """Feed stdin and collect bounded output until the jail exits or the deadline passes."""
    captured = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        try:
            for stream in captured:
                os.set_blocking(stream.fileno(), False)
                selector.register(stream, selectors.EVENT_READ)
            if stdin:
                os.set_blocking(proc.stdin.fileno(), False)
                selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
            timed_out = _pump(proc, selector, captured, memoryview(stdin), deadline)
            if not timed_out:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            _reap(proc)

    def text(stream) -> str:
        data = captured[stream]
        suffix = "… [truncated]" if len(data) > OUTPUT_LIMIT else ""
        return data[:OUTPUT_LIMIT].decode("utf-8", "replace").strip() + suffix

    return text(proc.stdout), text(proc.stderr), timed_out


def _pump(proc, selector, captured: dict, pending: memoryview, deadline: float) -> bool:
    """Write stdin and read both outputs, each kept to OUTPUT_LIMIT (and one byte more, to
    tell it was passed), until every stream is done; True if the deadline came first."""
    while selector.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
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
            sink += chunk[: max(0, OUTPUT_LIMIT + 1 - len(sink))]
    return False


def _reap(proc: subprocess.Popen) -> None:
    """End the jail, and with it everything the command started however it detached."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(_KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    _kill_group(proc.pid)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
