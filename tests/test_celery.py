"""reviewapp.celery: Celery is configured from the CELERY_* Django settings."""

from django.conf import settings

from reviewapp.celery import app


def test_celery_reads_the_broker_and_time_limits_from_django_settings():
    assert app.conf.broker_url == settings.CELERY_BROKER_URL
    assert app.conf.task_time_limit == settings.CELERY_TASK_TIME_LIMIT
    assert app.conf.task_soft_time_limit == settings.CELERY_TASK_SOFT_TIME_LIMIT


def test_celery_keeps_database_connections_across_tasks_as_configured():
    # Read by Celery's Django fixup under its old-style name.
    assert app.conf.get("CELERY_DB_REUSE_MAX") == settings.CELERY_DB_REUSE_MAX


def test_celery_settings_set_in_code_still_apply():
    assert app.conf.task_acks_late is True
    assert app.conf.worker_prefetch_multiplier == 1
