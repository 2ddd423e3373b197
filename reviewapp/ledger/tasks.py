from celery import shared_task

from .services import checkpoint_create


@shared_task(name="reviewapp.ledger.tasks.ledger_checkpoint", ignore_result=True)
def ledger_checkpoint() -> int | None:
    """Periodic (Celery beat): sign a checkpoint if the ledger grew since the last one."""
    checkpoint = checkpoint_create(only_if_grown=True)
    return checkpoint.tree_size if checkpoint else None
