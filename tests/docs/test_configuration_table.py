"""The operators' guide's configuration tables name every variable the code reads, and no other."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operators.md"
# Read, but not settings of ours: handed on to child processes as they are.
PASSED_THROUGH = {"PYTHONWARNINGS"}


def names_read_by_the_code() -> dict[str, str]:
    """Each variable the app or the benchmarks read, and the first file that reads it."""
    found: dict[str, str] = {}
    for path in sorted([*ROOT.glob("reviewapp/**/*.py"), *ROOT.glob("benchmarks/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = ast.unparse(node.func)
            if called == "read" and len(node.args) > 1:  # reviewapp/settings/environment.py
                name = node.args[1]
            elif called in ("os.environ.get", "os.getenv") and node.args:
                name = node.args[0]
            else:
                continue
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.setdefault(name.value, str(path.relative_to(ROOT)))
    return found


def names_in_the_guide() -> set[str]:
    configuration = GUIDE.read_text("utf-8").split("## Configuration", 1)[1]
    configuration = configuration.split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)`", configuration, re.MULTILINE))


def test_every_variable_the_code_reads_is_in_the_operators_guide():
    read = names_read_by_the_code()
    missing = {name: where for name, where in read.items() if name not in names_in_the_guide()}
    assert {k: v for k, v in missing.items() if k not in PASSED_THROUGH} == {}


def test_every_variable_in_the_operators_guide_is_read_by_the_code():
    assert names_in_the_guide() - set(names_read_by_the_code()) == set()


def test_the_settings_reads_are_found_at_all():
    # The scan itself must see the settings, or both tests above would pass on nothing.
    assert {"SECRET_KEY", "DATABASE_URL", "REVIEWAPP_SIGNING_KEY"} <= set(names_read_by_the_code())
