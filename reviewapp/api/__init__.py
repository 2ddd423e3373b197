"""The REST API: one NinjaAPI at /api/, a router per area, errors always JSON `{"detail"}`."""

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, Throttled

from reviewapp.outages import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS

from . import cite, decisions, escalations, ledger, lenses, panels, proposals, webhooks
from .docs import LocalSwagger
from .parsing import BodyRejected, GuardedParser, size_guard, too_large

api = NinjaAPI(
    title="reviewapp API",
    version="1",
    description="Submit proposals, deliver external judgements, read verdicts and signed "
    "decisions. Machine clients send `Authorization: Bearer <token>` "
    "(`python manage.py create_api_token`).",
    docs=LocalSwagger(),
    docs_url="/docs",
    urls_namespace="api",
    parser=GuardedParser(),
)


def _rejected(request, exc: BodyRejected):
    return api.create_response(request, {"detail": exc.detail}, status=exc.status)


@api.exception_handler(BodyRejected)
def _body_rejected(request, exc: BodyRejected):
    return _rejected(request, exc)


@api.exception_handler(HttpError)
def _http_error(request, exc: HttpError):
    # django-ninja re-raises anything the parser raises as a bare 400.
    if isinstance(exc.__cause__, BodyRejected):
        return _rejected(request, exc.__cause__)
    response = api.create_response(request, {"detail": str(exc)}, status=exc.status_code)
    if exc.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="reviewapp"'
    return response


@api.exception_handler(Throttled)
def _throttled(request, exc: Throttled):
    response = api.create_response(
        request, {"detail": "rate limit exceeded for this token"}, status=429
    )
    response["Retry-After"] = str(exc.wait)
    return response


@api.exception_handler(RequestDataTooBig)
def _too_big(request, exc: RequestDataTooBig):
    # Django's own DATA_UPLOAD_MAX_MEMORY_SIZE, if it is ever below ours.
    return _rejected(request, too_large())


def _database_unavailable(request, exc):
    # A restart or failover of the database is transient: say so, and how to
    # retry safely, rather than answer a bare 500.
    response = api.create_response(
        request,
        {
            "detail": "the database is unavailable, so this request may not have been applied; "
            "retry shortly (a submission retried with the same external_ref is stored once)"
        },
        status=503,
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


for _error in DATABASE_UNAVAILABLE:
    api.add_exception_handler(_error, _database_unavailable)


api.add_decorator(size_guard(_rejected), mode="view")
api.add_router("", proposals.router)
api.add_router("", escalations.router)
api.add_router("", decisions.router)
api.add_router("", cite.router)
api.add_router("", webhooks.router)
api.add_router("", lenses.router)
api.add_router("", panels.router)
# Public verifiability: checkpoints and proofs take no authentication; raw entries need a reader.
api.add_router("/ledger", ledger.router)


def endpoint_not_found(request, path: str = ""):
    """Unknown paths under /api/ answer in the API's own shape, not Django's HTML page."""
    return JsonResponse(
        {"detail": f"no endpoint at {request.path}; the API is described at /api/docs"},
        status=404,
    )
