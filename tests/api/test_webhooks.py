"""Webhook subscriptions over the API (reviewapp/api/webhooks.py), with real token auth."""

import pytest
from django.test import override_settings

from reviewapp.webhooks.models import Delivery, Endpoint

from .conftest import Api, api_with

pytestmark = pytest.mark.django_db

HOOK = "http://127.0.0.1:8999/hook"


def register(api: Api, url=HOOK, events=("proposal.decided",)):
    return api.post("/api/webhooks", {"url": url, "events": list(events)})


def test_registering_answers_201_with_a_secret_shown_once(api):
    response = register(api)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["secret"].startswith("whsec_")
    assert body["events"] == ["proposal.decided"] and body["active"] is True
    detail = api.get(f"/api/webhooks/{body['id']}").json()
    assert "secret" not in detail
    assert body["secret"] not in str(Endpoint.objects.values().get())  # never stored


def test_any_token_of_the_client_may_manage_its_webhooks():
    api = api_with("judge")  # no particular scope needed
    assert register(api).status_code == 201


def test_a_client_lists_only_its_own_endpoints(api):
    register(api)
    other = api_with("read")
    register(other, url="http://127.0.0.1:8999/other")
    urls = [e["url"] for e in api.get("/api/webhooks").json()["items"]]
    assert urls == [HOOK]


def test_another_clients_endpoint_is_not_found_nor_deletable(api):
    theirs = register(api_with("read")).json()["id"]
    assert api.get(f"/api/webhooks/{theirs}").status_code == 404
    assert api.client.delete(f"/api/webhooks/{theirs}", headers=api.headers).status_code == 404
    assert api.post(f"/api/webhooks/{theirs}/test", {}).status_code == 404
    assert Endpoint.objects.filter(pk=theirs).exists()


def test_delete_removes_the_endpoint(api):
    mine = register(api).json()["id"]
    assert api.client.delete(f"/api/webhooks/{mine}", headers=api.headers).status_code == 204
    assert api.get(f"/api/webhooks/{mine}").status_code == 404


def test_test_queues_a_ping_delivery(api):
    mine = register(api).json()["id"]
    response = api.post(f"/api/webhooks/{mine}/test", {})
    assert response.status_code == 202
    delivery = Delivery.objects.get()
    assert delivery.webhook_id == response.json()["delivery"]
    assert delivery.event_type == "webhook.ping"


def test_an_unknown_event_is_a_422_naming_the_field(api):
    response = register(api, events=["proposal.exploded"])
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"][-1] == "events"
    assert "unknown event proposal.exploded" in error["msg"]
    assert not Endpoint.objects.exists()


def test_no_events_is_a_422(api):
    assert register(api, events=[]).status_code == 422


def assert_url_refused(api, url, problem):
    response = register(api, url=url)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"][-1] == "url"
    assert problem in error["msg"]
    assert not Endpoint.objects.exists()


@override_settings(REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False)
@pytest.mark.parametrize(
    "url, problem",
    [
        ("http://hooks.example.com/x", "must start with https://"),
        ("https://10.1.2.3/hook", "10.1.2.3 is a private or reserved address"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://127.0.0.1/hook", "loopback"),
        ("https://localhost/hook", "loopback"),
        ("https://[::1]/hook", "loopback"),
    ],
)
def test_in_production_only_https_to_public_addresses_is_accepted(api, url, problem):
    assert_url_refused(api, url, problem)


@override_settings(REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False)
@pytest.mark.parametrize(
    "url, problem",
    [
        ("https://[::127.0.0.1]/", "IPv4-compatible address (::/96) carrying 127.0.0.1"),
        ("https://[64:ff9b::7f00:1]/", "NAT64 address (64:ff9b::/96) carrying 127.0.0.1"),
        ("https://[64:ff9b::a9fe:a9fe]/", "169.254.169.254, and 169.254.169.254 is a link-local"),
        ("https://[64:ff9b:1::a00:1]/", "local-use NAT64 address (64:ff9b:1::/48)"),
        ("https://[2002:7f00:1::]/", "6to4 address (2002::/16) carrying 127.0.0.1"),
        ("https://[2001:0:808:808::80ff:fffe]/", "Teredo address (2001::/32) carrying 127.0.0.1"),
    ],
)
def test_in_production_an_ipv6_form_of_an_internal_address_is_a_422_naming_it(api, url, problem):
    assert_url_refused(api, url, problem)


@override_settings(
    REVIEWAPP_WEBHOOK_ALLOW_LOCAL=False, REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS=["10.1.0.0/16"]
)
def test_an_allowed_private_range_can_be_registered(api):
    assert register(api, url="https://10.1.2.3/hook").status_code == 201


def test_a_browser_session_cannot_own_webhooks(client, staff_user):
    client.force_login(staff_user)
    response = client.get("/api/webhooks")
    assert response.status_code == 403
    assert "bearer token" in response.json()["detail"]


def test_without_a_token_it_is_401(client):
    assert client.get("/api/webhooks").status_code == 401
