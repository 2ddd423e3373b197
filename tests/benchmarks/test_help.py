"""Every runnable script in benchmarks/ answers --help with its usage, and runs nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Scripts with a command line: the benchmarks (run by path, as the README says) and
# the helpers other benchmarks start (run as modules, like `python -m benchmarks._provider`).
SCRIPTS = sorted(
    path.name
    for path in (ROOT / "benchmarks").glob("*.py")
    if 'if __name__ == "__main__":' in path.read_text()
)


def test_the_benchmarks_are_found():
    assert {"grounding.py", "orm_cost.py", "pipeline.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_prints_the_usage_and_runs_nothing(script):
    if script.startswith("_"):
        command = [sys.executable, "-m", f"benchmarks.{script.removesuffix('.py')}", "--help"]
    else:
        command = [sys.executable, f"benchmarks/{script}", "--help"]
    # A benchmark that ignored --help would set up its data or servers first: far
    # longer than this, or printing its figures instead of the usage.
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: "), done.stdout[:500]
    assert "options:" in done.stdout
