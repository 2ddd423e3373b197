"""Whether a task waits in the broker's queue: the real Redis broker, and the embedded one."""

import socket
import threading
import time

import pytest

from reviewapp.celery import app as celery_app
from reviewapp.review.evaluation import queue_peek
from reviewapp.review.evaluation.tasks import (
    _deliver_llm_answers,
    broker_backlog,
    finalize_proposal,
)
from tests.support.embedded_broker import embedded_connection, embedded_options


@pytest.fixture
def empty_queue():
    """The test settings' own broker (Redis in CI, the embedded one by default), emptied."""
    celery_app.control.purge()
    yield
    celery_app.control.purge()


@pytest.fixture(autouse=True)
def forget_unreachable_brokers(monkeypatch):
    # A broker an earlier test found unreachable is not asked for a while: start clean.
    monkeypatch.setattr(queue_peek, "_unreachable_until", {})


def test_an_empty_queue_has_no_task_waiting(empty_queue):
    assert queue_peek.task_waiting() is False


def test_a_task_sent_is_seen_waiting(empty_queue):
    finalize_proposal.delay(0)
    assert queue_peek.task_waiting() is True


def test_answers_sent_on_at_low_priority_are_not_seen_as_a_waiting_task(empty_queue, settings):
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs Redis (CELERY_BROKER_URL): the embedded broker has no priorities")
    _deliver_llm_answers(0, [])
    assert broker_backlog() == 1  # it is in the queue, for the sweeper's count
    assert queue_peek.task_waiting() is False


def test_an_unreachable_broker_counts_as_no_task_waiting(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"  # the discard port: nothing listens
    assert queue_peek.task_waiting() is False


def test_a_broker_that_does_not_answer_is_not_asked_again_for_a_while(settings):
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    accepted = []

    def accept():
        while True:
            try:
                accepted.append(silent.accept()[0])
            except OSError:  # closed: the test is over
                return

    threading.Thread(target=accept, daemon=True).start()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
    try:
        assert queue_peek.task_waiting() is False  # after its timeout
        started = time.monotonic()
        assert queue_peek.task_waiting() is False
        assert time.monotonic() - started < queue_peek.TIMEOUT_SECONDS / 2
        assert len(accepted) == 1
    finally:
        silent.close()
        for conn in accepted:
            conn.close()


def _embedded(settings, folder):
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = embedded_options(folder)
    connection = embedded_connection(folder)
    # Open, as a worker's is when it peeks: its channel has made the broker's folders.
    connection.default_channel  # noqa: B018
    return connection


def test_the_embedded_broker_shows_a_message_in_the_default_queue_as_waiting(settings, tmp_path):
    with _embedded(settings, tmp_path) as conn:
        assert queue_peek.task_waiting() is False
        with conn.SimpleQueue(celery_app.conf.task_default_queue) as queue:
            queue.put({"task": "any"})
            assert queue_peek.task_waiting() is True
            queue.get(timeout=5).ack()
        assert queue_peek.task_waiting() is False


def test_the_embedded_broker_ignores_other_queues(settings, tmp_path):
    with _embedded(settings, tmp_path) as conn, conn.SimpleQueue("elsewhere") as queue:
        queue.put({"task": "any"})
        assert queue_peek.task_waiting() is False


def test_an_unreachable_embedded_broker_does_not_hide_the_tasks_of_another(settings, tmp_path):
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_out": str(tmp_path / "gone")}
    assert queue_peek.task_waiting() is False  # no such folder: not asked again for a while
    (tmp_path / "live").mkdir()
    with _embedded(settings, tmp_path / "live") as conn:
        with conn.SimpleQueue(celery_app.conf.task_default_queue) as queue:
            queue.put({"task": "any"})
            assert queue_peek.task_waiting() is True
            queue.get(timeout=5).ack()
