"""benchmarks/ledger.py --appenders: concurrent appends on PostgreSQL, figures per level."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: --appenders measures concurrent appends on a PostgreSQL server",
)
def test_appenders_prints_rate_hold_floor_and_batched_hold_and_leaves_a_verified_ledger():
    # The server of the run's DATABASE_URL, in a database of the benchmark's own beside it.
    done = subprocess.run(
        [sys.executable, "benchmarks/ledger.py", "--appenders", "1,2", "--appends", "12"],
        cwd=ROOT,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "on postgresql" in out
    # appenders, decisions/s, commit→index p50 and p95, lock hold per batch p50 and p95, ...
    levels = re.findall(
        r"^\s+(\d+)\s+([\d,]+)\s+(\d+\.\d+) ms\s+(\d+\.\d+)\s+(\d+\.\d+) ms\s", out, re.M
    )
    assert [level for level, *_ in levels] == ["1", "2"], out
    for _, rate, _, p95, hold in levels:
        assert int(rate.replace(",", "")) > 0 and float(p95) > 0 and float(hold) > 0
    assert re.search(r"^CPU bound with 2 appenders: \d+\.\d+ ms a decision, so", out, re.M), out
    # The appenders' CPU and their PostgreSQL backends', each counted.
    for appenders, postgres in re.findall(r"\((\d+\.\d+) \+ (\d+\.\d+)\)$", out, re.M):
        assert float(appenders) > 0 and float(postgres) > 0, out
    assert re.search(r"^target: >= 1,000 decisions/s with 2 appenders", out, re.M), out
    # 12 decisions per level, each with its evidence entry.
    assert "integrator (checkpoint_create): 24 entries" in out
    assert "verify_ledger: 24 entries, every decision once, tree intact" in out
