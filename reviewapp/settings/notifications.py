"""Notifications: where messages link to, email, and how often people hear."""

from django.core.exceptions import ImproperlyConfigured

from reviewapp.settings.broker import CELERY_BEAT_SCHEDULE
from reviewapp.settings.environment import DEBUG, VAR_DIR, env, read

# Where messages link to: the address people open the desk at.
_public_url = read(env.url, "REVIEWAPP_PUBLIC_URL", default=None, schemes={"http", "https"})
REVIEWAPP_PUBLIC_URL = _public_url.geturl().rstrip("/") if _public_url else "http://localhost:8000"
# Email goes through Django's default mailer (MAILERS, Django 6.1): SMTP when EMAIL_HOST
# is set or DEBUG is off (a production server never writes mail to files: `check
# --deploy` refuses that); otherwise each message is written to a file under
# EMAIL_FILE_PATH (the one-command run). EMAIL_BACKEND names another Django backend
# (django.core.mail.backends.console.EmailBackend prints them).
_email_host = read(env.str, "EMAIL_HOST", default="")
_email_backend = read(
    env.str,
    "EMAIL_BACKEND",
    default="django.core.mail.backends.smtp.EmailBackend"
    if _email_host or not DEBUG
    else "django.core.mail.backends.filebased.EmailBackend",
)
EMAIL_TIMEOUT_SECONDS = read(env.float, "EMAIL_TIMEOUT", default=10.0)
if _email_backend.endswith(".smtp.EmailBackend"):
    _email_options = {
        "host": _email_host or "localhost",
        "port": read(env.int, "EMAIL_PORT", default=587),
        "username": read(env.str, "EMAIL_HOST_USER", default=""),
        "password": read(env.str, "EMAIL_HOST_PASSWORD", default=""),
        "use_tls": read(env.bool, "EMAIL_USE_TLS", default=bool(_email_host)),
        "use_ssl": read(env.bool, "EMAIL_USE_SSL", default=False),
        "timeout": EMAIL_TIMEOUT_SECONDS,
    }
    if _email_options["use_tls"] and _email_options["use_ssl"]:
        raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both.")
elif _email_backend.endswith(".filebased.EmailBackend"):
    _email_options = {"file_path": read(env.str, "EMAIL_FILE_PATH", default=str(VAR_DIR / "mail"))}
else:
    _email_options = {}
MAILERS = {"default": {"BACKEND": _email_backend, "OPTIONS": _email_options}}
DEFAULT_FROM_EMAIL = read(env.str, "DEFAULT_FROM_EMAIL", default="reviewapp <reviewapp@localhost>")
# A person who asked to hear at once gets at most one message in this many seconds
# (what arrives meanwhile goes together: a burst is one message).
REVIEWAPP_NOTIFY_GAP_SECONDS = read(env.float, "REVIEWAPP_NOTIFY_GAP_SECONDS", default=60.0)
# How often the scheduler composes digests that are due and re-sends what is pending.
REVIEWAPP_NOTIFY_SWEEP_SECONDS = read(env.float, "REVIEWAPP_NOTIFY_SWEEP_SECONDS", default=20.0)
# How long a sender holds a message; past it a sender that died is presumed dead.
REVIEWAPP_NOTIFY_LEASE_SECONDS = read(env.float, "REVIEWAPP_NOTIFY_LEASE_SECONDS", default=60.0)
REVIEWAPP_NOTIFY_MAX_DIGEST_MINUTES = 7 * 24 * 60
# How many seconds a digest period's minute lasts. Benchmarks and tests shorten it, to see
# digests go without waiting whole minutes; a deployment leaves it at 60.
REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS = read(
    env.int, "REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS", default=60
)
if not 1 <= REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS <= 60:
    raise ImproperlyConfigured("REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS must be 1 to 60.")
# Seconds before each retry (±20 % jitter): about 6 hours in all, then the message fails.
REVIEWAPP_NOTIFY_RETRY_DELAYS = [
    float(d)
    for d in read(
        env.list,
        "REVIEWAPP_NOTIFY_RETRY_DELAYS",
        default=["10", "60", "300", "900", "1800", "3600", "7200", "7200"],
    )
]
for _name in (
    "REVIEWAPP_NOTIFY_GAP_SECONDS",
    "REVIEWAPP_NOTIFY_SWEEP_SECONDS",
    "REVIEWAPP_NOTIFY_LEASE_SECONDS",
    "EMAIL_TIMEOUT_SECONDS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be positive.")
if REVIEWAPP_NOTIFY_LEASE_SECONDS <= EMAIL_TIMEOUT_SECONDS:
    raise ImproperlyConfigured("REVIEWAPP_NOTIFY_LEASE_SECONDS must exceed EMAIL_TIMEOUT.")
CELERY_BEAT_SCHEDULE["notifications-sweep"] = {
    "task": "reviewapp.notifications.tasks.sweep_notifications",
    "schedule": REVIEWAPP_NOTIFY_SWEEP_SECONDS,
}
