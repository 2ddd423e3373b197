"""A URLconf for the ledger's tests: its router on a test-local API, the export view, the pages."""

from django.urls import include, path
from ninja import NinjaAPI

from reviewapp.ledger.api import build_router
from reviewapp.ledger.views import export_view

api = NinjaAPI(urls_namespace="ledger_tests", docs_url=None)
api.add_router("/ledger", build_router())

urlpatterns = [
    path("api/", api.urls),
    path("decisions/export.jsonl", export_view, name="ledger_export"),
    path("", include("reviewapp.web.urls")),
]
