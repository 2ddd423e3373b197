"""A personal token's webhooks: what its reviewer may see, and nothing once they may not."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.review.services.clients import api_client_create
from reviewapp.webhooks.events import webhook_decided_watchers
from reviewapp.webhooks.models import Delivery
from tests.factories import ReviewerFactory
from tests.webhooks.helpers import api_client, submitted_and_decided, subscribe

pytestmark = pytest.mark.django_db


@pytest.fixture
def ann_subscribed():
    ann = ReviewerFactory(username="ann")
    client, _ = api_client_create(name="ann/laptop", scopes=["review"], user=ann)
    subscribe(client, "http://127.0.0.1:9/hook", events=["proposal.decided"])
    return ann


def test_a_reviewers_endpoint_hears_of_another_clients_decision(ann_subscribed):
    other, _ = api_client()

    submitted_and_decided(other)

    assert Delivery.objects.filter(endpoint__client__user=ann_subscribed).count() == 1


def test_a_deactivated_reviewers_endpoint_hears_nothing(ann_subscribed):
    ann_subscribed.is_active = False
    ann_subscribed.save()
    other, _ = api_client()

    submitted_and_decided(other)

    assert not Delivery.objects.filter(endpoint__client__user=ann_subscribed).exists()


def test_an_endpoint_of_someone_removed_from_the_reviewers_hears_nothing(ann_subscribed):
    ann_subscribed.groups.clear()
    other, _ = api_client()

    submitted_and_decided(other)

    assert not Delivery.objects.filter(endpoint__client__user=ann_subscribed).exists()


def test_who_hears_an_event_costs_the_same_queries_however_many_reviewers_subscribe():
    # Each personal endpoint asked its user's groups on its own query, inside the decision's
    # transaction: 10 tokens x 20 endpoints per reviewer made every decision that much slower.
    other, _ = api_client()
    proposal = submitted_and_decided(other)

    def watchers_read() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            heard = webhook_decided_watchers(proposal=proposal)
        return len(heard), len(queries)

    def subscribed_reviewer(name: str) -> None:
        client, _ = api_client_create(
            name=f"{name}/laptop", scopes=["review"], user=ReviewerFactory(username=name)
        )
        subscribe(client, "http://127.0.0.1:9/hook", events=["proposal.decided"])

    subscribed_reviewer("ann")
    one, one_queries = watchers_read()
    for name in ("ben", "cal", "dee", "eve"):
        subscribed_reviewer(name)
    five, five_queries = watchers_read()

    assert (one, five) == (1, 5)
    assert five_queries == one_queries
