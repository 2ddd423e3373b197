"""With DEBUG off, the web server and the worker refuse to start on what would fail later."""

import base64
import secrets
import subprocess
import sys

import pytest

from tests.security.test_deploy import ROOT, production_env, run


def import_wsgi(env) -> subprocess.CompletedProcess:
    return run([sys.executable, "-c", "import reviewapp.wsgi"], env)


def test_the_web_server_refuses_to_start_before_static_files_are_collected(tmp_path):
    result = import_wsgi(production_env(tmp_path))
    assert result.returncode != 0
    assert "static files are not collected" in result.stderr
    assert "manage.py collectstatic --noinput" in result.stderr


def test_the_web_server_starts_once_static_files_are_collected(tmp_path):
    env = production_env(tmp_path)
    collect = run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env)
    assert collect.returncode == 0, collect.stderr
    result = import_wsgi(env)
    assert result.returncode == 0, result.stderr


def test_the_web_server_refuses_to_start_without_a_signing_key(tmp_path):
    env = production_env(tmp_path)
    del env["REVIEWAPP_SIGNING_KEY"]
    result = import_wsgi(env)
    assert result.returncode != 0
    assert "No signing key" in result.stderr
    assert "Set REVIEWAPP_SIGNING_KEY" in result.stderr


def test_a_malformed_signing_key_stops_the_web_server_at_start(tmp_path):
    env = production_env(tmp_path)
    env["REVIEWAPP_SIGNING_KEY"] = base64.b64encode(secrets.token_bytes(16)).decode()
    result = import_wsgi(env)
    assert result.returncode != 0
    assert "REVIEWAPP_SIGNING_KEY must be a base64-encoded 32-byte ed25519 seed" in result.stderr


@pytest.mark.worker  # a real `celery worker`, started in the test (no fixture to mark it)
def test_a_worker_without_a_signing_key_exits_at_start_saying_what_to_set(tmp_path):
    env = production_env(tmp_path)
    del env["REVIEWAPP_SIGNING_KEY"]
    # The embedded broker in the test's own folder: the refusal comes before any connection.
    env["CELERY_BROKER_URL"] = "filesystem://"
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "reviewapp", "worker", "--pool", "solo"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert "Set REVIEWAPP_SIGNING_KEY" in result.stderr
