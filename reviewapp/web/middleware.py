"""Answer a database outage on an HTML page with a 503 that says what to do."""

from django.http import HttpResponse
from django.template.loader import render_to_string

from reviewapp.outages import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS


class DatabaseUnavailableMiddleware:
    """A restart or failover of the database is transient; Django's bare 500 page would say nothing.

    The page is rendered without the request, so that neither the session nor
    the user is looked up in the database that just failed. The API answers
    its own JSON 503 (reviewapp.api) before this is reached.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, DATABASE_UNAVAILABLE):
            return None
        response = HttpResponse(render_to_string("503.html"), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
