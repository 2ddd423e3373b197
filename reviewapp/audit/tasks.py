"""Celery autodiscovery imports `<app>.tasks`; this registers the trial task."""

from .trials import run_trial  # noqa: F401
