"""Celery autodiscovery imports `<app>.tasks`; this registers the trial task."""

from reviewapp.review.evaluation.trial import run_trial  # noqa: F401
