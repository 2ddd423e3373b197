"""Run one command checker confined; started by ``sandbox.run_confined``.

Run as a script (``python -I -S jail.py SPEC``) in a fresh process, so it
depends on the standard library only and nothing of the worker's state (its
threads, its open connections, its environment) reaches the command. SPEC is
JSON: ``executable`` (resolved), ``argv``, ``env``, ``workdir``, ``uid`` and
``gid`` (or null: stay who we are), ``limits`` (resource name → soft limit),
``readable`` (paths kept, read-only, where they lie in an emptied scratch
directory), ``hidden`` (paths to cover with something empty).

Three processes, because a PID namespace only takes effect for children:

- the *launcher* (this process) enters new namespaces where it may (Linux: PID,
  network and mount; plus user when not root), forks the *init*, and on
  SIGTERM (the worker's deadline) kills it;
- the *init* (PID 1 of the new PID namespace) makes the filesystem read-only
  except the working directory, empties /tmp, /run and the like (but for the
  working directory and the readable paths), covers the hidden paths, mounts
  a /proc that shows only the namespace, forks the *command*, waits for it,
  and writes its outcome to the status pipe. When the init exits the kernel
  kills every process left in the namespace, whatever session or process
  group it moved to: nothing outlives the check. The command is not PID 1
  itself because PID 1 ignores signals it does not handle, which would change
  what a checker's ``kill`` means;
- the *command* drops to the unprivileged user, takes its resource limits and
  execs.

Where namespaces are refused, both launcher and init are child subreapers
(Linux) so a descendant that detaches with ``setsid`` is reparented to them,
not to the system init, and is killed when the command ends; off Linux only
the process group is killed. Every confinement step that the platform refuses
is skipped, never fatal: docs/operators.md "Security" says what holds where.
"""

import ctypes
import json
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
# mountinfo option → the flag a read-only bind remount must keep (dropping a
# locked one is refused).
_KEPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run")

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
if _libc is not None:
    _libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]


class Deadline(Exception):
    """The worker's deadline passed (SIGTERM)."""


def _prctl(option: int, value: int) -> None:
    if _libc is not None:
        _libc.prctl(option, value, 0, 0, 0)


def _mount(source, target, fstype, flags, data=None) -> None:
    def b(value):
        return None if value is None else os.fsencode(value)

    if _libc.mount(b(source), b(target), b(fstype), flags, b(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), target)


