"""docker-compose.yml: one scheduler however many workers, and one witness log for all."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
APP_SERVICES = ("web", "worker", "beat")


def services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def command(service: dict) -> str:
    value = service.get("command", "")
    return " ".join(value) if isinstance(value, list) else value


def test_the_scheduler_runs_in_a_service_of_its_own_never_in_the_scaled_workers():
    found = services()
    assert " beat " in f" {command(found['beat'])} "
    assert found["beat"]["deploy"]["replicas"] == 1
    assert "--beat" not in command(found["worker"]) and " -B" not in command(found["worker"])
    others = [name for name, s in found.items() if name != "beat" and "beat" in command(s)]
    assert others == []


def test_every_app_service_appends_to_one_witness_log_on_a_named_volume():
    found = services()
    volumes = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["volumes"]
    for name in APP_SERVICES:
        witness_file = Path(found[name]["environment"]["REVIEWAPP_LEDGER_WITNESS_FILE"])
        mounts = [entry.split(":")[:2] for entry in found[name]["volumes"]]  # "volume:/path"
        [volume] = [v for v, path in mounts if witness_file.is_relative_to(path)]
        assert volume in volumes, f"{name}: the witness log is not on a named volume"
