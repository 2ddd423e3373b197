"""`make run` (manage.py rundev): what a new user sees, and what they can do next."""

import base64
import contextlib
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import shared_by_module
from tests.support.db_template import migrated_sqlite
from tests.support.ports import free_port
from tests.support.processes import interrupt

ROOT = Path(__file__).resolve().parents[1]


def start_rundev(tmp_path, *, migrated: bool = True, **settings):
    """A real `rundev` on its own port and var directory, with nothing else configured;
    `migrated`: its SQLite database copied from the suite's migrated template."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE")
        and not key.startswith("REVIEWAPP_")
    }
    port = free_port()
    environment.update(DEBUG="true", REVIEWAPP_VAR_DIR=str(tmp_path / "var"), PORT=str(port))
    environment.update(settings)
    if migrated:
        migrated_sqlite(tmp_path / "var" / "reviewapp.sqlite3")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "rundev"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 120
    try:
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("Press Ctrl-C") or time.monotonic() > deadline:
                break
        yield port, lines, environment
    finally:
        interrupt(process, grace=30)


@pytest.fixture(scope="module")
@shared_by_module
def rundev(tmp_path_factory):
    """One `make run` for the tests that only look at it and use it (about 20 s to start)."""
    yield from start_rundev(tmp_path_factory.mktemp("rundev"))


def production_like(**extra) -> dict[str, str]:
    """DEBUG off, as .env.example sets it for a local run over plain HTTP."""
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        **extra,
    }


@pytest.mark.worker
def test_rundev_with_debug_off_serves_pages_and_their_static_files(tmp_path):
    import httpx

    seed = base64.b64encode(secrets.token_bytes(32)).decode()
    with contextlib.contextmanager(start_rundev)(
        tmp_path, **production_like(REVIEWAPP_SIGNING_KEY=seed)
    ) as (port, lines, _):
        assert lines[-1].startswith("Press Ctrl-C"), lines
        base = f"http://127.0.0.1:{port}"
        login = httpx.get(f"{base}/login/")
        assert login.status_code == 200
        assets = re.findall(r'/static/[^"]+', login.text)
        assert assets and all(httpx.get(base + asset).status_code == 200 for asset in assets)
        assert httpx.get(f"{base}/api/docs").status_code == 200
        assert httpx.get(f"{base}/no-such-page").status_code == 404


def test_rundev_with_debug_off_and_no_signing_key_stops_saying_what_to_set(tmp_path):
    refused = contextlib.contextmanager(start_rundev)(
        tmp_path, migrated=False, **production_like()
    )
    with refused as (_, lines, _):
        output = "\n".join(lines)
    assert "reviewapp cannot start" in output
    assert "Set REVIEWAPP_SIGNING_KEY" in output


@pytest.mark.worker
def test_rundev_prints_the_address_and_the_logins_last_without_broker_or_root_noise(rundev):
    port, lines, _ = rundev

    assert lines[-1].startswith("Press Ctrl-C")
    assert lines[-2] == f"reviewapp is running at http://127.0.0.1:{port}/"
    summary = "\n".join(lines[-8:])
    assert "reviewer login: reviewer / " in summary
    assert "admin    login: admin / " in summary
    everything = "\n".join(lines)
    assert "No hostname was supplied" not in everything
    assert "superuser privileges" not in everything
    assert "-------------- worker@" not in everything  # Celery's banner
