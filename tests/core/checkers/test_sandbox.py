"""A hostile command checker, run the way the worker runs it (Linux, worker as root).

Each test is one thing a checker tries to reach beyond what it judges; each
must fail, and nothing secret may come back in what it prints (its reason).
"""

import json
import os
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from reviewapp.core.checkers import CheckInput, CheckVerdict, CommandChecker, Sandbox
from reviewapp.core.checkers.sandbox import COMMAND_ENV, JAIL
from reviewapp.core.signing import Signer

from .processes import gone_soon, unique_seconds

PYTHON = "/usr/bin/python3"


def hostile(script, timeout=10.0, sandbox=None):
    """A checker running ``script`` under the system interpreter; it prints, then exits 1."""
    return CommandChecker(
        "hostile", 1, [PYTHON, "-c", script], timeout, frozenset({"proc:exec"}), sandbox=sandbox
    )


def reaching(path):
    """A sandbox that keeps ``path`` in reach wherever the checkout (and so it) lies."""
    return Sandbox(readable=(str(path),))


def reason_of(script, key, **kwargs):
    evidence = hostile(script, **kwargs).check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.FAIL, evidence.reason
    return evidence.reason


TRY = """
import sys
def attempt(what, action):
    try:
        result = action()
    except Exception as exc:
        print(f"{what}: refused ({type(exc).__name__})", file=sys.stderr)
    else:
        print(f"{what}: GOT {result!r}", file=sys.stderr)
"""


def test_it_runs_as_the_unprivileged_sandbox_user(key):
    script = "import os, sys\nprint(os.getuid(), os.getgid(), os.getgroups(), file=sys.stderr)"
    reason = reason_of(script + "\nsys.exit(1)", key)
    assert reason == "65534 65534 []"


def test_it_cannot_read_the_workers_environment(key, monkeypatch):
    monkeypatch.setenv("REVIEWAPP_HOSTILE_SECRET", "hunter2-from-the-worker")
    script = (
        TRY
        + f"""
import glob
attempt("parent", lambda: open(f"/proc/{{__import__('os').getppid()}}/environ").read())
attempt("worker", lambda: open("/proc/{os.getpid()}/environ").read())
for path in glob.glob("/proc/[0-9]*/environ"):
    attempt(path, lambda: open(path).read())
sys.exit(1)
"""
    )
    reason = reason_of(script, key)
    assert "hunter2" not in reason
    assert "REVIEWAPP_HOSTILE_SECRET" not in reason
    assert "worker: refused" in reason


def test_it_sees_only_its_own_processes(key):
    reason = reason_of(
        "import os, sys; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), "
        "file=sys.stderr); sys.exit(1)",
        key,
    )
    assert str(os.getpid()) not in reason.strip("[]").split(", ")
    assert len(reason.strip("[]").split(", ")) <= 3  # init, the command, nothing else


def test_it_cannot_read_the_signing_key_file(key, readable_dir):
    key_file = Signer.from_seed(bytes([9]) * 32).to_file(readable_dir / "signing.key")
    seed = key_file.read_text().strip()
    script = TRY + f'attempt("key", lambda: open("{key_file}").read())\nsys.exit(1)'
    reason = reason_of(script, key, sandbox=reaching(readable_dir))
    assert reason == "key: refused (PermissionError)"
    assert seed not in reason


def test_a_world_readable_key_file_in_tmp_is_out_of_reach(key):
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        os.chmod(scratch, 0o755)
        key_file = Signer.from_seed(bytes([9]) * 32).to_file(Path(scratch) / "signing.key")
        key_file.chmod(0o644)  # only the emptied /tmp, not file permissions, stands in the way
        seed = key_file.read_text().strip()
        script = TRY + f'attempt("key", lambda: open("{key_file}").read())\nsys.exit(1)'
        reason = reason_of(script, key)
    assert reason == "key: refused (FileNotFoundError)"
    assert seed not in reason


def test_an_executable_in_tmp_runs_and_its_neighbours_stay_out_of_reach(key):
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        os.chmod(scratch, 0o755)
        (Path(scratch) / "neighbour").write_text("a secret beside the tool")
        (Path(scratch) / "neighbour").chmod(0o644)
        tool = Path(scratch) / "tool"
        tool.write_text(
            '#!/bin/sh\ncat "$(dirname "$0")/neighbour" >&2 || echo unreadable >&2\nexit 1\n'
        )
        tool.chmod(0o755)
        checker = CommandChecker("t", 1, [str(tool)], 10, frozenset({f"proc:exec:{scratch}/**"}))
        evidence = checker.check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.FAIL, evidence.reason
    assert evidence.reason.endswith("unreadable")
    assert "secret" not in evidence.reason


def test_it_cannot_write_outside_its_directory(key, readable_dir):
    open_dir = readable_dir / "world-writable"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # only the sandbox, not file permissions, stands in the way
    targets = [open_dir / "planted", "/tmp/reviewapp-planted", "/dev/shm/reviewapp-planted"]
    script = (
        TRY
        + "".join(f'attempt("{t}", lambda: open("{t}", "w").write("x"))\n' for t in targets)
        + 'attempt("here", lambda: open("made-here", "w").write("x"))\nsys.exit(1)'
    )
    reason = reason_of(script, key, sandbox=reaching(readable_dir))
    for target in targets:
        assert f"{target}: refused" in reason
        assert not os.path.exists(target)
    assert "here: GOT 1" in reason


