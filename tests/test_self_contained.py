"""A clone of the repository runs, tests and documents itself with nothing beside it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", "var", "node_modules", "__pycache__", ".pytest_cache"}
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".json",
                 ".html", ".js", ".css", ".sh", ""}
# A path that leaves the repository for a sibling directory, or names the
# machine-wide reference material directly.
OUTSIDE = re.compile(r"\.\./(?:\.\./)*shared\b|/work/shared\b")


def _project_files():
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES and path != Path(__file__):
            yield path


def test_no_file_refers_to_anything_outside_the_repository():
    offenders = []
    for path in _project_files():
        text = path.read_text("utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert offenders == []


def test_the_conformance_vectors_live_in_the_repository():
    vectors = ROOT / "tests" / "core" / "data" / "cite_vectors.json"
    assert vectors.is_file()
    assert "cite_vectors.json" in (vectors.parent / "README.md").read_text("utf-8")
