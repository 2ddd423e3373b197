"""Channels in the admin: a chat room's URL passes the webhook address guard."""

import pytest
from django.contrib.auth.models import Group

from reviewapp.notifications.models import Channel

pytestmark = pytest.mark.django_db

ADD = "/admin/notifications/channel/add/"


def _post(client, **fields):
    group = Group.objects.create(name="team")
    data = {"name": "room", "kind": "chat", "group": group.pk, "events": ["assigned"],
            "style": "slack", "digest_minutes": 0, "active": "on", **fields}  # fmt: skip
    return client.post(ADD, data)


def test_a_chat_room_on_a_private_address_is_refused(admin_client, settings):
    settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL = False

    response = _post(admin_client, url="https://10.0.0.5/hooks/x")

    assert response.status_code == 200
    assert "webhooks go to public addresses only" in response.content.decode()
    assert not Channel.objects.exists()


def test_a_chat_room_on_an_allowed_address_is_saved(admin_client, settings):
    settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL = True

    response = _post(admin_client, url="http://127.0.0.1:9/hooks/x")

    assert response.status_code == 302
    assert Channel.objects.get().events == ["assigned"]


def test_an_email_channel_takes_no_url(admin_client):
    response = _post(admin_client, kind="email", url="http://127.0.0.1:9/x")

    assert "leave the URL empty" in response.content.decode()
