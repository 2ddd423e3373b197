"""Running the docs' shell blocks as a reader would: in a checkout, beside `make run`.

A reader runs a page's blocks one after another in one terminal, in the
checkout, next to `make run` in another. Here each page gets a checkout of its
own (the repository's files linked into a scratch directory, so what a block
writes stays there, and `.venv` the virtualenv running the tests) and a shell
session whose variables and working directory carry from one block to the next.
The one instance is started by running the README's `make run` block itself.

The only rewrite: the address `127.0.0.1:8000` (and `localhost:8000`) becomes
the instance's, so runs never collide with each other or with a real `make run`.
"""

import os
import re
import shlex
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.docs.blocks import ROOT
from tests.support.ports import free_port
from tests.support.processes import interrupt

ADDRESS = re.compile(r"\b(?:127\.0\.0\.1|localhost):8000\b")
BLOCK_SECONDS = 180
READY_SECONDS = 240
# Nothing of the test run's own configuration reaches a reader's shell.
PASSED_ON = ("HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME")


def checkout(directory: Path) -> Path:
    """A scratch copy of the checkout: every file linked, `.venv` the tests' own."""
    directory.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", "var"):
            (directory / entry.name).symlink_to(entry)
    venv = directory / ".venv"
    venv.mkdir()
    for entry in Path(sys.prefix).iterdir():
        if entry.name != ".installed":
            (venv / entry.name).symlink_to(entry)
    # Installed, as `make` leaves it: `make run` and `make token` go straight on.
    (venv / ".installed").touch()
    return directory


def reader_environment(var_dir: Path) -> dict[str, str]:
    """A new terminal's: PATH without an activated virtualenv, the instance's var directory."""
    environment = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    venv_bins = {str(Path(sys.prefix) / "bin"), str(ROOT / ".venv" / "bin")}
    environment["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p not in venv_bins
    )
    environment["REVIEWAPP_VAR_DIR"] = str(var_dir)
    return environment


@dataclass
class Instance:
    port: int
    environment: dict[str, str]
    output: list[str]

    def address(self, text: str) -> str:
        return ADDRESS.sub(f"127.0.0.1:{self.port}", text)


def start_instance(directory: Path, command: str):
    """Run `command` (the README's `make run`) until it says it serves; yield; stop it."""
    port = free_port()
    environment = reader_environment(directory / "var") | {"PORT": str(port)}
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=checkout(directory / "checkout"),
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output: list[str] = []
    ready = threading.Event()

    def drain() -> None:  # read it all, so a full pipe never stalls the server
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            if line.startswith("Press Ctrl-C"):
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        ready.wait(READY_SECONDS)
        if process.poll() is not None or not any(o.startswith("Press Ctrl-C") for o in output):
            raise AssertionError(f"`{command}` did not start:\n" + "\n".join(output[-40:]))
        yield Instance(port, reader_environment(directory / "var"), output)
    finally:
        interrupt(process, grace=60)


# Runs one piece of a page in the session: variables and the working directory of
# the pieces before it restored first, this piece's saved after it, whatever its end.
_WRAPPER = """\
__before=" $(compgen -v | tr '\\n' ' ') "
if [ -f {state} ]; then source {state}; fi
__save() {{
  __status=$?
  for __name in $(compgen -v); do
    case "$__before" in *" $__name "*) continue ;; esac
    case "$__name" in __*) continue ;; esac
    declare -p "$__name" 2>/dev/null
  done > {state}
  printf 'cd %q\\n' "$PWD" >> {state}
  exit "$__status"
}}
trap __save EXIT
{strict}
source {script}
"""


class Session:
    """One reader's terminal for one page."""

    def __init__(self, directory: Path, environment: dict[str, str]):
        self.directory = checkout(directory / "checkout")
        self.environment = environment
        self._state = directory / "session.sh"
        self._script = directory / "piece.sh"

    def run(self, text: str, *, strict: bool) -> tuple[int, str]:
        """Run `text` in the session; `strict` stops at the first failing command."""
        self._script.write_text(text)
        wrapper = _WRAPPER.format(
            state=shlex.quote(str(self._state)),
            script=shlex.quote(str(self._script)),
            strict="set -eo pipefail" if strict else "",
        )
        result = subprocess.run(
            ["bash", "-c", wrapper],
            cwd=self.directory,
            env=self.environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BLOCK_SECONDS,
        )
        return result.returncode, result.stdout

    def variable(self, name: str) -> str:
        return self.run(f'printf %s "${name}"', strict=True)[1]
