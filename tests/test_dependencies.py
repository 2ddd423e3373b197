"""What the server imports is declared, and what is declared is locked, as installed.

The locks (requirements/*.txt, pip-tools with hashes) are what `make`, CI and the
Dockerfile install; docs/operators.md, "Installing", says how to regenerate them.
"""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
CLIENT = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text("utf-8"))["project"]
# Installed from the checkout beside the server, never from the lock.
FROM_THE_CHECKOUT = {"reviewapp", "reviewapp-client"}


def pins(lock: str) -> dict[str, str]:
    text = (ROOT / "requirements" / lock).read_text("utf-8")
    return {
        canonicalize_name(name): version
        for name, version in re.findall(r"^([A-Za-z0-9._-]+)==(\S+) \\$", text, re.MULTILINE)
    }


def requirements(declared: list[str]) -> list[Requirement]:
    found = [Requirement(line) for line in declared]
    return [r for r in found if r.marker is None or r.marker.evaluate({"extra": ""})]


def unlocked(declared: list[Requirement], lock: dict[str, str]) -> list[str]:
    """Declared requirements the lock lacks, or pins at a version they do not allow."""
    return [
        str(r)
        for r in declared
        if canonicalize_name(r.name) not in FROM_THE_CHECKOUT
        and lock.get(canonicalize_name(r.name)) not in r.specifier
    ]


def modules_imported_by(package: Path) -> set[str]:
    imported: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    return imported - set(sys.stdlib_module_names) - {"reviewapp", "__future__"}


def test_every_package_the_server_imports_is_a_declared_dependency():
    declared = {canonicalize_name(r.name) for r in requirements(PROJECT["dependencies"])}
    distributions = packages_distributions()

    undeclared = {
        module: distributions.get(module)
        for module in modules_imported_by(ROOT / "reviewapp")
        if not {canonicalize_name(d) for d in distributions.get(module, [])} & declared
    }

    assert undeclared == {}


def test_the_server_declares_the_client_package_at_the_checkouts_version():
    (client,) = [r for r in requirements(PROJECT["dependencies"]) if r.name == CLIENT["name"]]
    assert CLIENT["version"] in client.specifier


def test_the_test_lock_pins_everything_the_server_its_tests_and_the_client_declare():
    declared = requirements(
        PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"] + CLIENT["dependencies"]
    )
    assert unlocked(declared, pins("test.txt")) == []


def test_the_runtime_lock_pins_what_the_server_and_the_client_declare_as_ci_tested_it():
    runtime, tested = pins("runtime.txt"), pins("test.txt")

    assert unlocked(requirements(PROJECT["dependencies"] + CLIENT["dependencies"]), runtime) == []
    assert {name: v for name, v in runtime.items() if tested.get(name) != v} == {}


def test_make_and_the_dockerfile_install_from_the_locks_with_their_hashes():
    makefile = (ROOT / "Makefile").read_text("utf-8")
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")

    assert "pip install --quiet --no-compile --require-hashes -r requirements/test.txt" in makefile
    assert "--no-deps" in makefile and "pip check" in makefile
    assert "pip install --no-cache-dir --require-hashes -r requirements/runtime.txt" in dockerfile
    assert "--no-deps" in dockerfile and "pip check" in dockerfile


def test_the_check_finds_an_undeclared_import(tmp_path):
    (tmp_path / "module.py").write_text("import httpx\nfrom .x import y\nimport os\n")

    assert modules_imported_by(tmp_path) == {"httpx"}
