import pytest


@pytest.mark.worker
def test_healthz_is_ok_when_database_broker_and_worker_answer(client, worker):
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["database"]["ok"] and body["broker"]["ok"] and body["worker"]["ok"]
    assert body["worker"]["workers"]
    assert body["worker"]["queues"]["celery"]


@pytest.mark.worker
def test_healthz_reports_the_pipeline_queue_nobody_consumes(client, start_worker):
    start_worker(queues="elsewhere")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["worker"]["error"] == "no worker consumes the celery queue"


@pytest.mark.worker
def test_healthz_reports_a_stopped_worker_as_down(client, worker):
    assert client.get("/healthz").status_code == 200
    worker.stop()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["worker"]["ok"] is False
    assert response.json()["database"]["ok"] is True
