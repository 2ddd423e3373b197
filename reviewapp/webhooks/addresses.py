"""Where a webhook endpoint may point: the URL rules, and the address check of egress."""

from urllib.parse import urlsplit

from django.conf import settings

from reviewapp.core.webhooks import url_refusal
from reviewapp.egress.addresses import AddressRefused, address_policy, resolved_address


def endpoint_url_refusal(url: str) -> str | None:
    """Why `url` cannot be registered as a webhook endpoint, or None."""
    problem = url_refusal(url, allow_http=settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL)
    if problem:
        return problem
    parts = urlsplit(url)
    try:
        resolved_address(parts.hostname, parts.port or 443, address_policy())
    except AddressRefused as exc:
        allowed = "REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS"
        return f"{exc}; webhooks go to public addresses only (an operator may allow {allowed})"
    return None
