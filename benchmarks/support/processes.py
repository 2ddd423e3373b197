"""Shared set-up for the benchmarks and drills: environment, database, servers, a no-op task.

Every benchmark runs the real stack on this machine: PostgreSQL (its own
database, `reviewapp_bench`, dropped and re-created per run), Redis (its own
db, /14, flushed per run), gunicorn and Celery worker processes started here
with the production settings module (`DEBUG=false`). Nothing here touches the
`reviewapp` / `test_reviewapp` databases or Redis /15 that the test suite uses.

The Celery worker is started with ``-I benchmarks.support.processes`` so it registers
the no-op tasks below; the benchmark measures a bare task round trip against
them and compares the pipeline with it.

Drills that restart PostgreSQL or Redis never touch the machine's shared
servers: `PrivatePostgres` and `PrivateRedis` start throwaway instances
(initdb/pg_ctl as the `postgres` OS user on port 55432; redis-server on 56379
without persistence) that the drill may restart at will.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import nacl.signing

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VENV_BIN = Path(sys.executable).parent
# Overridable so two people benchmarking on one machine do not share a database.
BENCH_DB = os.environ.get("BENCH_DB", "reviewapp_bench")
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
BENCH_BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
VAR_ROOT = ROOT / "var" / "bench"

# A fixed seed: every bench process (this one, gunicorn, the worker) signs with it.
BENCH_SIGNING_SEED = base64.b64encode(b"reviewapp-benchmark-signing-key!").decode()
# The bench key's public half, anchored as production would anchor its own key.
BENCH_TRUSTED_KEY = base64.b64encode(
    bytes(nacl.signing.SigningKey(base64.b64decode(BENCH_SIGNING_SEED)).verify_key)
).decode()


# ── environment ──────────────────────────────────────────────────────────────


def bench_env(
    name: str,
    *,
    database_url: str | None = None,
    broker_url: str = BENCH_BROKER,
    **extra: str,
) -> dict[str, str]:
    """The production settings module, pointed at the bench database and broker.

    `name` picks the var directory (var/bench/<name>): cache, beat schedule, logs.
    """
    var_dir = VAR_ROOT / name
    (var_dir / "logs").mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
        "DEBUG": "false",
        "SECRET_KEY": "benchmark-only-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": database_url or f"{PG_URL}/{BENCH_DB}",
        "CELERY_BROKER_URL": broker_url,
        "REVIEWAPP_VAR_DIR": str(var_dir),
        "REVIEWAPP_SIGNING_KEY": BENCH_SIGNING_SEED,
        "REVIEWAPP_TRUSTED_KEYS": BENCH_TRUSTED_KEY,
        # Loopback HTTP: no TLS to redirect to.
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "LOG_LEVEL": "WARNING",
        "REVIEWAPP_API_RATE_LIMIT_PER_MINUTE": str(10**9),
    }
    env.pop("CACHE_URL", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def django_setup(env: dict[str, str]) -> None:
    """Configure this process like the servers it starts, then set Django up."""
    os.environ.update(env)
    import django

    django.setup()


def reset_database(name: str = BENCH_DB, server_url: str = PG_URL) -> None:
    """Drop and re-create `name` on the server (never the shared test databases)."""
    import psycopg

    assert name not in ("reviewapp", "test_reviewapp", "postgres"), name
    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def flush_redis(url: str = BENCH_BROKER) -> None:
    import redis

    assert not url.rstrip("/").endswith("/15"), "Redis /15 belongs to the test suite"
    redis.Redis.from_url(url).flushdb()


def collectstatic() -> None:
    """DEBUG=false serves hashed static names from a manifest; build it once per var dir."""
    from django.conf import settings
    from django.core.management import call_command

    if not (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():
        call_command("collectstatic", interactive=False, verbosity=0)


def fresh_stack(name: str, **env_extra: str) -> dict[str, str]:
    """A clean bench database (migrated) and broker db; Django set up in this process."""
    env = bench_env(name, **env_extra)
    reset_database()
    flush_redis(env["CELERY_BROKER_URL"])
    django_setup(env)
    migrate()
    return env


# ── processes ────────────────────────────────────────────────────────────────


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout}s")


class Service:
    """A child process in its own session, logging to a file; stopped with its children."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = log_dir / f"{name}-{time.strftime('%H%M%S')}-{os.getpid()}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def wait_log(self, needle: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited early:\n{self.log()}")
            if needle in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise TimeoutError(f"{self.name}: no {needle!r} after {timeout}s:\n{self.log()}")

    def children(self) -> list[int]:
        """Direct children of the main process (Celery's pool processes)."""
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill(self) -> None:
        """SIGKILL the whole process group: nothing gets to clean up."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 30.0) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def start_gunicorn(
    env: dict[str, str],
    *,
    workers: int = 2,
    port: int | None = None,
    access_log: Path | None = None,
) -> tuple[Service, int]:
    """gunicorn with `workers` sync workers on loopback; returns (service, port).

    With `access_log`, each request is logged as "METHOD PATH STATUS MICROSECONDS":
    gunicorn's own measure of the server time (%(D)s).
    """
    port = port or free_port()
    argv = [
        str(VENV_BIN / "gunicorn"),
        "reviewapp.wsgi:application",
        "--workers",
        str(workers),
        "--bind",
        f"127.0.0.1:{port}",
        "--backlog",
        "2048",
        "--worker-tmp-dir",
        "/dev/shm",
        "--log-level",
        "warning",
    ]
    if access_log is not None:
        argv += [
            "--access-logfile",
            str(access_log),
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
        ]
    service = Service("gunicorn", argv, env, Path(env["REVIEWAPP_VAR_DIR"]) / "logs")
    wait_port(port)
    # Both workers import the app lazily; one request each warms them up.
    import httpx

    for _ in range(workers * 2):
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/login/", timeout=30)
    return service, port


def start_worker(
    env: dict[str, str],
    *,
    concurrency: int = 2,
    beat: bool = False,
    name: str = "worker",
    extra_args: Iterable[str] = (),
) -> Service:
    """A real Celery worker (prefork, `concurrency` processes) that also knows the no-op tasks."""
    var_dir = Path(env["REVIEWAPP_VAR_DIR"])
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "reviewapp",
        "worker",
        "-I",
        "benchmarks.support.processes",
        "--loglevel",
        "INFO",
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"bench-{name}-{os.getpid()}-{time.monotonic_ns()}@%h",
        "--without-gossip",
        "--without-mingle",
        *extra_args,
    ]
    if beat:
        schedule = var_dir / f"beat-schedule-{time.monotonic_ns()}"
        argv += ["--beat", "--schedule", str(schedule)]
    service = Service(name, argv, env, var_dir / "logs")
    service.wait_log("ready.")
    return service


# ── private servers for drills that restart them ─────────────────────────────

PG_BIN = Path("/usr/lib/postgresql/15/bin")


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (trust auth) under /tmp, owned by the postgres user."""

    def __init__(self, port: int = 55432, data_dir: str | None = None):
        self.port = port
        self.data_dir = Path(data_dir or f"/tmp/reviewapp-drill-pg-{port}")
        self.log_file = self.data_dir.with_suffix(".log")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}"

    def _as_postgres(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv],
            check=check,
            capture_output=True,
            text=True,
            cwd="/tmp",
        )

    def start(self) -> PrivatePostgres:
        self.stop(quiet=True)
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        self.data_dir.mkdir(parents=True)
        shutil.chown(self.data_dir, "postgres", "postgres")
        self._as_postgres(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write(
                f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                "unix_socket_directories = '/tmp'\nfsync = off\nmax_connections = 200\n"
            )
        self._pg_ctl("start")
        return self

    def _pg_ctl(self, action: str, *extra: str, check: bool = True):
        return self._as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-w",
            "-t",
            "60",
            action,
            *extra,
            check=check,
        )

    def restart(self, down_seconds: float = 0.0) -> None:
        """Fast shutdown (every session is cut), stay down a moment, start again."""
        self._pg_ctl("stop", "-m", "fast")
        time.sleep(down_seconds)
        self._pg_ctl("start")

    def stop(self, quiet: bool = False) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", "immediate", check=not quiet)

    def destroy(self) -> None:
        self.stop(quiet=True)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.log_file.unlink()


