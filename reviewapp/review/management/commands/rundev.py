"""Run everything a local user needs: migrate, demo data, web server and the worker."""

import io
import os
import signal
import socket
import subprocess
import sys
import time

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from reviewapp.celery import app as celery_app
from reviewapp.review.models import Proposal
from reviewapp.startup import refuse_unless_ready

# How long the summary waits for the web server and the worker before it is printed anyway.
READY_WAIT_SECONDS = 60


def child_environment() -> dict[str, str]:
    """The children's environment, less the noise a local run expects.

    Celery's warning about running as root (a fresh machine or container often
    is root) is known to whoever typed `make run`; printed, it scrolls the
    address and the logins away.
    """
    environment = dict(os.environ)
    if os.geteuid() == 0:
        # By message: a category named here would have to import before Celery does.
        ignore_root = "ignore:You're running the worker with superuser privileges"
        environment["PYTHONWARNINGS"] = ",".join(
            filter(None, [os.environ.get("PYTHONWARNINGS"), ignore_root])
        )
    return environment


def worker_command(beat_schedule) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "reviewapp",
        "--quiet",  # no banner: the summary is what a local user reads
        "worker",
        "--beat",
        "--schedule",
        str(beat_schedule),
        "--loglevel",
        os.environ.get("LOG_LEVEL", "WARNING"),
        "--concurrency",
        str(settings.CELERY_WORKER_CONCURRENCY),
        "--hostname",
        "worker@%h",
    ]


def web_command(host: str, port: int) -> list[str]:
    """The same ASGI app as compose serves: pages, API and the MCP server at /mcp."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "reviewapp.asgi:application",
        "--host",
        host,
        "--port",
        str(port),
        "--log-level",
        os.environ.get("LOG_LEVEL", "WARNING").lower(),
    ]


def _serving(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _judging() -> bool:
    return Proposal.objects.filter(
        status__in=[Proposal.Status.QUEUED, Proposal.Status.EVALUATING]
    ).exists()


def _wait_until_ready(host: str, port: int, children) -> None:
    """Until the web server answers, the worker answers and the demo is judged (its
    lens errors are logged as it goes), so that the summary is the last thing shown."""
    deadline = time.monotonic() + READY_WAIT_SECONDS
    web_up = worker_up = False
    while time.monotonic() < deadline and all(child.poll() is None for child in children):
        web_up = web_up or _serving(host, port)
        worker_up = worker_up or bool(celery_app.control.ping(timeout=0.5))
        if web_up and worker_up and not _judging():
            return
        time.sleep(0.5)


class Command(BaseCommand):
    help = (
        "Migrate, load the demo, then run the web server and the worker (its LLM loop "
        "included) until Ctrl-C. Prints the address and the demo logins once both are up."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-demo", action="store_true", help="Skip loading demo data.")

    def handle(self, *args, host, port, no_demo, **options):
        if not settings.DEBUG:
            # Pages name their static files through the manifest this writes;
            # collected every start, so that a changed file is never served stale.
            call_command("collectstatic", interactive=False, verbosity=0)
        try:
            refuse_unless_ready(serves_pages=True)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        call_command("migrate", interactive=False, verbosity=0)
        demo = io.StringIO()
        if not no_demo:
            call_command("load_demo", stdout=demo)
        environment = child_environment()
        worker = subprocess.Popen(
            worker_command(settings.VAR_DIR / "celerybeat-schedule"),
            start_new_session=True,
            env=environment,
        )
        web = subprocess.Popen(
            web_command(host, port),
            start_new_session=True,
            env=environment,
        )
        children = [web, worker]

        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            _wait_until_ready(host, port, children)
            self.stdout.write("\n" + demo.getvalue(), ending="")
            self.stdout.write(
                self.style.SUCCESS(f"\nreviewapp is running at http://{host}:{port}/")
            )
            self.stdout.write("Press Ctrl-C to stop the web server and the worker.\n")
            # Shown now even when the output is a pipe (`make run | tee run.log`).
            self.stdout.flush()
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            for child in children:
                if child.poll() is None:
                    # The worker's main process shuts its pool down warmly on SIGTERM.
                    child.terminate()
            deadline = time.monotonic() + 15
            for child in children:
                try:
                    child.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
        self.stdout.write("Stopped.")
        if not stopping:
            sys.exit(1)
