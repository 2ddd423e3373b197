"""Which environment variables an LLM lens may name as its API key.

The worker sends the named variable's value as a bearer token to the lens's
URL, so an admin who could name any variable could send the signing seed or
the database password to a server of their choosing. Only names that
``REVIEWAPP_LLM_KEY_ENV_ALLOW`` admits are ever read, and the app's own
secrets never are, whatever that setting says.
"""

import os
import re

from django.conf import settings

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What the app itself reads as configuration: never a model's API key.
OWN_SECRETS = re.compile(
    r"(SECRET_KEY|DATABASE_URL|CELERY_BROKER_URL|CACHE_URL|REVIEWAPP_.*|DJANGO_.*)",
    re.IGNORECASE,
)


def admits(pattern: str, name: str) -> bool:
    """An allowlist entry is a name, or a prefix ending in ``*``."""
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name == pattern


def problem(name: str) -> str | None:
    """Why a lens may not name `name` as its API-key variable, or None."""
    if not name:
        return None
    if not ENV_NAME.fullmatch(name):
        return (
            "Enter the name of an environment variable (letters, digits and underscores, "
            "e.g. LLM_API_KEY_OPENAI), never the key itself."
        )
    allowed = settings.REVIEWAPP_LLM_KEY_ENV_ALLOW
    if OWN_SECRETS.fullmatch(name) or not any(admits(p, name) for p in allowed):
        return (
            f"{name} is not a variable lenses may read: the server only sends variables "
            f"that REVIEWAPP_LLM_KEY_ENV_ALLOW admits ({', '.join(allowed)}), and never its "
            "own secrets. Put the key in an admitted variable, e.g. LLM_API_KEY_OPENAI."
        )
    return None


def read(name: str) -> str | None:
    """The key in `name`, or None when none is named or set; refuses what is not admitted."""
    if not name:
        return None
    refusal = problem(name)
    if refusal:
        raise PermissionError(refusal)
    return os.environ.get(name) or None


def is_set(name: str) -> bool:
    """Whether an admitted variable is set; never says anything of one that is not."""
    return bool(name) and problem(name) is None and bool(os.environ.get(name))
