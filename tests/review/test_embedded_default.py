"""The one-command run's parts (SQLite, the embedded broker, a prefork worker) decide LLM panels.

Everything runs in processes of its own against a var folder of the test's
own, as `make run` starts it, with no DATABASE_URL or CELERY_BROKER_URL: the
LLM answers are recorded by the pool processes' main threads and, while they
are idle, by the recorder beside each loop, on SQLite.
"""

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.openai_stub import Answer
from tests.review.helpers import judgement
from tests.support.db_template import migrated_sqlite

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parents[2]
CITE = "The migration is reversible"

_SUBMIT = """
import sys, time
import django
django.setup()
from reviewapp.review.models import Lens
from reviewapp.review.services.panels import panel_configure
from reviewapp.review.services.proposals import proposal_submit

base_url, count = sys.argv[1], int(sys.argv[2])
lenses = [
    Lens.objects.create(name=f"embedded-{i}", backend=Lens.Backend.LLM, base_url=base_url,
                        model="m", instructions="Judge.", timeout_seconds=30)
    for i in range(3)
]
panel_configure(name="embedded", need=2, lenses=lenses, checkers=[], grounding_policy="reject")
for n in range(count):
    proposal_submit(panel_name="embedded", content=f"{CITE} and takes a minute. Proposal {n}.")
    if n % 5 == 4:
        time.sleep(0.5)  # bursts, then idle gaps: main threads and recorders both record
"""


def _env(var_dir: Path) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE")
        and not key.startswith("REVIEWAPP_")
    }
    env.update(DJANGO_SETTINGS_MODULE="reviewapp.settings", DEBUG="true")
    env["REVIEWAPP_VAR_DIR"] = str(var_dir)
    return env


def _statuses(database: Path) -> list[str]:
    with sqlite3.connect(database, timeout=20) as db:
        return [row[0] for row in db.execute("SELECT status FROM review_proposal")]


def test_llm_proposals_are_decided_once_on_sqlite_and_the_embedded_broker(tmp_path, openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    env = _env(tmp_path)
    run = {"cwd": ROOT, "env": env, "check": True, "timeout": 120}
    database = tmp_path / "reviewapp.sqlite3"
    migrated_sqlite(database)  # so the run's own migrate finds nothing to apply
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], **run)
    log = open(tmp_path / "worker.log", "w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "reviewapp", "worker", "--concurrency", "2",
         "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        submit = f"CITE = {CITE!r}\n" + _SUBMIT
        subprocess.run([sys.executable, "-c", submit, openai_server.base_url, "20"], **run)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and set(_statuses(database)) != {"decided"}:
            time.sleep(0.5)
        assert sorted(_statuses(database)) == ["decided"] * 20
        with sqlite3.connect(database) as db:
            (decisions,) = db.execute("SELECT count(*) FROM review_decision").fetchone()
        assert decisions == 20  # one each
    finally:
        worker.terminate()
        worker.wait(30)
        log.close()
    assert "Traceback" not in (tmp_path / "worker.log").read_text()