class PrivateRedis:
    """A throwaway redis-server without persistence: a restart loses every message."""

    def __init__(self, port: int = 56379):
        self.port = port
        self.pidfile = Path(f"/tmp/reviewapp-drill-redis-{port}.pid")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        subprocess.run(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.pidfile),
                "--logfile",
                f"/tmp/reviewapp-drill-redis-{self.port}.log",
            ],
            check=True,
        )
        wait_port(self.port)
        return self

    def stop(self) -> None:
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
            capture_output=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
            except OSError:
                return
            time.sleep(0.1)

    def restart(self, down_seconds: float = 0.0) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def destroy(self) -> None:
        self.stop()
        for path in (self.pidfile, Path(f"/tmp/reviewapp-drill-redis-{self.port}.log")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


# ── content for a 3-lens recorded panel ──────────────────────────────────────

PIPELINE_LENSES = ("bench-accuracy", "bench-tone", "bench-policy")
PIPELINE_MANDATE = "must not contain 'guaranteed'; must not contain 'lorem ipsum'"
# (route, verdicts of the three lenses); weights sum to 10.
PIPELINE_ROUTES = [
    ("approved", ("pass", "pass", "pass"), 5),
    ("approved", ("pass", "pass", "fail"), 2),
    ("panel_rejects", ("fail", "fail", "pass"), 1),
    ("mandate_rejects", ("pass", "pass", "pass"), 1),
    ("lens_failed", ("pass", "pass", "garbage"), 1),
]


def pipeline_panel(name: str = "bench-panel", grounding: str = "reject"):
    """Three recorded lenses (need 2) and one constraints checker, configured as the admin would."""
    from reviewapp.review.models import CheckerConfig, Lens
    from reviewapp.review.services.panels import panel_configure

    lenses = [
        Lens.objects.get_or_create(
            name=lens_name,
            defaults={"backend": Lens.Backend.RECORDED, "instructions": f"Judge as {lens_name}."},
        )[0]
        for lens_name in PIPELINE_LENSES
    ]
    checker = CheckerConfig.objects.get_or_create(
        name="bench-mandate",
        defaults={
            "kind": CheckerConfig.Kind.CONSTRAINTS,
            "settings": {"mandate": PIPELINE_MANDATE},
        },
    )[0]
    return panel_configure(
        name=name, need=2, lenses=lenses, checkers=[checker], grounding_policy=grounding
    )


def pipeline_contents(n: int, *, tag: str = "") -> list[dict]:
    """`n` distinct support replies, each with its route and every lens's recorded answer.

    Cites hit the citation ladder's rungs (exact, quoted, blockquote, label, case
    drift, emphasis), so grounding does real work; the content differs per
    proposal by its ticket line, so each has its own recorded responses.
    """
    import json

    from reviewapp.review.demo.data import SUPPORT_DOCS, _cite_variants

    weighted = [route for route in PIPELINE_ROUTES for _ in range(route[2])]
    out = []
    for i in range(n):
        title, body, thought, cite_a, cite_b = SUPPORT_DOCS[i % len(SUPPORT_DOCS)]
        route, verdicts, _ = weighted[i % len(weighted)]
        content = f"{body}\n\nTicket #{tag}{i:07d}"
        if route == "mandate_rejects":
            content += "\nDelivery next time is guaranteed."
        variants = _cite_variants(cite_a)
        answers = {}
        for lens_i, (lens_name, verdict) in enumerate(zip(PIPELINE_LENSES, verdicts, strict=True)):
            if verdict == "garbage":
                answers[lens_name] = ["I think it's fine, mostly.", "Honestly it reads well."]
                continue
            answer = json.dumps(
                {
                    "verdict": verdict,
                    "rationale": f"Judged {verdict} on the quoted passages.",
                    "claims": [
                        {"cite": variants[(i + lens_i) % len(variants)], "assessment": "verified"},
                        {"cite": cite_b, "assessment": "verified"},
                    ],
                },
                ensure_ascii=False,
            )
            answers[lens_name] = [answer]
        out.append(
            {
                "title": f"{title} ({tag}{i})",
                "content": content,
                "thought_process": thought,
                "route": route,
                "answers": answers,
            }
        )
    return out


def record_answers(items: list[dict]) -> None:
    """Store every item's recorded lens answers in one bulk insert."""
    import hashlib

    from reviewapp.review.models import Lens, RecordedResponse

    lenses = {lens.name: lens for lens in Lens.objects.filter(name__in=PIPELINE_LENSES)}
    rows = [
        RecordedResponse(
            lens=lenses[lens_name],
            content_sha256=hashlib.sha256(item["content"].encode()).hexdigest(),
            responses=answers,
        )
        for item in items
        for lens_name, answers in item["answers"].items()
    ]
    RecordedResponse.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)


