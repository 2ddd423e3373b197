"""Which of reviewapp's packages may import which (docs/architecture.md, "What may import what").

Read from the source with `ast`, so an import inside a function counts like one
at the top of the module, and nothing has to be imported to be checked.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reviewapp"

# The layers that answer requests. `mcp` does not exist yet; the rules cover it when it does.
WEB_LAYERS = frozenset({"api", "web", "insights", "mcp"})
# Every other package under reviewapp/ is a lower layer, including apps added later.
LOWER_LAYERS = frozenset(
    path.parent.name for path in PACKAGE.glob("*/__init__.py") if path.parent.name not in WEB_LAYERS
)
FRAMEWORKS = frozenset({"django", "ninja", "celery", "kombu"})  # ninja is django-ninja

@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # what it names, made absolute: `from a import b` gives "a.b"
    line: int

    def __str__(self) -> str:
        return f"{self.module} imports {self.target} (line {self.line})"


def imports_in(source: str, module: str, *, is_package: bool = False) -> list[Import]:
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found += [Import(module, f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _all_imports() -> list[Import]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        found += imports_in(path.read_text(), module, is_package=is_package)
    return found


IMPORTS = _all_imports()


def layer(name: str) -> str | None:
    """The package of reviewapp that `name` is in; None outside reviewapp or at its root."""
    parts = name.split(".")
    if parts[0] != "reviewapp" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LOWER_LAYERS | WEB_LAYERS else None


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def listing(imports: list[Import]) -> str:
    return "\n".join(f"  {i}" for i in imports)


def test_core_imports_neither_django_nor_celery():
    offending = [
        i for i in IMPORTS if layer(i.module) == "core" and i.target.split(".")[0] in FRAMEWORKS
    ]
    assert not offending, (
        "reviewapp.core is plain Python, so the verifier and the tests use it without a "
        f"framework:\n{listing(offending)}"
    )


def test_core_imports_nothing_of_reviewapp_outside_core():
    offending = [
        i
        for i in IMPORTS
        if layer(i.module) == "core"
        and within(i.target, "reviewapp")
        and not within(i.target, "reviewapp.core")
    ]
    assert not offending, f"reviewapp.core imports only itself:\n{listing(offending)}"


def test_web_layers_never_import_each_other():
    offending = [
        i
        for i in IMPORTS
        if layer(i.module) in WEB_LAYERS
        and layer(i.target) in WEB_LAYERS
        and layer(i.target) != layer(i.module)
    ]
    assert not offending, (
        "The web layers share through the lower layers (services, presenters), never "
        f"through each other:\n{listing(offending)}"
    )


def test_lower_layers_never_import_web_layers():
    offending = [
        i for i in IMPORTS if layer(i.module) in LOWER_LAYERS and layer(i.target) in WEB_LAYERS
    ]
    assert not offending, (
        f"{', '.join(sorted(LOWER_LAYERS))} sit below the web layers and never import "
        f"them:\n{listing(offending)}"
    )


def test_the_import_reader_sees_relative_nested_and_package_imports():
    source = (
        "import reviewapp.web.access\n"
        "from reviewapp import insights\n"
        "from . import services\n"
        "from ..core.cite import resolve\n"
        "def view():\n"
        "    from reviewapp.api.auth import ApiAuth\n"
    )
    found = {i.target for i in imports_in(source, "reviewapp.ledger.views")}
    assert found == {
        "reviewapp.web.access",
        "reviewapp.insights",
        "reviewapp.ledger.services",
        "reviewapp.core.cite.resolve",
        "reviewapp.api.auth.ApiAuth",
    }
    in_package = imports_in("from .models import Entry", "reviewapp.ledger", is_package=True)
    assert [i.target for i in in_package] == ["reviewapp.ledger.models.Entry"]


def test_the_rules_read_every_layer():
    # A package renamed or moved away would otherwise pass every rule by having no imports.
    assert {layer(i.module) for i in IMPORTS} >= {"core", "review", "api", "web", "insights"}
