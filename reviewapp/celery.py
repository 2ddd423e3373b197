import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
# Celery's Django fixup runs Django's system checks when a worker starts, and
# they import the whole URLconf (the API and its schemas, every view): about
# 17 MB in every worker process, none of which serves a URL. `migrate` (run
# before the web server starts) and `check --deploy` still run them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("reviewapp")


@app.on_configure.connect
def _read_django_settings(sender: Celery, **kwargs) -> None:
    """Configure Celery from a copy of the CELERY_* Django settings, taken when first needed.

    Celery looks several settings up for every message it sends or runs; through
    Django's lazy settings object each absent one costs a raised AttributeError,
    about a quarter of what sending a message costs. A plain dict answers at
    once. Settings are fixed at startup, so the copy cannot go stale.
    """
    from django.conf import settings

    sender.config_from_object(
        {name: getattr(settings, name) for name in dir(settings) if name.startswith("CELERY_")},
        namespace="CELERY",
    )


app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_ignore_result=True,
    # A task is acknowledged only once it finished, and a worker that dies
    # mid-task hands it back: re-delivery is safe because every task is
    # idempotent, and losing an evaluation is not.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
app.autodiscover_tasks()
# The review app keeps its tasks with the rest of its evaluation code.
app.autodiscover_tasks(["reviewapp.review.evaluation"])
app.autodiscover_tasks(["reviewapp.review"], related_name="deadline_tasks")


@worker_init.connect
def _refuse_to_start_unless_ready(**kwargs) -> None:
    """A worker with no signing key stops at start, saying what to set (reviewapp/startup.py)."""
    from django.core.exceptions import ImproperlyConfigured

    from reviewapp.startup import refuse_unless_ready

    try:
        refuse_unless_ready(serves_pages=False)
    except ImproperlyConfigured as exc:
        # SystemExit, not an exception: Celery logs a signal handler's exceptions and goes on.
        raise SystemExit(str(exc)) from None


@task_prerun.connect
@task_postrun.connect
def _recycle_database_connections(**kwargs) -> None:
    """Keep database connections across tasks the way Django keeps them across requests.

    Celery's Django fixup would otherwise close every connection before and
    after each task (settings.CELERY_DB_REUSE_MAX turns that down), and a fresh
    PostgreSQL connection costs more than most of our tasks. This honours
    CONN_MAX_AGE and CONN_HEALTH_CHECKS, and drops a connection that errored.
    """
    from django.db import close_old_connections

    close_old_connections()