def _enter_namespaces() -> set[str]:
    """Unshare what the platform allows; the names of what took effect."""
    if not hasattr(os, "unshare"):
        return set()
    base = os.CLONE_NEWPID | os.CLONE_NEWNET | os.CLONE_NEWNS
    if os.geteuid() == 0:
        attempts = [(base, {"pid", "net", "mount"})]
    else:
        # A user namespace gives an unprivileged worker the right to the others.
        attempts = [(base | os.CLONE_NEWUSER, {"user", "pid", "net", "mount"})]
    for flags, names in attempts:
        try:
            os.unshare(flags)
        except OSError:
            continue
        return names
    return set()


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    return field.encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def _read_only_except(workdir: str) -> None:
    """Remount every mount read-only, then give the working directory back."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we do propagates out
    _mount(workdir, workdir, None, MS_BIND)
    with open("/proc/self/mountinfo") as mountinfo:
        mounts = [line.split() for line in mountinfo]
    for fields in mounts:
        target = _unescape(fields[4])
        if target == workdir:
            continue
        kept = 0
        for option in fields[5].split(","):
            kept |= _KEPT_FLAGS.get(option, 0)
        try:
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        except OSError:
            pass  # e.g. a mount hidden under another; what is visible matters


def _keep(paths: list[str]) -> dict[str, int]:
    """An O_PATH handle on each existing path, taken before anything covers it."""
    kept = {}
    for path in paths:
        try:
            kept[path] = os.open(path, os.O_PATH)
        except OSError:
            pass  # gone already: nothing to keep
    return kept


def _bind_back(fd: int, target: str, *, writable: bool) -> None:
    """Put the file or directory held by ``fd`` back at ``target`` inside a fresh cover."""
    source = f"/proc/self/fd/{fd}"
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
    _mount(source, target, None, MS_BIND)
    if not writable:
        kept = 0
        flags = os.statvfs(target).f_flag
        for bit, flag in (
            (os.ST_NOSUID, MS_NOSUID),
            (os.ST_NODEV, MS_NODEV),
            (os.ST_NOEXEC, MS_NOEXEC),
        ):
            if flags & bit:
                kept |= flag
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def _cover(path: str, size: str, kept: dict[str, int], workdir: str) -> None:
    """Cover the directory ``path`` with an empty read-only tmpfs, keeping what lies beneath it.

    Each kept path under ``path`` is bound back where it was, shallowest first
    (so one inside another lands in it): the working directory writable, the
    rest read-only.
    """
    _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"size={size},mode=755")
    for target in sorted(kept, key=len):
        if target.startswith(path.rstrip("/") + "/"):
            _bind_back(kept[target], target, writable=target == workdir)
    _mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _empty_scratch_dirs(workdir: str, readable: list[str]) -> None:
    """Empty, read-only /tmp, /run and friends, but for the working directory and ``readable``.

    Shared scratch places hold other programs' files and sockets (a database's
    Unix socket is not behind the network namespace). The working directory
    usually lives in /tmp, and the checker's own files (its executable, its
    scripts) may too, when the app is checked out there: those are bound back
    where they were, the working directory writable, the rest read-only.
    """
    kept = _keep([workdir, *readable])
    seen = set()
    for scratch in SCRATCH_DIRS:
        real = os.path.realpath(scratch)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        try:
            _cover(real, "64k", kept, workdir)
        except OSError:
            pass
    for fd in kept.values():
        os.close(fd)


def _hide(paths: list[str], workdir: str) -> None:
    """Cover each path (the app's data, its secrets) with something empty.

    Hiding wins over ``readable``: nothing is bound back into a hidden
    directory but the working directory (fresh and empty, so nothing secret),
    which may lie beneath one when the temporary directory does.
    """
    kept = _keep([workdir])
    for path in paths:
        try:
            if path == workdir:
                continue
            if os.path.isdir(path):
                _cover(path, "4k", kept, workdir)
            elif os.path.exists(path):
                _mount(os.devnull, path, None, MS_BIND)
                _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        except OSError:
            pass
    for fd in kept.values():
        os.close(fd)


def _confine_filesystem(workdir: str, readable: list[str], hidden: list[str]) -> None:
    """In the new mount namespace: read-only world, and a /proc of our own."""
    try:
        _read_only_except(workdir)
        _empty_scratch_dirs(workdir, readable)
    except OSError:
        pass
    _hide(hidden, workdir)
    try:
        # Only this PID namespace's processes: the worker's /proc/PID/environ is not there.
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass


def _kill_children_until_none() -> None:
    """SIGKILL every child (orphans reparent here as a subreaper) and reap, until none."""
    while True:
        me = str(os.getpid())
        children = []
        try:
            entries = os.listdir("/proc")
        except OSError:
            entries = []
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = stat.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if ppid == me:
                children.append(int(entry))
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG if children else 0)[0]:
                pass
        except ChildProcessError:
            return
        if not children:
            return


def _exec_command(spec: dict, report_fd: int) -> None:
    """In the command process: drop privileges, take limits, exec. Never returns."""
    try:
        os.chdir(spec["workdir"])
        if spec["uid"] is not None:
            os.setgroups([])
            os.setgid(spec["gid"])
            os.setuid(spec["uid"])
        for name, soft in spec["limits"].items():
            limit = getattr(resource, name, None)
            if limit is not None:
                hard = resource.getrlimit(limit)[1]
                value = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
                resource.setrlimit(limit, (value, value))
        os.execve(spec["executable"], spec["argv"], spec["env"])
    except OSError as exc:
        os.write(report_fd, (exc.strerror or str(exc)).encode())
    os._exit(127)


def _init(spec: dict, namespaces: set[str], status_fd: int) -> None:
    """PID 1 of the namespace (or a subreaper): run the command, report, exit."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the launcher's death ends everything
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if "mount" in namespaces:
        _confine_filesystem(spec["workdir"], spec["readable"], spec["hidden"])
    read_end, write_end = os.pipe()  # not inherited: closed by a successful exec
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _exec_command(spec, write_end)
    os.close(write_end)
    _release_stdio()
    _, status = os.waitpid(pid, 0)
    exec_error = os.read(read_end, 4096).decode("utf-8", "replace")
    if "pid" not in namespaces:
        # Outside a PID namespace /proc is the host's; inside, exiting kills the rest.
        _kill_children_until_none()
    if exec_error:
        outcome = {"exec_error": exec_error}
    elif os.WIFSIGNALED(status):
        outcome = {"returncode": -os.WTERMSIG(status)}
    else:
        outcome = {"returncode": os.WEXITSTATUS(status)}
    outcome["namespaces"] = sorted(namespaces)
    os.write(status_fd, json.dumps(outcome).encode())
    os._exit(0)


def _release_stdio() -> None:
    # Only the command's copies may keep the worker's pipes open.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _map_own_ids() -> None:
    # In a new user namespace, stay the same user (uid and gid map to themselves).
    uid, gid = os.geteuid(), os.getegid()
    for path, text in (
        ("/proc/self/setgroups", "deny"),
        ("/proc/self/uid_map", f"{uid} {uid} 1"),
        ("/proc/self/gid_map", f"{gid} {gid} 1"),
    ):
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError:
            pass


def _on_sigterm(signum, frame):
    raise Deadline


def main() -> None:
    spec = json.loads(sys.argv[1])
    status_fd = int(sys.argv[2])
    os.set_inheritable(status_fd, False)  # the command must not be able to forge an outcome
    signal.signal(signal.SIGTERM, _on_sigterm)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    namespaces = _enter_namespaces()
    if "user" in namespaces:
        _map_own_ids()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            _init(spec, namespaces, status_fd)
        finally:
            os._exit(126)
    os.close(status_fd)
    _release_stdio()
    try:
        os.waitpid(pid, 0)
    except Deadline:
        try:
            os.kill(pid, signal.SIGKILL)  # as PID 1 of its namespace, it takes the rest along
        except ProcessLookupError:
            pass
    except ChildProcessError:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _kill_children_until_none()


if __name__ == "__main__":
    main()
