import time
from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp.core.endpoint_control import Outcome
from reviewapp.review.evaluation.endpoint_limits import DatabaseLimits, endpoint_key
from reviewapp.review.models import Escalation, Lens
from tests.api.conftest import evaluated
from tests.conftest import wait_for
from tests.factories import LensFactory


def _healthz_once(client, until, what: str):
    """/healthz once `until(response)`: a worker busy beside a loaded suite may miss one
    1 s ping, and answers the next."""
    answers = []
    wait_for(
        lambda: answers.append(client.get("/healthz")) or until(answers[-1]),
        timeout=20,
        message=f"/healthz never {what} within 20 s",
    )
    return answers[-1]


def _healthz_ok(client):
    return _healthz_once(client, lambda response: response.status_code == 200, "said ok")


def _healthz_with_a_worker_answering(client):
    return _healthz_once(
        client, lambda response: response.json()["worker"]["workers"], "heard a worker"
    )


@pytest.mark.worker
def test_healthz_is_ok_when_database_broker_and_worker_answer(client, worker):
    response = _healthz_ok(client)
    body = response.json()
    assert body["database"]["ok"] and body["broker"]["ok"] and body["worker"]["ok"]
    assert body["worker"]["workers"]
    assert body["worker"]["queues"]["celery"]


@pytest.mark.worker
def test_healthz_reports_the_pipeline_queue_nobody_consumes(client, start_worker):
    start_worker(queues="elsewhere")
    response = _healthz_with_a_worker_answering(client)
    assert response.status_code == 503
    assert response.json()["worker"]["error"] == "no worker consumes the celery queue"


@pytest.mark.worker
def test_healthz_reports_a_stopped_worker_as_down(client, worker):
    _healthz_ok(client)
    worker.stop()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["worker"]["ok"] is False
    assert response.json()["database"]["ok"] is True


@pytest.mark.django_db
def test_healthz_shows_each_llm_endpoint_with_its_limit_waiting_calls_and_recent_429s(
    client, settings
):
    settings.CACHE_URL = settings.CELERY_BROKER_URL = "memory://"  # the database store
    url = "http://127.0.0.1:9/v1"
    LensFactory(backend=Lens.Backend.LLM, base_url=url, model="m", max_concurrent_calls=10)
    LensFactory(backend=Lens.Backend.LLM, base_url=url, model="m", max_concurrent_calls=4)
    limits = DatabaseLimits()
    options = {"max_concurrent": 10, "per_minute": 10_000, "lease_seconds": 60}
    held, _ = limits.try_acquire(endpoint_key(url), count=10, **options)
    refused = Outcome(refused=True, sent_at=time.time() - 0.1, retry_after=None)
    limits.try_acquire(
        endpoint_key(url), count=0, release=held[:1], outcomes=[refused], waiting=2, **options
    )
    body = client.get("/healthz").json()
    assert body["llm_endpoints"] == [
        {
            "base_url": url,
            "maximum": 10,
            "effective_limit": 7,
            "in_flight": 9,
            "waiting": 2,
            "refusals_recent": 1,
            "refusal_minutes": 5,
            "held_for": 0,
            "throttling": True,
        }
    ]


@pytest.mark.django_db
def test_healthz_counts_review_deadlines_more_than_a_minute_late_as_degraded(client):
    proposal = evaluated("Ship it.", requires_sign_off=True, review_deadline=timedelta(hours=1))
    escalation = Escalation.objects.get(proposal=proposal)
    assert client.get("/healthz").json()["deadlines"] == {"ok": True, "overdue": 0}

    Escalation.objects.filter(pk=escalation.pk).update(
        due_at=timezone.now() - timedelta(seconds=61)
    )
    deadlines = client.get("/healthz").json()["deadlines"]

    assert deadlines["ok"] is False and deadlines["overdue"] == 1
    assert "1 review deadlines not acted on" in deadlines["error"]


@pytest.mark.django_db
def test_healthz_counts_a_ledger_entry_waiting_past_the_bound_for_its_index_as_degraded(
    client, time_machine
):
    evaluated("Ship it.")  # its entries wait for the sequencer: the test never commits
    sequencer = client.get("/healthz").json()["sequencer"]
    assert sequencer["ok"] is True and sequencer["waiting"] == 2

    time_machine.move_to(timezone.now() + timedelta(seconds=61))
    response = client.get("/healthz")

    assert response.json()["status"] == "degraded"  # 503 only for a missing worker here
    sequencer = response.json()["sequencer"]
    assert (
        sequencer["ok"] is False and "2 ledger entries wait for their index" in (sequencer["error"])
    )


@pytest.mark.django_db
def test_the_admin_shows_the_sequencer_alert_above_the_ledger_entries(admin_client, time_machine):
    evaluated("Ship it.")
    time_machine.move_to(timezone.now() + timedelta(seconds=61))

    page = admin_client.get("/admin/ledger/ledgerentry/?sequenced=no").content.decode()

    assert "Sequencer alert: 2 ledger entries wait for their index" in page
