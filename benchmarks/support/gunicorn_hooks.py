"""gunicorn server hooks for the benchmarks' web server (`-c python:…`): a worker is warm,
and says so, before anything is measured against it."""

import os


def post_worker_init(worker) -> None:
    # Django imports the URLconf, and the API's routers and schemas with it, on a
    # worker's first request: about 0.5 s of CPU that a benchmark would count as
    # requests' CPU. A worker pays it once, when it starts.
    from django.conf import settings
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the import is the point
    # <var>/gunicorn-ready/<master's pid>/<this worker's pid>: start_gunicorn waits for them.
    ready = settings.VAR_DIR / "gunicorn-ready" / str(os.getppid())
    ready.mkdir(parents=True, exist_ok=True)
    (ready / str(os.getpid())).touch()
