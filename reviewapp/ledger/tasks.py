import httpx
from celery import shared_task
from django.conf import settings

from .cosigning import witness_submit, witnesses_behind
from .models import LedgerCheckpoint
from .services import checkpoint_create, ledger_sequence
from .witness import POST_TIMEOUT_SECONDS

# One client per worker process: connections to the witness are reused.
_client = httpx.Client(timeout=POST_TIMEOUT_SECONDS, follow_redirects=False)


@shared_task(name="reviewapp.ledger.tasks.ledger_checkpoint", ignore_result=True)
def ledger_checkpoint() -> int | None:
    """Periodic (Celery beat): sign a checkpoint if the ledger grew since the last one."""
    checkpoint = checkpoint_create(only_if_grown=True)
    return checkpoint.tree_size if checkpoint else None


@shared_task(name="reviewapp.ledger.tasks.ledger_sequence", ignore_result=True)
def ledger_sequence_task() -> int:
    """Periodic (Celery beat): sequence what no commit's own wake-up did (idempotent)."""
    return ledger_sequence()


@shared_task(
    bind=True,
    name="reviewapp.ledger.tasks.ledger_witness_post",
    ignore_result=True,
    max_retries=8,
)
def ledger_witness_post(self, checkpoint_id: int) -> None:
    """POST a signed checkpoint to REVIEWAPP_LEDGER_WITNESS_URL (idempotent: a witness
    keeps a note once). A short timeout, then a retry later: a slow witness never holds
    a worker for long."""
    url = settings.REVIEWAPP_LEDGER_WITNESS_URL
    checkpoint = LedgerCheckpoint.objects.filter(pk=checkpoint_id).first()
    if not url or checkpoint is None:
        return
    try:
        response = _client.post(
            url,
            content=checkpoint.note.encode(),
            headers={"Content-Type": "text/plain; charset=utf-8"},
        )
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise self.retry(exc=exc, countdown=min(600, 10 * 2**self.request.retries)) from exc


@shared_task(name="reviewapp.ledger.tasks.ledger_witness_submit", ignore_result=True)
def ledger_witness_submit(checkpoint_id: int, witness_id: int) -> str:
    """Submit a checkpoint to one C2SP witness (idempotent; bounded timeouts, never a sleep:
    a witness that cannot be reached is tried again by ``ledger_witness_catch_up``)."""
    return witness_submit(checkpoint_id=checkpoint_id, witness_id=witness_id)


@shared_task(name="reviewapp.ledger.tasks.ledger_witness_catch_up", ignore_result=True)
def ledger_witness_catch_up() -> int:
    """Periodic (Celery beat): send the latest checkpoint to every witness that lacks it."""
    behind = witnesses_behind()
    for checkpoint_id, witness_id in behind:
        ledger_witness_submit.delay(checkpoint_id, witness_id)
    return len(behind)
