"""`pip install reviewapp-client` alone gives an auditor `reviewapp-verify`: no Django, no Celery.

The client package is built from its source into an empty venv (no system
site packages), its dependencies coming from wheels of what this interpreter
has installed, so the test needs no index. Django, Celery and the server's
code are not there to import, and the verifier still checks a server's export.
"""

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from reviewapp.ledger import services
from tests.conftest import shared_by_module
from tests.ledger.helpers import (
    Witness,
    decide,
    export,
    public_key_b64,
    read_jsonl,
    write_jsonl,
)
from tests.support.wheelhouse import requirement_name, wheelhouse

pytestmark = pytest.mark.django_db

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def _client_requirements() -> list[str]:
    """What installing the client takes: its dependencies and its build backend."""
    pyproject = tomllib.loads((CLIENT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [*pyproject["project"]["dependencies"], *pyproject["build-system"]["requires"]]
    return [requirement_name(requirement) for requirement in wanted]


@pytest.fixture(scope="module")
@shared_by_module
def alone(tmp_path_factory) -> Path:
    """A venv holding the client package and its dependencies, and nothing else (built once
    for the module: it is only read)."""
    tmp_path = tmp_path_factory.mktemp("alone")
    wheels = wheelhouse(_client_requirements(), tmp_path / "wheels")
    # A copy: building in the source tree would leave build/ and egg-info in the repository.
    skipped = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    source = shutil.copytree(CLIENT, tmp_path / "client", ignore=skipped)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
    pip = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check", "install"]
    installed = subprocess.run(
        [*pip, "--quiet", "--no-index", "--find-links", wheels, source],
        env=_bare_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert installed.returncode == 0, installed.stderr
    return venv


def _bare_env(tmp_path) -> dict[str, str]:
    """Nothing inherited from the test run: no PYTHONPATH, no Django settings."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}


def _run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args],
        env=_bare_env(cwd),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_installed_verifier_checks_an_export_without_django_or_celery(alone, tmp_path):
    decide(2)
    exported = export(tmp_path)
    probe = _run(
        alone / "bin" / "python",
        "-c",
        "import importlib.util, json; print(json.dumps({name: bool(importlib.util.find_spec(name))"
        " for name in ('django', 'celery', 'reviewapp', 'reviewapp_client')}))",
        cwd=tmp_path,
    )
    assert json.loads(probe.stdout) == {
        "django": False,
        "celery": False,
        "reviewapp": False,
        "reviewapp_client": True,
    }, probe.stderr

    verify = alone / "bin" / "reviewapp-verify"
    verified = _run(verify, exported, "--public-key", public_key_b64(), cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("OK: 4 ledger entries (2 decisions, 2 evidence)")

    objects = read_jsonl(exported)
    decision = next(i for i, obj in enumerate(objects) if obj.get("kind") == "decision")
    objects[decision]["payload"] = objects[decision]["payload"].replace("approved", "rejected")
    tampered = _run(
        verify,
        write_jsonl(tmp_path / "tampered.jsonl", objects),
        "--public-key",
        public_key_b64(),
        cwd=tmp_path,
    )
    assert tampered.returncode == 1
    assert tampered.stderr.startswith(f"FAIL line {decision + 1} (entry ")
    assert "signature does not verify" in tampered.stderr


def test_the_installed_verifier_holds_the_checkpoint_to_a_witness_policy(alone, tmp_path):
    w1, w2 = Witness("w1.example/w", bytes([1]) * 32), Witness("w2.example/w", bytes([2]) * 32)
    decide(2)
    w1.cosign(services.checkpoint_create())
    exported = export(tmp_path)
    verify = alone / "bin" / "reviewapp-verify"
    witnesses = ("--witness-key", w1.vkey, "--witness-key", w2.vkey)

    too_few = _run(verify, exported, "--public-key", public_key_b64(), *witnesses, cwd=tmp_path)
    assert too_few.returncode == 1, too_few.stdout
    assert too_few.stderr.rstrip().endswith(
        "cosigned by 1 of the 2 (of 2) witnesses required; missing: w2.example/w"
    )

    enough = _run(
        verify,
        exported,
        "--public-key",
        public_key_b64(),
        *witnesses,
        "--witness-quorum",
        "1",
        cwd=tmp_path,
    )
    assert enough.returncode == 0, enough.stderr
    assert "checkpoint for size 4 cosigned by w1.example/w (witness quorum 1 of 2)" in enough.stdout
