"""What a server process checks before it serves: a refusal at start, never a 500 later.

With DEBUG off, pages name their static files through WhiteNoise's manifest,
which `collectstatic` writes: without it every page (the login and the 404
included) fails. And a server with no signing key would fail at its first
signature, long after it started. `manage.py` commands do not run this, so
that `collectstatic` and `rotate_signing_key` can still put either right.
"""

from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.exceptions import ImproperlyConfigured

from reviewapp.core.signing import KeyFileError


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
    from reviewapp.review.keys import active_signer_without_database

    try:
        active_signer_without_database()
    except (ImproperlyConfigured, KeyFileError, OSError) as exc:
        return str(exc)
    return None


def refuse_unless_ready(*, serves_pages: bool) -> None:
    """Raise ImproperlyConfigured naming every problem, when DEBUG is off."""
    if settings.DEBUG:
        return
    problems = [signing_key_problem()]
    if serves_pages:
        problems.append(static_files_problem())
    problems = [problem for problem in problems if problem]
    if problems:
        raise ImproperlyConfigured(
            "reviewapp cannot start:\n" + "\n".join(f"- {problem}" for problem in problems)
        )
