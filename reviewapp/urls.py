from django.contrib import admin
from django.urls import include, path, re_path

from reviewapp.api import api, endpoint_not_found
from reviewapp.health import healthz
from reviewapp.web.ledger_views import checkpoint_view, export_view, tile_view

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    re_path(r"^api/(?P<path>.*)$", endpoint_not_found),
    path("decisions/export.jsonl", export_view, name="ledger_export"),
    # C2SP tlog-tiles: the prefix is <origin>/ledger/.
    path("ledger/checkpoint", checkpoint_view, name="ledger_tiles_checkpoint"),
    path("ledger/tile/<path:path>", tile_view, name="ledger_tile"),
    path("", include("reviewapp.insights.urls")),
    path("", include("reviewapp.web.urls")),
]
