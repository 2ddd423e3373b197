"""The API keeps its promises when the broker or the cache is down."""

import logging

import pytest
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


def _redis_down(settings, tmp_path):
    # The discard port: nothing listens, so every count is a refused connection.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        }
    }


def _counter_file_unwritable(settings, tmp_path):
    # Without Redis the count lives in a SQLite file under VAR_DIR: make it impossible.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    (tmp_path / "a-file").write_text("")
    settings.VAR_DIR = tmp_path / "a-file" / "var"


@pytest.mark.parametrize(
    "outage", [_redis_down, _counter_file_unwritable], ids=lambda outage: outage.__name__
)
def test_requests_are_served_when_the_rate_limit_counter_is_down(
    api, panel, settings, tmp_path, caplog, outage
):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 1
    outage(settings, tmp_path)
    with caplog.at_level(logging.WARNING, logger="reviewapp.review.rate_limit"):
        first = api.post("/api/proposals", {**BODY, "panel": panel.name})
        second = api.post("/api/proposals", {**BODY, "panel": panel.name, "external_ref": "o-2"})
    # Past the limit of one, yet served: the limit fails open when it cannot count.
    assert (first.status_code, second.status_code) == (202, 202)
    warnings = [r.getMessage() for r in caplog.records if r.name == "reviewapp.review.rate_limit"]
    assert warnings == ["rate limit not counted: the counter is unavailable"] * 2


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