def api_token(name: str, scopes: str = "submit,read,review,judge") -> str:
    """A bearer token from `manage.py create_api_token`, as an operator would make one."""
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", name, "--scopes", scopes, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def reviewer_session(
    username: str = "bench-reviewer", *, staff: bool = False
) -> tuple[object, str]:
    """A reviewer and a logged-in session cookie value that gunicorn will accept."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    group, _ = Group.objects.get_or_create(name="reviewers")
    user, _ = get_user_model().objects.get_or_create(
        username=username, defaults={"is_staff": staff}
    )
    user.groups.add(group)
    client = Client()
    client.force_login(user)
    return user, client.cookies[settings.SESSION_COOKIE_NAME].value


# ── figures ──────────────────────────────────────────────────────────────────


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def final_counts() -> dict[str, int]:
    from django.db.models import Count

    from reviewapp.review.models import Proposal

    counts = dict(Proposal.objects.values_list("status").annotate(n=Count("id")))
    return {status: counts.get(status, 0) for status in Proposal.Status.values}


def wait_all_final(expected: int, *, timeout: float, poll: float = 0.25, progress=None) -> float:
    """Poll until `expected` proposals are decided or escalated; returns when (monotonic)."""
    from reviewapp.review.models import Proposal

    deadline = time.monotonic() + timeout
    while True:
        done = Proposal.objects.filter(
            status__in=[Proposal.Status.DECIDED, Proposal.Status.ESCALATED]
        ).count()
        if done >= expected:
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {done} of {expected} proposals final after {timeout}s")
        if progress:
            progress(done)
        time.sleep(poll)


def outcome_audit() -> dict[str, int]:
    """Exactly-once check: per proposal, decisions + open escalations must be exactly 1.

    A proposal escalated and then decided by a reviewer has a resolved escalation
    and one decision: still 1. Returns counts of each kind of proposal.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT
              count(*) AS proposals,
              count(*) FILTER (WHERE p.status IN ('decided', 'escalated')) AS final,
              count(*) FILTER (WHERE p.status IN ('queued', 'evaluating')) AS not_final,
              count(*) FILTER (WHERE coalesce(d.n, 0) + coalesce(e.n, 0) = 1) AS exactly_once,
              count(*) FILTER (WHERE coalesce(d.n, 0) + coalesce(e.n, 0) = 0) AS no_outcome,
              count(*) FILTER (WHERE coalesce(d.n, 0) + coalesce(e.n, 0) > 1) AS duplicated,
              coalesce(sum(d.n), 0) AS decisions,
              coalesce(sum(e.n), 0) AS open_escalations,
              coalesce(sum(a.n), 0) AS escalations_all,
              count(*) FILTER (WHERE p.status = 'decided' AND coalesce(d.n, 0) <> 1)
                AS decided_wo_decision,
              count(*) FILTER (WHERE p.status = 'escalated' AND coalesce(e.n, 0) <> 1)
                AS escalated_wo_escalation
            FROM review_proposal p
            LEFT JOIN (SELECT proposal_id, count(*) n FROM review_decision GROUP BY 1) d
              ON d.proposal_id = p.id
            LEFT JOIN (SELECT proposal_id, count(*) n FROM review_escalation
                       WHERE status <> 'resolved' GROUP BY 1) e ON e.proposal_id = p.id
            LEFT JOIN (SELECT proposal_id, count(*) n FROM review_escalation GROUP BY 1) a
              ON a.proposal_id = p.id
            """
        )
        names = [c.name for c in cursor.description]
        row = cursor.fetchone()
        audit = dict(zip(names, (int(v) for v in row), strict=True))
        cursor.execute(
            "SELECT count(*) FROM (SELECT proposal_id, lens_id FROM review_judgement "
            "GROUP BY 1, 2 HAVING count(*) > 1) t"
        )
        audit["duplicate_judgements"] = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM (SELECT proposal_id, checker_id FROM review_evidence "
            "GROUP BY 1, 2 HAVING count(*) > 1) t"
        )
        audit["duplicate_evidence"] = cursor.fetchone()[0]
    return audit


def verify_chain() -> tuple[int, str | None]:
    from reviewapp.review.services.decisions import decisions_verify_chain

    return decisions_verify_chain()


def task_runtimes(log_path: Path, start_offset: int = 0) -> dict[str, list[float]]:
    """Seconds per task run, by task name, from a worker log (Celery's "succeeded in" lines)."""
    import re

    pattern = re.compile(
        r"Task ([\w.]+)\[[0-9a-f-]+\] (?:succeeded|raised|retry)[^\n]*? in ([0-9.e-]+)s"
    )
    out: dict[str, list[float]] = {}
    with open(log_path, "rb") as f:
        f.seek(start_offset)
        text = f.read().decode(errors="replace")
    for name, seconds in pattern.findall(text):
        out.setdefault(name, []).append(float(seconds))
    return out


def print_task_runtimes(runtimes: dict[str, list[float]], wall: float, concurrency: int) -> None:
    busy = 0.0
    for name, values in sorted(runtimes.items()):
        if name.startswith("benchmarks."):
            continue
        busy += sum(values)
        line(
            name.rsplit(".", 1)[-1],
            f"{len(values):>6} runs, mean {1000 * sum(values) / len(values):6.1f} ms, "
            f"p50 {1000 * percentile(values, 50):6.1f} ms, "
            f"p95 {1000 * percentile(values, 95):6.1f} ms, "
            f"total {sum(values):6.1f} s",
        )
    line("pool busy (task time ÷ wall × processes)", f"{100 * busy / (wall * concurrency):.0f}%")


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return out


def cpu_seconds(pids: Iterable[int]) -> dict[int, float]:
    """User + system CPU seconds each live process has used so far."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / _CLK_TCK
    return out


class CpuMeter:
    """CPU seconds used between start() and stop() by process trees and PostgreSQL backends.

    The machine may be shared, so wall-clock figures move with other people's
    load; CPU seconds per unit of work do not, and bound what 2 idle cores could
    do. PostgreSQL backends come and go (CONN_MAX_AGE), so they are sampled
    every half second from a thread; a backend that exits loses at most that.
    Sessions of this process are excluded.
    """

    def __init__(self, database: str = BENCH_DB, server_url: str = PG_URL, **roots: int):
        import threading

        self.roots = roots
        self.database = database
        self.server_url = server_url
        self.before: dict[str, dict[int, float]] = {}
        self.pg_first: dict[int, float] = {}
        self.pg_last: dict[int, float] = {}
        self.used: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch_postgres, daemon=True)

    def _watch_postgres(self) -> None:
        import psycopg

        mine = set(self._mine)
        with psycopg.connect(f"{self.server_url}/postgres", autocommit=True) as conn:
            mine.add(conn.info.backend_pid)
            while True:
                pids = [
                    row[0]
                    for row in conn.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s", [self.database]
                    )
                    if row[0] not in mine
                ]
                for pid, used in cpu_seconds(pids).items():
                    self.pg_first.setdefault(pid, used)
                    self.pg_last[pid] = used
                if self._stop.wait(0.5):
                    return

    def start(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self._mine = {cursor.fetchone()[0]}
        self.before = {name: cpu_seconds(process_tree(pid)) for name, pid in self.roots.items()}
        self._thread.start()
        time.sleep(0.6)
        # Backends alive now count from here; later ones from birth.
        self._born_before = set(self.pg_first)

    def stop(self) -> dict[str, float]:
        for name, pid in self.roots.items():
            after = cpu_seconds(process_tree(pid))
            self.used[name] = sum(v - self.before[name].get(p, 0.0) for p, v in after.items())
        self._stop.set()
        self._thread.join(5)
        self.used["postgres"] = sum(
            last - (self.pg_first[pid] if pid in self._born_before else 0.0)
            for pid, last in self.pg_last.items()
        )
        return self.used


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min, {os.cpu_count()} CPUs)"


def line(label: str, value: str) -> None:
    print(f"  {label:<44} {value}", flush=True)


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


# ── no-op tasks (registered in the worker via `-I benchmarks.support.processes`) ──────


def _register_tasks():
    from reviewapp.celery import app

    @app.task(name="benchmarks.noop", ignore_result=True)
    def noop() -> None:
        """Nothing at all: what the broker and the worker cost by themselves."""

    @app.task(name="benchmarks.noop_ack", ignore_result=True)
    def noop_ack(key: str, token: str) -> None:
        """Push `token` onto a Redis list, so the sender can see the task ran."""
        _redis().rpush(key, token)

    @app.task(name="benchmarks.noop_count", ignore_result=True)
    def noop_count(key: str) -> None:
        _redis().incr(key)

    return noop, noop_ack, noop_count


_redis_client = None


def _redis():
    global _redis_client
    if _redis_client is None:
        import redis
        from django.conf import settings

        _redis_client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    return _redis_client


noop, noop_ack, noop_count = _register_tasks()


def noop_round_trips(count: int) -> list[float]:
    """Sequential no-op round trips (send → the worker ran it → the sender knows), in ms."""
    key = f"bench-noop-ack-{secrets.token_hex(4)}"
    r = _redis()
    timings = []
    for i in range(count):
        started = time.perf_counter()
        noop_ack.delay(key, str(i))
        got = r.blpop([key], timeout=30)
        if got is None:
            raise TimeoutError("no-op task did not run within 30 s")
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def noop_throughput(count: int, timeout: float = 300.0) -> tuple[float, float]:
    """Enqueue `count` no-op tasks at once: (tasks per second until the worker ran them
    all, this process's CPU seconds per message sent)."""
    key = f"bench-noop-count-{secrets.token_hex(4)}"
    r = _redis()
    started = time.perf_counter()
    cpu_before = time.process_time()
    for _ in range(count):
        noop_count.delay(key)
    publish_cpu = (time.process_time() - cpu_before) / count
    deadline = time.monotonic() + timeout
    while int(r.get(key) or 0) < count:
        if time.monotonic() > deadline:
            raise TimeoutError("no-op tasks did not finish")
        time.sleep(0.01)
    return count / (time.perf_counter() - started), publish_cpu


def env_from_args(pairs: Iterable[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = value
    return out
