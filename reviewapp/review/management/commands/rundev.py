"""Run everything a local user needs: migrate, demo data, web server and the worker."""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Migrate, load the demo, then run the web server and the worker (its LLM loop "
        "included) until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-demo", action="store_true", help="Skip loading demo data.")

    def handle(self, *args, host, port, no_demo, **options):
        call_command("migrate", interactive=False, verbosity=0)
        if not no_demo:
            call_command("load_demo")
        beat_schedule = settings.VAR_DIR / "celerybeat-schedule"
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "reviewapp",
                "worker",
                "--beat",
                "--schedule",
                str(beat_schedule),
                "--loglevel",
                "INFO",
                "--concurrency",
                str(settings.CELERY_WORKER_CONCURRENCY),
                "--hostname",
                "worker@%h",
            ],
            start_new_session=True,
        )
        web = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            start_new_session=True,
        )
        children = [web, worker]
        self.stdout.write(self.style.SUCCESS(f"\nreviewapp is starting at http://{host}:{port}/"))
        self.stdout.write("Press Ctrl-C to stop the web server and the worker.\n")

        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
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
