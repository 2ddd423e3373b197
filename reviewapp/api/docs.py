"""The interactive API docs page: django-ninja's Swagger UI, rendered without the ninja app."""

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja.openapi.docs import Swagger


class LocalSwagger(Swagger):
    """Swagger UI from our own static files, with "ninja" left out of INSTALLED_APPS.

    django-ninja serves its bundled Swagger UI only when the app is installed
    (otherwise the page loads it from a CDN, blank offline). Installing it
    imports ninja, pydantic and django.test at django.setup() in every process,
    Celery workers included, which never serve a page: about 12 MB each. Its
    static directory is in STATICFILES_DIRS instead (settings/web.py), and this
    renders the page from templates/api/docs.html.
    """

    def render_page(self, request: HttpRequest, api, **kwargs: Any) -> HttpResponse:
        settings = {**self.settings, "url": self.get_openapi_url(api, kwargs)}
        return render(request, "api/docs.html", {"api": api, "swagger_settings": settings})
