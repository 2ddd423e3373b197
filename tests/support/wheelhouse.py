"""Wheels of distributions installed in this interpreter, so a test can fill a new venv offline.

An installed distribution holds exactly the files its wheel unpacked (its
RECORD lists them), so zipping those files back, with a fresh RECORD, gives an
installable wheel of the same version for the same platform — no index needed.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

# Files a wheel's installer writes, not part of the wheel itself.
_INSTALLER_FILES = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _tags(dist: metadata.Distribution) -> str:
    """The wheel filename's tag triple, each part a dotted set (PEP 425 compressed tags)."""
    parts: list[list[str]] = [[], [], []]
    for line in (dist.read_text("WHEEL") or "").splitlines():
        if line.startswith("Tag:"):
            for found, part in zip(parts, line.split(":", 1)[1].strip().split("-"), strict=True):
                if part not in found:
                    found.append(part)
    if not parts[0]:
        raise ValueError(f"{dist.metadata['Name']} was not installed from a wheel")
    return "-".join(".".join(part) for part in parts)


def repack(dist: metadata.Distribution, into: Path) -> Path:
    """The installed ``dist`` as a wheel file in ``into``."""
    wheel = into / f"{_normalized(dist.metadata['Name'])}-{dist.version}-{_tags(dist)}.whl"
    records = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in dist.files or ():
            name = file.as_posix()
            if (
                name.startswith("..")  # scripts: the installer writes them from entry points
                or "__pycache__" in file.parts
                or (file.parent.name.endswith(".dist-info") and file.name in _INSTALLER_FILES)
            ):
                continue
            data = Path(dist.locate_file(file)).read_bytes()
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append(f"{name},sha256={digest.decode()},{len(data)}")
        info = f"{_normalized(dist.metadata['Name'])}-{dist.version}.dist-info"
        records.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return wheel


def requirement_name(requirement: str) -> str | None:
    """The distribution a Requires-Dist line names, or None if only an extra asks for it."""
    if "extra ==" in requirement.partition(";")[2]:
        return None
    return re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group(0)


def wheelhouse(names: Iterable[str], into: Path) -> Path:
    """Wheels of ``names`` and of everything they require that is installed here.

    A requirement not installed here is one this interpreter's markers left
    out, so the new venv (same interpreter) does not need it either.
    """
    into.mkdir(parents=True, exist_ok=True)
    pending, seen = list(names), set()
    while pending:
        name = pending.pop()
        if _normalized(name) in seen:
            continue
        seen.add(_normalized(name))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        repack(dist, into)
        pending.extend(n for n in map(requirement_name, dist.requires or ()) if n)
    return into
