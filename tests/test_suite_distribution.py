"""The suite's xdist groups hold: tests that share an expensive fixture (a `make run`, a
browser, a venv) run in one process, or each process starts its own."""

import subprocess
import sys

GROUPED_MODULE = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("shared")

@pytest.mark.parametrize("n", range(6))
def test_records_its_process(n):
    with open("workers.txt", "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_tests_of_one_xdist_group_run_in_one_process(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_a.py").write_text(GROUPED_MODULE)
    (tmp_path / "test_b.py").write_text(GROUPED_MODULE)

    # The options `make test` runs the suite with; pytest-django has nothing to set up here.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "no:django",
         "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    workers = (tmp_path / "workers.txt").read_text().split()
    assert len(workers) == 12
    assert len(set(workers)) == 1, f"one group ran in several processes: {sorted(set(workers))}"
