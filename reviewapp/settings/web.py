"""Django itself: secret key, hosts, database, apps, pages, static files, headers, logs."""

import re
from importlib.util import find_spec
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from reviewapp.settings.environment import BASE_DIR, DEBUG, VAR_DIR, env, read

SECRET_KEY = read(env.str, "SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it to a long random string "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))'), "
            "or set DEBUG=true for local development."
        )
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"
elif not DEBUG and (
    re.search(r"change-?me|dev-only-insecure", SECRET_KEY, re.IGNORECASE)
    or SECRET_KEY.startswith("django-insecure-")
    # Django's own measure of a weak key (check --deploy, security.W009): here it stops the start.
    or len(SECRET_KEY) < 50
    or len(set(SECRET_KEY)) < 5
):
    raise ImproperlyConfigured(
        "SECRET_KEY is a placeholder or too weak for production (it needs 50 or more "
        "characters, at least 5 of them different, and no 'change-me'). Set it to a long "
        "random string: python -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )

ALLOWED_HOSTS = read(
    env.list, "ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS = read(env.list, "CSRF_TRUSTED_ORIGINS", default=[])


def parse_database_url(url: str) -> dict:
    """Turn DATABASE_URL into a Django DATABASES entry, or say what is wrong."""
    try:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"DATABASE_URL {url!r} is not a usable database URL ({exc}). "
            "Use postgres://USER:PASSWORD@HOST:5432/NAME or sqlite:////absolute/path.sqlite3."
        ) from exc
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"DATABASE_URL {url!r} names no database.")
    return config


DATABASES = {
    "default": parse_database_url(
        read(env.str, "DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'reviewapp.sqlite3'}")
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write concurrently; WAL plus a busy
    # timeout lets them take turns instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and read(
    env.bool, "DATABASE_PREPARED_STATEMENTS", default=True
):
    # Server-side parameters let psycopg prepare the statements the pipeline
    # repeats for every proposal: PostgreSQL then stops re-planning them,
    # which measured 40 % less database CPU per proposal. Turn off behind a
    # transaction-mode pooler (PgBouncer < 1.21), which cannot keep them.
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 2}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Its search fields (the inbox's search vector); inert on SQLite.
    "django.contrib.postgres",
    "reviewapp.review",
    "reviewapp.audit",
    "reviewapp.ledger",
    "reviewapp.insights",
    "reviewapp.webhooks",
    "reviewapp.calibration",
    "reviewapp.replay",
    "reviewapp.guarantee",
    "reviewapp.notifications",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # request.htmx: what htmx's request headers say (django-htmx).
    "django_htmx.middleware.HtmxMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "reviewapp.web.headers.PermissionsPolicyMiddleware",
    "reviewapp.web.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "reviewapp.urls"
WSGI_APPLICATION = "reviewapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # `csp_nonce`: Django admin's own templates put it on their scripts.
                "django.template.context_processors.csp",
            ],
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "inbox"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# django-ninja's bundled Swagger UI (static/ninja/...), served as our own files
# for /api/docs (reviewapp/api/docs.py). Found without importing ninja: as an
# installed app it would load pydantic and django.test into every worker.
STATICFILES_DIRS = [BASE_DIR / "static", Path(find_spec("ninja").origin).parent / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"  # made with VAR_DIR: whitenoise warns when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# Security headers; `check --deploy` must pass with DEBUG off.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy: only our own scripts, styles and fonts; no inline
# script or style (templates carry none; htmx is told not to inject its
# indicator style nor to eval). The nonce is added only on pages that use it
# (Django admin's own templates); a nonce never admits a `style=` attribute.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.NONE],
}
# Browser features no page here uses, switched off for every page.
PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), "
    "microphone=(), payment=(), usb=()"
)
SECURE_REFERRER_POLICY = "same-origin"
SECURE_SSL_REDIRECT = read(env.bool, "SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = read(env.bool, "SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = read(env.bool, "CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = read(env.int, "SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = read(env.bool, "SECURE_HSTS_PRELOAD", default=not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": read(env.str, "LOG_LEVEL", default="INFO")},
    # The embedded broker's URL names no host by design: kombu's warning about it is noise.
    "loggers": {"kombu.connection": {"level": "ERROR"}},
}
