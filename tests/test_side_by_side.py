"""Two instances run side by side when each has its own PORT and REVIEWAPP_VAR_DIR."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PATHS = """
import json
from django.conf import settings
print(json.dumps({
    "database": str(settings.DATABASES["default"]["NAME"]),
    "broker": sorted(str(v) for k, v in settings.CELERY_BROKER_TRANSPORT_OPTIONS.items()
                     if k.endswith("_folder") or k.startswith("data_folder")),
    "cache": settings.CACHES["default"]["LOCATION"],
    "signing_key": str(settings.REVIEWAPP_SIGNING_KEY_FILE),
}))
"""


def _state_paths(var_dir: Path) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")
        and not key.startswith("REVIEWAPP_")
    }
    env.update(DJANGO_SETTINGS_MODULE="reviewapp.settings", DEBUG="true",
               REVIEWAPP_VAR_DIR=str(var_dir))
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + _PATHS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(result.stdout)


def test_everything_an_instance_writes_lies_under_its_var_dir(tmp_path):
    paths = _state_paths(tmp_path / "second")

    flat = [paths["database"], *paths["broker"], paths["cache"], paths["signing_key"]]
    assert all(Path(p).is_relative_to(tmp_path / "second") for p in flat), flat


def test_two_var_dirs_share_no_state(tmp_path):
    first, second = _state_paths(tmp_path / "a"), _state_paths(tmp_path / "b")

    assert first["database"] != second["database"]
    assert set(first["broker"]).isdisjoint(second["broker"])
    assert first["cache"] != second["cache"]


def test_rundev_serves_on_the_port_the_environment_names(monkeypatch):
    from reviewapp.review.management.commands.rundev import Command

    monkeypatch.setenv("PORT", "8123")
    options = Command().create_parser("manage.py", "rundev").parse_args([])

    assert options.port == 8123


def test_the_operators_guide_says_how_to_run_two_instances_side_by_side():
    guide = (ROOT / "docs" / "operators.md").read_text("utf-8")

    assert "| `PORT` |" in guide and "| `HOST` |" in guide
    assert "| `REVIEWAPP_VAR_DIR` |" in guide
    assert "PORT=8001 REVIEWAPP_VAR_DIR=var/second make run" in guide
