"""A URLconf for the ledger's tests: its router on a test-local API, and the export view."""

from django.http import HttpResponse
from django.urls import path
from ninja import NinjaAPI

from reviewapp.ledger.api import build_router
from reviewapp.ledger.views import export_view

api = NinjaAPI(urls_namespace="ledger_tests", docs_url=None)
api.add_router("/ledger", build_router())

urlpatterns = [
    path("api/", api.urls),
    path("ledger/export.jsonl", export_view, name="ledger-export"),
    path("login/", lambda request: HttpResponse("login"), name="login"),
]
