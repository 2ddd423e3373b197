"""GET /healthz: is the database up, the broker, and a worker on the queue? And the ledger's
witnesses: have they refused a checkpoint? Does its sequencer keep up? Are review deadlines
acted on in time?

Also, for information (never what makes it degraded: a busy provider is not a
broken app), each LLM endpoint's effective limit, calls waiting and recent 429s.
"""

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from reviewapp.celery import app
from reviewapp.ledger.cosigning import witness_report
from reviewapp.ledger.services import sequencer_backlog
from reviewapp.review.evaluation.endpoint_limits import llm_endpoints
from reviewapp.review.services.deadlines import deadlines_overdue

WORKER_PING_TIMEOUT_SECONDS = 1.0


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:  # any failure means "down"; the message says why
        return {"ok": False, "error": str(exc)}


def _broker() -> dict:
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=WORKER_PING_TIMEOUT_SECONDS)
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "error": str(exc)}


def _workers() -> dict:
    """Which workers answer, and whether the pipeline's queue has one.

    One queue carries every proposal: its LLM lenses are judged on an event
    loop inside each worker process (reviewapp/review/evaluation/llm_loop/).
    """
    try:
        replies = app.control.inspect(timeout=WORKER_PING_TIMEOUT_SECONDS).active_queues() or {}
    except Exception as exc:
        return {"ok": False, "error": str(exc), "workers": [], "queues": {}}
    names = sorted(replies)
    queues = {
        queue: sorted(name for name, consumed in replies.items() if queue in _names(consumed))
        for queue in (app.conf.task_default_queue,)
    }
    if not names:
        return {
            "ok": False,
            "error": "no worker answered within 1 s",
            "workers": [],
            "queues": queues,
        }
    idle = [queue for queue, consumers in queues.items() if not consumers]
    if idle:
        return {
            "ok": False,
            "error": f"no worker consumes the {', '.join(idle)} queue",
            "workers": names,
            "queues": queues,
        }
    return {"ok": True, "workers": names, "queues": queues}


def _names(consumed: list[dict]) -> set[str]:
    return {queue["name"] for queue in consumed or ()}


def _witnesses() -> dict:
    """Each configured C2SP witness: what it last cosigned, and any alert or outage.

    An alert (a refusal, a fork) makes the status "degraded" but not the answer
    503: the app still serves, and a load balancer should not take it out for
    a witness's complaint.
    """
    try:
        witnesses = witness_report()
    except Exception as exc:  # any failure means "unknown"; the message says why
        return {"ok": False, "error": str(exc), "witnesses": []}
    alerts = [w["name"] for w in witnesses if w["alert"]]
    if alerts:
        return {
            "ok": False,
            "error": f"ledger witness alert: {', '.join(alerts)} (see each alert)",
            "witnesses": witnesses,
        }
    return {"ok": True, "witnesses": witnesses}


def _sequencer() -> dict:
    """Ledger entries waiting for their index longer than the bound: "degraded", not 503."""
    try:
        backlog = sequencer_backlog()
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    oldest = backlog.oldest.isoformat() if backlog.oldest else None
    if backlog.late:
        return {"ok": False, "error": backlog.alert, "waiting": backlog.waiting, "oldest": oldest}
    return {"ok": True, "waiting": backlog.waiting, "oldest": oldest}


def _deadlines() -> dict:
    """Review deadlines the scheduler has fallen behind on (more than a minute late by
    default): "degraded", not 503, since the app still serves."""
    try:
        late = deadlines_overdue()
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    if late["overdue"]:
        oldest = late["oldest_due_at"].isoformat()
        return {
            "ok": False,
            "error": f"{late['overdue']} review deadlines not acted on (oldest due {oldest}): "
            "is beat running, and a worker?",
            **late,
            "oldest_due_at": oldest,
        }
    return {"ok": True, "overdue": 0}


@require_GET
def healthz(request):
    checks = {"database": _database(), "broker": _broker()}
    checks["worker"] = (
        _workers() if checks["broker"]["ok"] else {"ok": False, "error": "broker is down"}
    )
    serving = all(check["ok"] for check in checks.values())
    if settings.REVIEWAPP_LEDGER_WITNESSES and checks["database"]["ok"]:
        checks["witnesses"] = _witnesses()
    if checks["database"]["ok"]:
        checks["deadlines"] = _deadlines()
        checks["sequencer"] = _sequencer()
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", **checks, "llm_endpoints": _endpoints()},
        status=200 if serving else 503,
    )


def _endpoints() -> list[dict] | dict:
    try:
        return llm_endpoints()
    except Exception as exc:  # the store (Redis) down: the checks above say what matters
        return {"error": str(exc)}
