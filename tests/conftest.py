import os
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from reviewapp.celery import app as celery_app
from tests.core.openai_stub import OpenAIStub
from tests.factories import ReviewerFactory, UserFactory
from tests.support.worker import WorkerProcess

CLIENT_SRC = Path(__file__).resolve().parents[1] / "clients" / "python" / "src"

# Hypothesis times each example and each draw by the wall clock; beside three other
# test processes on a loaded machine that is a flaky verdict on speed, not behaviour
# (benchmarks/ measures speed). Every example still runs and every assertion holds.
hypothesis_settings.register_profile(
    "suite", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("suite")


def pytest_configure(config):
    # pytest's `pythonpath` reaches this process only. The processes tests start
    # (manage.py, Celery workers, the offline verifier) import the client package,
    # which the server imports the verifier from, from the same source, installed or not.
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(CLIENT_SRC), inherited)))


# Fixtures from plugins that start something a fast lane leaves out, and the mark each
# gives; our own fixtures say theirs with @marks (below).
PLUGIN_FIXTURE_MARKS = {"live_server": ("live_server",)}


def marks(*names: str):
    """Every test that uses the decorated fixture, directly or not, gets these marks."""

    def decorate(function):
        function.test_marks = names
        return function

    return decorate


def shared_by_module(function):
    """A module-scoped fixture that is expensive to start (a browser, a server, a venv):
    the tests of a module that use it run in one xdist process (`--dist loadgroup`),
    so it starts once per module, not once per process."""
    function.shared_by_module = True
    return function


