"""The sandbox a command checker runs in, from the settings."""

from django.conf import settings

from reviewapp.core.checkers import Sandbox


def checker_sandbox() -> Sandbox:
    """The sandbox user, and every path holding this app's data or secrets, hidden.

    Files created by the app are not all private (SQLite leaves its database
    0644), so hiding them does not rest on their permissions. The checkout
    stays readable (its data and secrets hidden on top) wherever it lies, so a
    clone under /tmp gives a checker what one elsewhere does.
    """
    database = settings.DATABASES["default"]
    hidden = [
        settings.VAR_DIR,
        settings.BASE_DIR / ".env",
        settings.REVIEWAPP_SIGNING_KEY_FILE,
        settings.REVIEWAPP_LEDGER_WITNESS_FILE,
        database["NAME"] if database["ENGINE"] == "django.db.backends.sqlite3" else "",
        *settings.REVIEWAPP_CHECKER_HIDE,
    ]
    return Sandbox(
        user=settings.REVIEWAPP_CHECKER_USER,
        hidden=tuple(str(path) for path in hidden if str(path)),
        readable=(str(settings.BASE_DIR), *settings.REVIEWAPP_CHECKER_READABLE),
    )
