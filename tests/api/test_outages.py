"""The API keeps its promises when the broker or the cache is down."""

from kombu.exceptions import OperationalError

from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import Proposal

BODY = {"panel": None, "content": "Answer.", "external_ref": "outage-1"}


def test_a_submission_is_accepted_and_kept_when_the_broker_is_down(
    api, panel, monkeypatch, django_capture_on_commit_callbacks
):
    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(evaluate_proposal, "apply_async", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/proposals", {**BODY, "panel": panel.name})
    assert response.status_code == 202
    stored = Proposal.objects.get(pk=response.json()["id"])
    assert stored.status == Proposal.Status.QUEUED  # the sweeper will enqueue it


def test_requests_are_served_when_the_rate_limit_cache_is_down(api, panel, monkeypatch):
    from django.core.cache import cache

    def cache_down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(cache, "add", cache_down)
    response = api.post("/api/proposals", {**BODY, "panel": panel.name})
    assert response.status_code == 202


def test_a_database_outage_is_answered_503_with_how_to_retry(api, panel, monkeypatch):
    from django.db import OperationalError

    def database_down(token):
        raise OperationalError("connection to server at 127.0.0.1, port 5432 failed")

    monkeypatch.setattr("reviewapp.api.auth.api_client_for_token", database_down)
    response = api.post("/api/proposals", {**BODY, "panel": panel.name})
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert "external_ref" in response.json()["detail"]
    assert not Proposal.objects.exists()
