"""Production settings: `manage.py check --deploy` is clean, and the headers it promises are sent.

Both run in a fresh process with only the documented production environment
(benchmarks/README.md, "Production settings"), never the test settings: the
point is what an operator gets by following the documentation.
"""

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from reviewapp.core.signing import Signer

ROOT = Path(__file__).resolve().parents[2]


def production_env(var_dir: Path) -> dict[str, str]:
    """The documented production environment, and nothing inherited from the test run."""
    seed = secrets.token_bytes(32)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        # The server and, as installed beside it, the client package (the offline verifier).
        "PYTHONPATH": os.pathsep.join((str(ROOT), str(ROOT / "clients" / "python" / "src"))),
        "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "reviewapp.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://reviewapp.example.com",
        # Port 1 refuses at once: a check that tried to connect would fail loudly.
        "DATABASE_URL": "postgres://reviewapp:secret@127.0.0.1:1/reviewapp",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
        "REVIEWAPP_SIGNING_KEY": base64.b64encode(seed).decode(),
        # Its public half, anchored: else check --deploy warns that nothing it signs verifies.
        "REVIEWAPP_TRUSTED_KEYS": Signer.from_seed(seed).public_key_b64,
        "REVIEWAPP_VAR_DIR": str(var_dir),
        # The production defaults, stated so that a developer's .env cannot weaken them.
        "SECURE_SSL_REDIRECT": "true",
        "SESSION_COOKIE_SECURE": "true",
        "CSRF_COOKIE_SECURE": "true",
        "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_PRELOAD": "true",
    }


def run(argv, env, cwd=ROOT):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_check_deploy_passes_with_no_warnings(tmp_path):
    result = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(tmp_path),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output, output
    assert "WARNING" not in output.upper().replace("--FAIL-LEVEL WARNING", "")


def test_check_deploy_has_no_errors(tmp_path):
    """Errors (not warnings) would stop a production start; none may be present."""
    result = run([sys.executable, "manage.py", "check", "--deploy"], production_env(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ERRORS:" not in result.stdout + result.stderr


PROBE = r"""
import json, django
django.setup()
from django.test import Client
c = Client(HTTP_HOST="reviewapp.example.com")
plain = c.get("/api/proposals")
secure = c.get("/api/proposals", secure=True)
login = c.get("/login/", secure=True)
other_host = Client(HTTP_HOST="evil.example.net").get("/api/proposals", secure=True)
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location", "")],
    "secure": [secure.status_code, dict(secure.headers)],
    "login_status": login.status_code,
    "login_cookies": {k: dict(v) for k, v in login.cookies.items()},
    "other_host": other_host.status_code,
}))
"""


def test_production_responses_carry_the_security_headers(tmp_path):
    env = production_env(tmp_path)
    collect = run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env)
    assert collect.returncode == 0, collect.stderr
    result = run([sys.executable, "-c", PROBE], env)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])

    status, location = seen["plain"]
    assert status == 301 and location.startswith("https://reviewapp.example.com/")
    status, headers = seen["secure"]
    assert status == 401
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert seen["other_host"] == 400  # ALLOWED_HOSTS refuses a forged Host header
    assert seen["login_status"] == 200
    csrf = seen["login_cookies"].get("csrftoken")
    assert csrf and csrf["secure"] is True and csrf["samesite"] == "Lax"
