from django.contrib import admin
from django.urls import include, path

from reviewapp.api import api
from reviewapp.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("reviewapp.web.urls")),
]
