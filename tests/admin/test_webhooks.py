"""Webhook endpoints in the admin: per client, the delivery log, why disabled, re-send."""

import re

import pytest
from django.test import override_settings
from django.utils import timezone

from reviewapp.webhooks.models import Delivery, Endpoint
from tests.webhooks.helpers import api_client, subscribe

pytestmark = pytest.mark.django_db

ENDPOINTS = "/admin/webhooks/endpoint/"
DELIVERIES = "/admin/webhooks/delivery/"
# The inline's management form, empty: no delivery rows are edited from the endpoint page.
INLINE = {
    "deliveries-TOTAL_FORMS": "0",
    "deliveries-INITIAL_FORMS": "0",
    "deliveries-MIN_NUM_FORMS": "0",
    "deliveries-MAX_NUM_FORMS": "0",
}
SECRET = re.compile(r'class="secret-once webhook-secret">([^<]+)<')


def add(client, api, url="http://127.0.0.1:8999/hook"):
    return client.post(
        f"{ENDPOINTS}add/",
        {"client": api.pk, "url": url, "events": ["proposal.decided"], "description": "", **INLINE},
    )


def test_adding_an_endpoint_shows_its_secret_once_and_never_stores_it(admin_client_ada):
    agent, _ = api_client()
    response = add(admin_client_ada, agent)
    assert response.status_code == 200, response.content.decode()[:2000]
    assert "no-store" in response["Cache-Control"]
    secret = SECRET.search(response.content.decode()).group(1)
    endpoint = Endpoint.objects.get()
    assert secret == endpoint.secret_text()
    assert secret not in str(Endpoint.objects.values().get())
    assert secret not in admin_client_ada.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()


@override_settings(REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False)
def test_the_admin_refuses_a_private_address_like_the_api(admin_client_ada):
    agent, _ = api_client()
    response = add(admin_client_ada, agent, url="https://192.168.1.10/hook")
    assert response.status_code == 200
    assert "192.168.1.10 is a private or reserved address" in response.content.decode()
    assert not Endpoint.objects.exists()


@override_settings(REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False)
def test_the_admin_refuses_a_nat64_form_of_the_metadata_address(admin_client_ada):
    agent, _ = api_client()
    response = add(admin_client_ada, agent, url="https://[64:ff9b::a9fe:a9fe]/hook")
    assert response.status_code == 200
    assert "carrying 169.254.169.254, and 169.254.169.254 is a link-local address" in (
        response.content.decode()
    )
    assert not Endpoint.objects.exists()


def test_the_endpoint_page_shows_its_delivery_log(admin_client_ada):
    agent, _ = api_client()
    endpoint, _ = subscribe(agent, "http://127.0.0.1:8999/hook")
    Delivery.objects.create(
        endpoint=endpoint,
        webhook_id="msg_logged",
        event_type="proposal.decided",
        body="{}",
        attempts=3,
        last_status_code=502,
        last_error="HTTP 502: bad gateway",
        next_attempt_at=timezone.now(),
    )
    page = admin_client_ada.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()
    for shown in ("msg_logged", "HTTP 502: bad gateway", "pending", "3"):
        assert shown in page


def test_the_list_shows_why_an_endpoint_was_disabled_and_filters_by_client(admin_client_ada):
    agent, _ = api_client()
    endpoint, _ = subscribe(agent, "http://127.0.0.1:8999/hook")
    Endpoint.objects.filter(pk=endpoint.pk).update(
        disabled_at=timezone.now(), disabled_reason="the receiver answered 410 Gone"
    )
    page = admin_client_ada.get(ENDPOINTS, {"client__id__exact": agent.pk}).content.decode()
    assert "the receiver answered 410 Gone" in page


def test_resend_makes_a_failed_delivery_due_now_with_the_same_id(
    admin_client_ada, django_capture_on_commit_callbacks
):
    agent, _ = api_client()
    endpoint, _ = subscribe(agent, "http://127.0.0.1:8999/hook")
    delivery = Delivery.objects.create(
        endpoint=endpoint,
        webhook_id="msg_again",
        event_type="proposal.decided",
        body="{}",
        status=Delivery.Status.FAILED,
        attempts=11,
    )
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_ada.post(
            DELIVERIES, {"action": "resend", "_selected_action": [delivery.pk]}
        )
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.webhook_id == "msg_again"
    assert delivery.next_attempt_at <= timezone.now()
    assert len(callbacks) == 1  # the send is queued after commit


def test_the_delivery_log_cannot_be_edited(admin_client_ada):
    agent, _ = api_client()
    endpoint, _ = subscribe(agent, "http://127.0.0.1:8999/hook")
    delivery = Delivery.objects.create(
        endpoint=endpoint, webhook_id="msg_fixed", event_type="proposal.decided", body="{}"
    )
    response = admin_client_ada.post(f"{DELIVERIES}{delivery.pk}/change/", {"status": "delivered"})
    assert response.status_code == 403
    assert Delivery.objects.get().status == "pending"