def test_it_cannot_open_a_socket_to_a_local_listener(key):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        script = TRY + (
            "import socket\n"
            f'attempt("connect", lambda: socket.create_connection(("127.0.0.1", {port}), 2))\n'
            "sys.exit(1)"
        )
        reason = reason_of(script, key)
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert reason.startswith("connect: refused")


def test_its_output_file_size_is_limited(key):
    script = TRY + (
        'attempt("write", lambda: open("big", "wb").write(b"x" * (64 << 20)))\n'
        "import os; print(os.path.getsize('big') <= 16 << 20, file=sys.stderr)\nsys.exit(1)"
    )
    reason = reason_of(
        f"import signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n{script}", key
    )
    assert reason.splitlines() == ["write: refused (OSError)", "True"]


def test_its_memory_is_limited(key):
    reason = reason_of(
        TRY + 'attempt("allocate", lambda: len(bytearray(2 << 30)))\nsys.exit(1)', key
    )
    assert reason == "allocate: refused (MemoryError)"


def test_it_cannot_reach_a_unix_socket_in_a_shared_scratch_directory(key):
    # A database's local socket lives in /run or /tmp; the network namespace does not cover it.
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        path = os.path.join(scratch, "db.sock")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(path)
            listener.listen()
            os.chmod(scratch, 0o755)
            os.chmod(path, 0o777)
            script = TRY + (
                "import socket\n"
                "s = socket.socket(socket.AF_UNIX)\n"
                f'attempt("connect", lambda: s.connect("{path}"))\n'
                "sys.exit(1)"
            )
            reason = reason_of(script, key)
            listener.settimeout(0.2)
            with pytest.raises(TimeoutError):
                listener.accept()
    assert reason == "connect: refused (FileNotFoundError)"


def test_hidden_paths_are_covered_with_nothing(key, readable_dir):
    data = readable_dir / "var"
    data.mkdir()
    (data / "reviewapp.sqlite3").write_text("every row")
    (data / "reviewapp.sqlite3").chmod(0o644)  # readable by anyone, as SQLite leaves it
    dotenv = readable_dir / ".env"
    dotenv.write_text("SECRET_KEY=from-the-dotenv")
    dotenv.chmod(0o644)
    script = TRY + (
        "import os\n"
        f'attempt("list", lambda: os.listdir("{data}"))\n'
        f'attempt("read", lambda: open("{dotenv}").read())\n'
        "sys.exit(1)"
    )
    checker = CommandChecker(
        "hostile",
        1,
        [PYTHON, "-c", script],
        10,
        frozenset({"proc:exec"}),
        sandbox=Sandbox(hidden=(str(data), str(dotenv)), readable=(str(readable_dir),)),
    )
    evidence = checker.check(CheckInput("x"), key)
    assert evidence.reason.splitlines() == ["list: GOT []", "read: GOT ''"]


def test_a_working_directory_beneath_a_hidden_path_stays_usable(key, readable_dir, monkeypatch):
    # TMPDIR may point into the app's data directory, which the sandbox hides.
    (readable_dir / "tmp").mkdir(mode=0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(readable_dir / "tmp"))
    secret = readable_dir / "reviewapp.sqlite3"
    secret.write_text("every row")
    secret.chmod(0o644)
    script = TRY + (
        f'attempt("read", lambda: open("{secret}").read())\n'
        'attempt("here", lambda: open("made-here", "w").write("x"))\nsys.exit(1)'
    )
    reason = reason_of(script, key, sandbox=Sandbox(hidden=(str(readable_dir),)))
    assert reason.splitlines() == ["read: refused (FileNotFoundError)", "here: GOT 1"]


def run_jail_unprivileged(script, *, stop_after=None):
    """The jail as an unprivileged worker runs it: as nobody, with no namespaces it may enter
    (the system interpreter here has no os.unshare), so only the subreapers stand guard."""
    spec = {
        "executable": "/bin/sh",
        "argv": ["sh", "-c", script],
        "env": COMMAND_ENV,
        "workdir": "/",
        "uid": None,
        "gid": None,
        "limits": {},
        "readable": [],
        "hidden": [],
    }
    status_read, status_write = os.pipe()
    jail = subprocess.Popen(
        [PYTHON, "-I", "-S", JAIL, json.dumps(spec), str(status_write)],
        pass_fds=(status_write,),
        user="nobody",
        group="nogroup",
        extra_groups=[],
        start_new_session=True,
    )
    os.close(status_write)
    try:
        jail.wait(stop_after)
    except subprocess.TimeoutExpired:
        jail.terminate()  # what the worker does at the deadline
        jail.wait(5)
    with os.fdopen(status_read, "rb") as status:
        return status.read()


def test_without_namespaces_nothing_a_finished_command_detached_survives_it():
    marker = unique_seconds()
    status = run_jail_unprivileged(
        f"setsid sleep {marker} & setsid sh -c 'sleep {marker} &'; sleep 0.3; exit 0"
    )
    assert json.loads(status) == {"returncode": 0, "namespaces": []}
    assert gone_soon(marker)


def test_without_namespaces_a_deadline_kills_everything_however_detached():
    marker = unique_seconds()
    run_jail_unprivileged(
        f"setsid sleep {marker} & setsid sh -c 'sleep {marker} &'; sleep {marker}",
        stop_after=0.5,
    )
    assert gone_soon(marker)
