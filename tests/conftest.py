import time

import pytest
from django.contrib.auth.models import Group

from reviewapp.celery import app as celery_app
from tests.core.openai_stub import OpenAIStub
from tests.factories import ReviewerFactory, UserFactory
from tests.support.worker import WorkerProcess


@pytest.fixture
def openai_server():
    """A real OpenAI-compatible HTTP server on loopback, driven by a script."""
    with OpenAIStub() as server:
        yield server


def _purge_broker() -> None:
    # Messages left by earlier tests name rows that no longer exist; a fresh
    # worker should not spend its time on them.
    celery_app.control.purge()


@pytest.fixture
def start_worker(transactional_db):
    """Start real Celery worker processes against the test database and broker."""
    started: list[WorkerProcess] = []

    def start(**kwargs) -> WorkerProcess:
        worker = WorkerProcess(**kwargs)
        started.append(worker)
        worker.wait_ready()
        return worker

    _purge_broker()
    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def worker(start_worker):
    return start_worker()


@pytest.fixture
def reviewer(db):
    return ReviewerFactory(username="rita")


@pytest.fixture
def second_reviewer(db):
    return ReviewerFactory(username="sam")


@pytest.fixture
def staff_user(db):
    return UserFactory(username="stella", is_staff=True)


@pytest.fixture
def outsider(db):
    """Signed in, but neither staff nor in the reviewers group."""
    Group.objects.get_or_create(name="reviewers")
    return UserFactory(username="olga")


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.2, message: str = ""):
    """Poll until predicate() is truthy; fail with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(message or f"condition not met within {timeout}s")


def pytest_sessionfinish(session, exitstatus):
    """Remove this run's private directory (database file, broker, keys)."""
    import shutil

    from django.conf import settings

    if settings.VAR_DIR.name.startswith("run-"):
        shutil.rmtree(settings.VAR_DIR, ignore_errors=True)
