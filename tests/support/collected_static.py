"""Static files collected once for the suite's runs of DEBUG=false benchmarks.

Each benchmark serves pages with DEBUG off, from a manifest `collectstatic` writes
into its own var directory: about 3 s each on a loaded machine, in every fresh
checkout. The first to need it collects into var/test/templates, named by what the
collected files are made of (the project's static directory, the pinned
dependencies whose apps bring theirs, the static settings); the others link it in
(`BENCH_STATIC_FROM`, benchmarks/support/stack.py).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.db_template import ROOT, TEMPLATES, _lock, manage_py_environment

SOURCES = ("static", "requirements/test.txt", "reviewapp/settings/web.py")


def _key() -> str:
    digest = hashlib.sha256()
    for source in SOURCES:
        path = ROOT / source
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def collected_static() -> Path:
    """A STATIC_ROOT collected with DEBUG off (to link from, never to change)."""
    key = _key()
    collected = TEMPLATES / f"static-{key}"
    with _lock(f"static-{key}"):
        if not collected.exists():
            _collect(collected)
    return collected


def _collect(collected: Path) -> None:
    with tempfile.TemporaryDirectory(dir=TEMPLATES) as scratch:
        environment = manage_py_environment(
            scratch, DEBUG="false", SECRET_KEY="collectstatic-only-" + "k" * 50
        )
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=ROOT, env=environment, check=True, timeout=300,
        )  # fmt: skip
        (Path(scratch) / "staticfiles").rename(collected)
    for old in TEMPLATES.glob("static-*"):
        if old.is_dir() and old != collected:
            shutil.rmtree(old, ignore_errors=True)