def pytest_itemcollected(item):
    """Mark each test by the fixtures it uses, so no test that starts a worker, a browser
    or a server escapes `-m "not worker and not browser"` by missing a hand-written mark;
    and group the tests that share an expensive module fixture (`shared_by_module`)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    found: set[str] = set()
    shared = False
    for name in item.fixturenames:
        found.update(PLUGIN_FIXTURE_MARKS.get(name, ()))
        for fixturedef in info.name2fixturedefs.get(name, ()):
            found.update(getattr(fixturedef.func, "test_marks", ()))
            shared = shared or getattr(fixturedef.func, "shared_by_module", False)
    for name in sorted(found - {mark.name for mark in item.iter_markers()}):
        item.add_marker(name)
    if shared and item.get_closest_marker("xdist_group") is None:
        item.add_marker(pytest.mark.xdist_group(item.module.__name__))


# The slowest tests on PostgreSQL and Redis (pytest --durations), longest first: each
# starts a stack of its own (workers, servers, a `make run`). Under `--dist loadgroup` the
# xdist processes take the shared-fixture groups first, then each test in collection order:
# one of these taken last would run on alone after the rest of the suite has finished.
SLOWEST_FIRST = (
    "tests/benchmarks/test_runs.py::test_the_benchmark_runs_and_prints_its_figures[inbox]",
    "tests/benchmarks/test_runs.py::test_the_benchmark_runs_and_prints_its_figures[notif",
    "tests/benchmarks/test_runs.py::test_the_benchmark_runs_and_prints_its_figures[mcp]",
    "tests/benchmarks/test_runs.py::test_the_benchmark_runs_and_prints_its_figures[llm_pipel",
    "tests/benchmarks/test_runs.py::test_the_benchmark_runs_and_prints_its_figures[pipeline]",
    "tests/benchmarks/test_runs.py::test_the_benchmark_runs_and_prints_its_figures[embedded",
    "tests/test_rundev.py",
    "tests/review/test_embedded_default.py",
    "tests/benchmarks/test_runs.py",
)


@pytest.hookimpl(trylast=True)  # after pytest-django's, which puts transactional tests last
def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        if {"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())):
            # Ahead of tests that use the database as migrated, its flush would empty it.
            return len(SLOWEST_FIRST)
        return next(
            (i for i, prefix in enumerate(SLOWEST_FIRST) if item.nodeid.startswith(prefix)),
            len(SLOWEST_FIRST),
        )

    items.sort(key=rank)  # stable: everything else keeps its order


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_keepdb,
    django_db_modify_db_settings,  # xdist's suffix on the database's name
):
    """pytest-django's, with the database copied from a migrated template when there is one
    (tests/support/db_template.py)."""
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _get_databases_for_setup

    from tests.support import db_template

    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    verbosity = request.config.option.verbose

    def set_up(keepdb: bool):
        return setup_databases(
            verbosity=verbosity,
            interactive=False,
            aliases=aliases,
            serialized_aliases=serialized_aliases,
            keepdb=keepdb,
        )

    with django_db_blocker.unblock():
        config = set_up(True) if django_db_keepdb else db_template.set_up(set_up)
    yield
    if not django_db_keepdb:
        with django_db_blocker.unblock():
            try:
                db_template.close_other_sessions()
                teardown_databases(config, verbosity=verbosity)
            except Exception as exc:  # as pytest-django: the run's verdict stands
                request.node.warn(
                    pytest.PytestWarning(f"Error when trying to teardown test databases: {exc!r}")
                )


@pytest.fixture
def openai_server():
    """A real OpenAI-compatible HTTP server on loopback, driven by a script."""
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def llm_loop(transactional_db, monkeypatch):
    """This process's LLM loop, as a worker process has it: the LLM lenses a proposal's
    task hands over are judged on it and recorded, the final step run, on its recorder
    thread (``tests.review.helpers.evaluate_in_process``)."""
    from reviewapp.review.evaluation import llm_loop as loop_module
    from tests.support.llm_loop import running_loop

    with running_loop() as runtime:
        monkeypatch.setattr(loop_module, "_runtime", runtime)
        yield runtime


def _purge_broker() -> None:
    # Messages left by earlier tests name rows that no longer exist; a fresh
    # worker should not spend its time on them.
    celery_app.control.purge()


@pytest.fixture
@marks("worker")
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
    for worker in started:  # all at once: each takes seconds to finish and exit
        worker.signal_stop()
    for worker in started:
        worker.wait_stopped()


@pytest.fixture
def worker(start_worker):
    return start_worker()


@pytest.fixture
def rate_window(time_machine):
    """The clock moved to the start of the next rate-limit window, and ticking on from there:
    every request a test makes falls in that one window, however slow the machine, and the
    test never sleeps through the rest of the current one."""
    from reviewapp.review.rate_limit import WINDOW_SECONDS

    now = time.time()
    time_machine.move_to(now - now % WINDOW_SECONDS + WINDOW_SECONDS, tick=True)


@pytest.fixture
def fast_polls(settings):
    """Pages that refresh themselves do so every second (5 s and 2 s by default), for a
    browser test that waits for a refresh. Only there: elsewhere a page swapped under a
    test every second would pull elements from under its clicks."""
    settings.REVIEWAPP_INBOX_POLL_SECONDS = 1
    settings.REVIEWAPP_PROGRESS_POLL_SECONDS = 1
    return settings


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


CHROMIUM = "/usr/bin/chromium"  # Debian's; a browser is never downloaded
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
@marks("browser")
@shared_by_module
def chromium():
    """Headless Chromium for one test module.

    Not one for the whole run: Playwright's sync API keeps an event loop running in
    this thread while it is started, and the tests after it that call asyncio.run()
    (the async client, MCP) would fail."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls a
    # browser test makes itself are still synchronous and safe.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()
    if previous is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture
def open_as(chromium, live_server):
    """open_as(user, path, **context_options) -> a page signed in as `user`.

    Uncaught page errors collect on `page.errors`.
    """
    contexts = []

    def open_page(user, path="/", **options):
        client = Client()
        client.force_login(user)
        options.setdefault("viewport", {"width": 1280, "height": 800})
        context = chromium.new_context(base_url=live_server.url, **options)
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": live_server.url,
                }
            ]
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.errors = []
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        page.goto(path)
        return page

    yield open_page
    for context in contexts:
        context.close()


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
