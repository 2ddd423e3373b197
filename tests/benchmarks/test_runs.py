"""Every benchmark runs whole at a tiny size, so a broken one fails the suite (not only
--help): it sets its data up, measures, prints its figures and exits 0.

The figures are not checked (they mean nothing at this size, beside other tests); the
run is. Scripts that need PostgreSQL run on the suite's server, in a database of their
own beside the test database, copied from the suite's migrated template when there is
one; each gets a private redis-server (the benchmarks flush their broker's database).
Those are skipped, saying why, when the suite runs on SQLite. Their static files are
collected once for all of them (tests/support/collected_static.py).
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.support.private_servers import PrivateRedis
from benchmarks.support.processes import free_port
from tests.support.collected_static import collected_static

ROOT = Path(__file__).resolve().parents[2]
ON_POSTGRES = connection.vendor == "postgresql"


@dataclass(frozen=True)
class Run:
    script: str
    args: tuple[str, ...] = ()
    stack: bool = False  # PostgreSQL and Redis
    sqlite: bool = False  # the embedded defaults: its SQLite database copied, migrated
    marks: tuple = ()
    expect: str = ""  # a line the run prints (regex), besides exiting 0
    # Exits 1 when its timing misses the target: a verdict on this machine's speed
    # beside the rest of the suite, not on the run.
    timed_exit: bool = False
    timeout: int = 240
    env: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.script.removesuffix(".py")


STACK = (pytest.mark.worker, pytest.mark.live_server)
RUNS = [
    Run("grounding.py", expect=r"cites"),
    Run("regex_dialect.py", ("--runs", "1"), timed_exit=True),
    Run("ledger.py", ("--count", "60", "--real", "6", "--workers", "1"), expect=r"verif"),
    Run("embedded_broker.py", ("--producers", "1", "--tasks", "5"), sqlite=True,
        marks=(pytest.mark.worker,)),
    Run("highlight.py", ("--runs", "1"), marks=(pytest.mark.browser,), timed_exit=True),
    Run("orm_cost.py", ("--n", "20"), stack=True),
    Run("pipeline.py", ("--n", "10", "--noop-round-trips", "10", "--warm-up", "2"), stack=True,
        marks=STACK, expect=r"CPU per proposal"),
    Run("llm_pipeline.py", ("--n", "6", "--recorded-n", "6", "--warm-up", "1", "--paced-n", "3",
                            "--latency", "0.1"), stack=True, marks=STACK, expect=r"^RESULT "),
    Run("api.py", ("--duration", "1", "--connections", "1"), stack=True, marks=STACK),
    Run("inbox.py", ("--proposals", "200", "--open", "20", "--duration", "1", "--warmup", "0"),
        stack=True, marks=STACK, expect=r"p95"),
    Run("webhooks.py", ("--proposals", "6", "--deliveries", "10"), stack=True, marks=STACK),
    Run("deadlines.py", ("--n", "10", "--spread", "2", "--lead", "5"), stack=True, marks=STACK,
        expect=r"^RESULT "),
    # 5-second minutes, a sweep a second, a 6 s lease: digests go in seconds, not a minute.
    Run("notifications.py", ("--n", "4", "--people", "2", "--spread", "2", "--smtp-delay", "0.2",
                             "--minute", "5", "--sweep", "1", "--lease", "6"),
        stack=True, marks=STACK, expect=r"^RESULT "),
    Run("replay.py", ("--n", "4", "--latency", "0.1"), stack=True, marks=STACK,
        expect=r"^RESULT "),
    Run("mcp.py", ("--calls", "6", "--client-processes", "1", "--settle", "1"), stack=True,
        marks=STACK),
]  # fmt: skip
# drills.py starts PostgreSQL clusters of its own as root (initdb, pg_ctl): not in the suite.
NOT_RUN = {"drills.py"}


def test_every_benchmark_runs_at_a_tiny_size_here_or_is_named_as_not_run():
    scripts = {p.name for p in (ROOT / "benchmarks").glob("[!_]*.py")}
    # agreement.py's pieces run in test_agreement.py, inbox.py's load in test_inbox.py too.
    assert scripts - {"agreement.py"} == {run.script for run in RUNS} | NOT_RUN


def _stack_env(redis_url: str) -> dict[str, str]:
    """The suite's PostgreSQL server, a bench database of this test process's own."""
    from tests.support import db_template

    db = connection.settings_dict
    server = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:{db['PORT']}"
    name = f"{db['NAME']}_bench"
    env = {
        "BENCH_PG_URL": server,
        "BENCH_DB": name,
        "BENCH_MCP_DB": name,
        "BENCH_WEBHOOKS_DB": name,
        "BENCH_BROKER_URL": redis_url,
        "BENCH_MCP_BROKER_URL": redis_url,
        "BENCH_WEBHOOKS_BROKER_URL": redis_url,
    }
    template = db_template._pg_template_name(db_template.schema_key(), db["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template])
        if cursor.fetchone():
            env["BENCH_TEMPLATE_DB"] = template
    return env


@pytest.mark.parametrize("run", [pytest.param(run, marks=run.marks, id=str(run)) for run in RUNS])
@pytest.mark.django_db
def test_the_benchmark_runs_and_prints_its_figures(run):
    if run.stack and not ON_POSTGRES:
        pytest.skip("needs PostgreSQL and Redis: the benchmark measures the production stack")
    env = {**os.environ, **run.env}
    if run.sqlite:
        from tests.support import db_template

        env["BENCH_SQLITE_TEMPLATE"] = str(db_template.sqlite_template())
    redis = None
    if run.stack:
        redis = PrivateRedis(port=free_port()).start()
        env.update(_stack_env(redis.url), BENCH_STATIC_FROM=str(collected_static()))
    try:
        done = subprocess.run(
            [sys.executable, f"benchmarks/{run.script}", *run.args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=run.timeout,
        )
    finally:
        if redis is not None:
            redis.stop()
            _drop(env)
    output = done.stdout + done.stderr
    assert done.returncode in ((0, 1) if run.timed_exit else (0,)), output[-6000:]
    assert "Traceback" not in output, output[-6000:]
    if run.expect:
        assert re.search(run.expect, done.stdout, re.M), done.stdout[-6000:]


def _drop(env: dict[str, str]) -> None:
    import psycopg

    with psycopg.connect(f"{env['BENCH_PG_URL']}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{env["BENCH_DB"]}" WITH (FORCE)')
