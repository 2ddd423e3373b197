"""What a process needs from the machine, and what a server checks before it serves.

Settings only read values (reviewapp/settings/); what needs the machine is here.
Every process that sets Django up gets its var directory (`prepare_var_dir`).
The web server, `make run` and the worker then refuse to start, naming every
problem, rather than fail later with a 500 or a checker that cannot run:

- a checker user that is root or not a user of this machine, and trust anchors
  (`REVIEWAPP_TRUSTED_KEYS`) that are neither keys nor readable files of them,
  in any mode;
- with DEBUG off, no signing key (the first signature would fail, long after the
  start) and, for a server of pages, static files not collected (WhiteNoise's
  manifest names them: without it every page, the login and the 404 included,
  fails).

`manage.py` commands do not refuse, so that `collectstatic` and
`rotate_signing_key` can still put things right.
"""

import pwd
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.exceptions import ImproperlyConfigured

from reviewapp.core.signing import KeyFileError


def prepare_var_dir() -> None:
    """Make the directory an instance writes everything to, and its static files' folder."""
    Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)


def checker_user_problem() -> str | None:
    name = settings.REVIEWAPP_CHECKER_USER
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return f"REVIEWAPP_CHECKER_USER: no user {name!r} on this machine."
    return "REVIEWAPP_CHECKER_USER must not be root." if uid == 0 else None


def trusted_keys_problem() -> str | None:
    from reviewapp.ledger.keys import anchored_keys

    try:
        anchored_keys(settings.REVIEWAPP_TRUSTED_KEYS)
    except ImproperlyConfigured as exc:
        return str(exc)
    return None


def static_files_problem() -> str | None:
    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return None
    manifest = Path(settings.STATIC_ROOT) / staticfiles_storage.manifest_name
    if manifest.exists():
        return None
    return (
        f"static files are not collected ({manifest} is missing): run "
        "`python manage.py collectstatic --noinput` (`make run` does it when DEBUG is off)."
    )


def signing_key_problem() -> str | None:
    from reviewapp.ledger.keys import active_signer_without_database

    try:
        active_signer_without_database()
    except (ImproperlyConfigured, KeyFileError, OSError) as exc:
        return str(exc)
    return None


def refuse_unless_ready(*, serves_pages: bool) -> None:
    """Raise ImproperlyConfigured naming every problem (the module docstring lists them)."""
    problems = [checker_user_problem(), trusted_keys_problem()]
    if not settings.DEBUG:
        problems.append(signing_key_problem())
        if serves_pages:
            problems.append(static_files_problem())
    problems = [problem for problem in problems if problem]
    if problems:
        raise ImproperlyConfigured(
            "reviewapp cannot start:\n" + "\n".join(f"- {problem}" for problem in problems)
        )
