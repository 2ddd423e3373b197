"""Which of reviewapp's apps may import which (docs/architecture.md, "What may import what").

The rules are import-linter contracts in pyproject.toml ([tool.importlinter]):
the apps' order, with api, web, insights and mcp never importing each other,
and core importing neither a framework nor anything of reviewapp but itself.
Imports inside functions count like those at the top of a module.
"""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def test_lint_imports_passes():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [lint_imports, "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"lint-imports failed:\n{result.stdout}{result.stderr}"


def test_the_web_layers_share_a_row_and_never_import_each_other():
    top = _contracts()["apps"]["layers"][0]
    assert [name.strip() for name in top.split("|")] == ["api", "web", "insights", "mcp"]


def test_every_package_and_module_of_reviewapp_must_have_a_place_in_the_order():
    # With `exhaustive`, lint-imports refuses a package or module added to reviewapp/
    # without a row, or a place among the wiring that may import anything.
    assert _contracts()["apps"]["exhaustive"] is True


def test_only_admin_modules_and_management_commands_are_exempt_from_the_order():
    # They may look anywhere (each exemption named); every other module keeps the order.
    importers = [line.split(" -> ")[0] for line in _contracts()["apps"]["ignore_imports"]]
    assert importers
    for importer in importers:
        parts = importer.split(".")
        assert "admin" in parts or parts[-3:-1] == ["management", "commands"], importer


def test_core_may_import_no_framework_and_nothing_of_reviewapp_but_itself():
    core = _contracts()["core"]
    assert core["source_modules"] == ["reviewapp.core"]
    assert {"django", "ninja", "celery", "kombu", "reviewapp.*"} <= set(core["forbidden_modules"])


def test_the_architecture_doc_draws_the_contract_s_order():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## What may import what", 1)[1].split("```")[1]
    # The first line of each box names its apps, one per cell.
    lines = section.splitlines()
    drawn = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for above, line in zip(lines, lines[1:], strict=False)
        if above.lstrip().startswith("┌")
    ]
    contract = [[name.strip() for name in row.split("|")] for row in _contracts()["apps"]["layers"]]
    assert drawn == contract
