"""The scheduler's review deadlines: lease what is due, act on each in its own transaction.

`deadlines_sweep` runs on beat every REVIEWAPP_DEADLINE_SWEEP_SECONDS; what it
leases goes to workers in batches (`escalations_expire`), so a burst of
deadlines in the same minute is spread over every worker process. Each task
takes ids and re-reads them, and acting twice is a no-op
(`services.deadlines.escalation_expire`).
"""

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from .services.deadlines import escalations_due_take, escalations_expire, escalations_remind

# At most this many leased per sweep: a backlog beyond it is taken by the next sweeps.
SWEEP_LIMIT = 50_000
# Reminders marked and told per transaction.
REMIND_BATCH = 500


@shared_task(name="reviewapp.review.tasks.deadlines_sweep")
def deadlines_sweep() -> int:
    """Remind of deadlines that are near; lease the escalations whose deadline has come and
    hand them to workers. How many were leased."""
    now = timezone.now()
    while escalations_remind(now=now, limit=REMIND_BATCH) == REMIND_BATCH:
        pass
    ids = escalations_due_take(now=now, limit=SWEEP_LIMIT)
    batch = settings.REVIEWAPP_DEADLINE_BATCH
    if ids:
        with expire_escalations.app.producer_or_acquire() as producer:
            for start in range(0, len(ids), batch):
                expire_escalations.apply_async((ids[start : start + batch],), producer=producer)
    return len(ids)


@shared_task(name="reviewapp.review.tasks.escalations_expire")
def expire_escalations(escalation_ids: list[int]) -> int:
    """Act on the escalations' deadlines; how many got a fallback decision. One that fails
    stays leased and is taken again by a sweep once its lease runs out."""
    return escalations_expire(escalation_ids=escalation_ids)
