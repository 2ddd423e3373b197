"""Celery's broker, the cache shared between processes, and the scheduler's table.

Every settings module adds its part's sweeps to CELERY_BEAT_SCHEDULE.
"""

from django.core.exceptions import ImproperlyConfigured

from reviewapp.settings.environment import VAR_DIR, env, read

# With no broker configured the app uses kombu's filesystem transport under
# VAR_DIR, so the one-command run needs no server. A redis:// URL switches.
CELERY_BROKER_URL = read(env.str, "CELERY_BROKER_URL", default="filesystem://")
if not CELERY_BROKER_URL.startswith(("filesystem://", "redis://", "rediss://")):
    raise ImproperlyConfigured(
        f"CELERY_BROKER_URL {CELERY_BROKER_URL!r} is not supported: use redis://HOST:6379/0, "
        "or leave it unset for the embedded filesystem broker."
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport, with files that appear whole or not at all:
    # its own lets a consumer read a message still being written, and the
    # worker dies of a JSONDecodeError (reviewapp/embedded_broker.py).
    # Its channels make these folders.
    CELERY_BROKER_TRANSPORT = "reviewapp.embedded_broker:Transport"
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "control_folder": str(_broker_dir / "control"),
        "processed_folder": str(_broker_dir / "processed"),
        "staging_folder": str(_broker_dir / "staging"),
        "store_processed": False,
        # The filesystem transport polls; kombu's 1 s default makes a queue of
        # a few hundred messages take minutes to drain.
        "polling_interval": 0.05,
    }
CELERY_TASK_TIME_LIMIT = read(env.int, "CELERY_TASK_TIME_LIMIT", default=300)
CELERY_TASK_SOFT_TIME_LIMIT = read(env.int, "CELERY_TASK_SOFT_TIME_LIMIT", default=240)
if CELERY_TASK_SOFT_TIME_LIMIT >= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured("CELERY_TASK_SOFT_TIME_LIMIT must be below CELERY_TASK_TIME_LIMIT.")
CELERY_WORKER_CONCURRENCY = read(env.int, "CELERY_WORKER_CONCURRENCY", default=2)
# Celery's Django fixup closes database connections after this many tasks
# (every task when unset); reviewapp.celery recycles them per CONN_MAX_AGE instead.
CELERY_DB_REUSE_MAX = 1000
# Each settings module adds the sweeps of its part (reviewapp/celery.py runs them under beat).
CELERY_BEAT_SCHEDULE = {}

# Shared between web processes (rate limits, claim notices): Redis when the
# broker is Redis, otherwise a file cache under VAR_DIR that every local
# process sees.
CACHE_URL = read(env.str, "CACHE_URL", default="")
# What every key reviewapp writes to Redis starts with (the cache, the LLM endpoints'
# limits); the tests give each of their processes its own (tests/settings.py).
REVIEWAPP_REDIS_KEY_PREFIX = "reviewapp"
if CACHE_URL or CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL or CELERY_BROKER_URL,
            "KEY_PREFIX": REVIEWAPP_REDIS_KEY_PREFIX,
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }
