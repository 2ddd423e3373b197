"""The authority a checker may hold, and whether a grant covers an action."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from .errors import GrantOverreach, GrantUndecidable

# ``domain:action`` pairs a checker may hold, for any resource. A checker has
# to see what it judges (fs read/list/stat) and the useful ones run a tool
# (proc:exec). Everything else is out: net and secret are the only ways to
# reach a model provider, time and rand are the ordinary sources of a verdict
# that differs between two runs, and fs:write would let a checker make its own
# verdict true. Confining what a child process actually does is the sandbox's
# job; this decides what authority is legitimate.
CHECKER_CEILING = frozenset({"fs:read", "fs:list", "fs:stat", "proc:exec"})

_GRANT = re.compile(
    r"(?P<domain>[a-z][a-z0-9_-]*):(?P<action>[a-z][a-z0-9_-]*)(?::(?P<resource>.+))?"
)


def _within_ceiling(grant: object) -> bool | None:
    """True inside the ceiling, False outside, None when it cannot be decided.

    Grants are ``domain:action`` or ``domain:action:resource``. Something that
    does not parse as a grant is not in the ceiling. A templated resource
    (``{workspace}``) is symbolic, so containment is unknown.
    """
    match = _GRANT.fullmatch(grant) if isinstance(grant, str) else None
    if match is None or f"{match['domain']}:{match['action']}" not in CHECKER_CEILING:
        return False
    resource = match["resource"] or ""
    if "{" in resource or "}" in resource:
        return None
    return True


def ensure_model_free(checker_name: str, grants: Iterable[str]) -> None:
    """Refuse grants a checker may not hold.

    Raises ``GrantOverreach`` naming every grant outside the ceiling (sorted,
    so the message is stable), else ``GrantUndecidable`` naming every grant
    whose containment cannot be decided. A definite overreach outranks an
    unknown, as in three-valued conjunction.
    """
    grants = tuple(grants)
    outside = sorted(str(g) for g in grants if _within_ceiling(g) is False)
    if outside:
        raise GrantOverreach(
            checker_name,
            outside,
            f"checker {checker_name!r} declares {', '.join(outside)}, outside what a checker "
            f"may hold ({', '.join(sorted(CHECKER_CEILING))})",
        )
    unknown = sorted(str(g) for g in grants if _within_ceiling(g) is None)
    if unknown:
        raise GrantUndecidable(
            checker_name,
            unknown,
            f"cannot prove checker {checker_name!r}'s grants {', '.join(unknown)} are within "
            f"what a checker may hold",
        )


def _resolved_pattern(resource: str) -> str | None:
    """``resource`` with its literal directory part resolved, or None if it names no path.

    Only the part before the first wildcard can be resolved; a ``..`` segment
    is refused rather than guessed at, so ``/usr/bin/../../bin/**`` covers
    nothing instead of whatever the text happens to glob.
    """
    segments = resource.split("/")
    if not resource.startswith("/") or ".." in segments:
        return None
    wild = next((i for i, s in enumerate(segments) if "*" in s), len(segments))
    head = os.path.realpath("/".join(segments[:wild]) or "/")
    return "/".join([head.rstrip("/"), *segments[wild:]]) if wild < len(segments) else head


def grant_covers_path(grant: str, domain_action: str, path: str | None) -> bool:
    """Whether ``grant`` authorises ``domain_action`` on the file at ``path``.

    Both sides are compared resolved (``os.path.realpath``): ``..`` and
    symlinks are followed to where they lead, so a path that only reads as
    inside a granted tree, or a symlink inside it that points out, is not
    covered. ``path`` None (nothing found) is covered only by a grant without
    a resource. In a resource pattern ``**`` matches anything and ``*``
    anything but ``/``.
    """
    match = _GRANT.fullmatch(grant)
    if match is None or f"{match['domain']}:{match['action']}" != domain_action:
        return False
    if match["resource"] is None:
        return True
    resolved = _resolved_pattern(match["resource"])
    if resolved is None or path is None:
        return False
    pattern = "".join(
        ".*" if part == "**" else "[^/]*" if part == "*" else re.escape(part)
        for part in re.split(r"(\*\*|\*)", resolved)
    )
    return re.fullmatch(pattern, os.path.realpath(path), re.DOTALL) is not None
