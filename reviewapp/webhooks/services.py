"""Registering, changing and removing webhook endpoints."""

import secrets

from django.db import transaction
from django.utils import timezone

from reviewapp.review.models import ApiClient

from .addresses import endpoint_url_refusal
from .models import Endpoint, Event

MAX_ENDPOINTS_PER_CLIENT = 20


class EndpointRefused(ValueError):
    """The endpoint cannot be registered as asked; `field` names the culprit."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def events_refusal(events: list[str]) -> str | None:
    if not events:
        return f"name at least one event of {', '.join(Event.values)}"
    unknown = sorted(set(events) - set(Event.values))
    if unknown:
        return f"unknown event {', '.join(unknown)}; choose from {', '.join(Event.values)}"
    return None


def endpoint_create(
    *, client: ApiClient, url: str, events: list[str], description: str = ""
) -> tuple[Endpoint, str]:
    """Register an endpoint; returns it with its secret, which is shown only this once."""
    url = url.strip()
    problem = endpoint_url_refusal(url)
    if problem:
        raise EndpointRefused("url", problem)
    problem = events_refusal(events)
    if problem:
        raise EndpointRefused("events", problem)
    with transaction.atomic():
        # Row lock on the client: two registrations at once cannot both pass the cap.
        ApiClient.objects.select_for_update().filter(pk=client.pk).first()
        if Endpoint.objects.filter(client=client).count() >= MAX_ENDPOINTS_PER_CLIENT:
            raise EndpointRefused(
                "url", f"a client may register at most {MAX_ENDPOINTS_PER_CLIENT} endpoints"
            )
        endpoint = Endpoint.objects.create(
            client=client,
            url=url,
            events=list(dict.fromkeys(events)),
            description=description.strip(),
            secret_salt=secrets.token_hex(16),
        )
    return endpoint, endpoint.secret_text()


def endpoint_rotate_secret(*, endpoint_id: int) -> str:
    """A new secret (a new salt); the old one stops verifying at once."""
    endpoint = Endpoint.objects.get(pk=endpoint_id)
    endpoint.secret_salt = secrets.token_hex(16)
    endpoint.save(update_fields=["secret_salt"])
    return endpoint.secret_text()


def endpoint_enable(*, endpoint_id: int) -> None:
    """Turn a disabled endpoint back on; its pending deliveries flow again."""
    Endpoint.objects.filter(pk=endpoint_id).update(
        disabled_at=None, disabled_reason="", consecutive_failures=0
    )


def endpoint_disable(*, endpoint_id: int, reason: str) -> None:
    Endpoint.objects.filter(pk=endpoint_id, disabled_at__isnull=True).update(
        disabled_at=timezone.now(), disabled_reason=reason[:300]
    )
