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
    levels = re.findall(r"^\s+(\d+)\s+([\d,]+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)$", out, re.M)
    assert [level for level, *_ in levels] == ["1", "2"], out
    for _, rate, mean, _, _ in levels:
        assert int(rate.replace(",", "")) > 0 and float(mean) > 0
    assert re.search(r"^PostgreSQL's floor here .*: \d+\.\d+ ms = [\d,]+/s$", out, re.M), out
    for batch in (10, 50):
        line = rf"^{batch} decisions in one transaction .*: hold \d+\.\d+ ms per decision"
        assert re.search(line, out, re.M), out
    # 12 per level, then one batch of 10 and one of 50 (--appends is below either batch).
    assert "integrator (checkpoint_create): 84 entries" in out
    assert "verify_ledger: 84 entries, chain and tree intact" in out
