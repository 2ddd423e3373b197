"""The review tasks keep the names that queued messages and the beat schedule route by."""

from django.conf import settings

from reviewapp.celery import app
from reviewapp.review.evaluation.tasks import (
    evaluate_proposal,
    finalize_proposal,
    sweep_stuck_proposals,
)

# Where these tasks lived before review/evaluation/: a deployment's queued
# messages name them so.
ROUTED_NAMES = {
    "reviewapp.review.tasks.evaluate_proposal",
    "reviewapp.review.tasks.finalize_proposal",
    "reviewapp.review.tasks.sweep_stuck_proposals",
}


def test_the_review_tasks_are_named_as_before_they_moved():
    tasks = (evaluate_proposal, finalize_proposal, sweep_stuck_proposals)
    assert {task.name for task in tasks} == ROUTED_NAMES


def test_every_beat_entry_names_a_registered_task():
    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks
