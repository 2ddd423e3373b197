"""The project's URLs plus the insights app's, until reviewapp/urls.py includes them."""

from django.urls import include, path

from reviewapp.urls import urlpatterns as project_urlpatterns

_included = any(
    getattr(p, "urlconf_name", None) == "reviewapp.insights.urls"
    or getattr(getattr(p, "urlconf_module", None), "__name__", "") == "reviewapp.insights.urls"
    for p in project_urlpatterns
)
urlpatterns = list(project_urlpatterns) + (
    [] if _included else [path("", include("reviewapp.insights.urls"))]
)
