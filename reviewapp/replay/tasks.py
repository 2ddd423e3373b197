"""The replay's Celery tasks: run one (by id, idempotent), and pick up those a worker lost."""

from celery import shared_task

from .services import replays_lost

RUN_TASK_NAME = "reviewapp.replay.tasks.run_replay"


@shared_task(name=RUN_TASK_NAME)
def run_replay(replay_id: int) -> None:
    """Hand the replay to this process's LLM loop and return; the loop claims it or lets it be."""
    from reviewapp.review.evaluation.llm_loop import runtime

    from .runner import replay_run_async

    runtime().start(replay_run_async(replay_id))


@shared_task(name="reviewapp.replay.tasks.sweep_replays")
def sweep_replays() -> None:
    """Re-enqueue the replays whose worker stopped (killed, restarted) mid-run."""
    for replay_id in replays_lost():
        run_replay.delay(replay_id)
