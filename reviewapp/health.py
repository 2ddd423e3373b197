"""GET /healthz: is the database, the broker and at least one worker up?"""

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from reviewapp.celery import app

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
    try:
        replies = app.control.ping(timeout=WORKER_PING_TIMEOUT_SECONDS) or []
    except Exception as exc:
        return {"ok": False, "error": str(exc), "workers": []}
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return {"ok": False, "error": "no worker answered a ping within 1 s", "workers": []}
    return {"ok": True, "workers": names}


@require_GET
def healthz(request):
    checks = {"database": _database(), "broker": _broker()}
    checks["worker"] = (
        _workers() if checks["broker"]["ok"] else {"ok": False, "error": "broker is down"}
    )
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", **checks}, status=200 if healthy else 503
    )
