"""reviewapp.celery: Celery is configured from the CELERY_* Django settings."""

import subprocess
import sys

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


def test_a_worker_loads_its_tasks_without_the_api_stack_or_jsonschema():
    # Each would be resident in every worker process (about 15 MB together):
    # a worker serves no page, and few panels have a JSON Schema checker.
    probe = (
        "import sys, django; django.setup(); "
        "from reviewapp.celery import app; app.loader.import_default_modules(); "
        "assert 'reviewapp.review.evaluation.tasks' in sys.modules; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('ninja', 'pydantic', 'jsonschema') or m.startswith('django.test')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
