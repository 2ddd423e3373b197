"""Webhook subscriptions: a client registers, lists, tests and removes its own endpoints."""

from datetime import datetime

from django.db import transaction
from django.http import Http404
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from reviewapp.webhooks.events import webhook_record_ping
from reviewapp.webhooks.models import Endpoint, Event
from reviewapp.webhooks.services import EndpointRefused, endpoint_create

from .auth import ApiAuth
from .parsing import BODY_LOC, invalid
from .schemas import ObjectId, Strict, errors

router = Router(tags=["webhooks"])


class WebhookIn(Strict):
    url: str = Field(max_length=2000, examples=["https://agents.example.com/reviewapp-hook"])
    events: list[str] = Field(
        max_length=len(Event.values),
        examples=[["proposal.decided", "proposal.escalated"]],
        description=f"Any of: {', '.join(Event.values)}",
    )
    description: str = Field("", max_length=200)


class WebhookOut(Schema):
    id: int
    url: str
    events: list[str]
    description: str
    active: bool
    disabled_reason: str
    created_at: datetime


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(description="Shown only in this answer: keep it to verify deliveries.")


class WebhookListOut(Schema):
    items: list[WebhookOut]


class PingOut(Schema):
    delivery: str = Field(description="The `webhook-id` the ping is sent with.")


def _out(endpoint: Endpoint) -> dict:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "events": endpoint.events,
        "description": endpoint.description,
        "active": endpoint.active,
        "disabled_reason": endpoint.disabled_reason,
        "created_at": endpoint.created_at,
    }


def _client_of(request):
    # ApiAuth(sessions=False): the caller is always a client, never a session.
    return request.auth.client


def _own(request, endpoint_id: int) -> Endpoint:
    endpoint = Endpoint.objects.filter(pk=endpoint_id, client=_client_of(request)).first()
    if endpoint is None:  # another client's endpoint is not found either
        raise Http404("no such webhook")
    return endpoint


@router.post(
    "/webhooks",
    auth=ApiAuth(sessions=False),
    response={201: WebhookCreatedOut, **errors()},
    summary="Register a webhook endpoint",
    description="Any of the client's tokens may. The `secret` (`whsec_…`) verifies the "
    "Standard Webhooks signature of every delivery and is shown only here. Production "
    "accepts only https:// URLs on public addresses.",
)
def webhook_create(request, payload: WebhookIn):
    try:
        endpoint, secret = endpoint_create(
            client=_client_of(request),
            url=payload.url,
            events=payload.events,
            description=payload.description,
        )
    except EndpointRefused as exc:
        raise invalid([*BODY_LOC, exc.field], str(exc), "webhook_refused") from exc
    return Status(201, {**_out(endpoint), "secret": secret})


@router.get(
    "/webhooks",
    auth=ApiAuth(sessions=False),
    response={200: WebhookListOut, **errors()},
    summary="List this client's webhook endpoints",
)
def webhook_list(request):
    endpoints = Endpoint.objects.filter(client=_client_of(request)).order_by("id")
    return {"items": [_out(e) for e in endpoints]}


@router.get(
    "/webhooks/{endpoint_id}",
    auth=ApiAuth(sessions=False),
    response={200: WebhookOut, **errors(404)},
    summary="One of this client's webhook endpoints",
)
def webhook_detail(request, endpoint_id: ObjectId):
    return _out(_own(request, endpoint_id))


@router.delete(
    "/webhooks/{endpoint_id}",
    auth=ApiAuth(sessions=False),
    response={204: None, **errors(404)},
    summary="Remove a webhook endpoint and its delivery log",
)
def webhook_delete(request, endpoint_id: ObjectId):
    _own(request, endpoint_id).delete()
    return Status(204, None)


@router.post(
    "/webhooks/{endpoint_id}/test",
    auth=ApiAuth(sessions=False),
    response={202: PingOut, **errors(404, 409)},
    summary="Send a `webhook.ping` event to the endpoint",
)
def webhook_test(request, endpoint_id: ObjectId):
    endpoint = _own(request, endpoint_id)
    if not endpoint.active:
        raise HttpError(409, f"this webhook is disabled: {endpoint.disabled_reason}")
    with transaction.atomic():
        delivery = webhook_record_ping(endpoint=endpoint)
    return Status(202, {"delivery": delivery.webhook_id})
