"""The site's URLconf, with the ledger's router on a test-local API and the export view first.

(The ledger tests mount its router on a test-local API as well; a
router can be attached to one API only, hence `build_router()`.)
"""

from django.urls import path
from ninja import NinjaAPI

from reviewapp.api.ledger import build_router
from reviewapp.urls import urlpatterns as site_urlpatterns
from reviewapp.web.ledger_views import export_view

api = NinjaAPI(urls_namespace="ledger_tests", docs_url=None)
api.add_router("/ledger", build_router())

urlpatterns = [
    path("api/", api.urls),
    path("decisions/export.jsonl", export_view, name="ledger_export"),
    *site_urlpatterns,
]
