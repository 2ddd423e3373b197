"""gunicorn server hooks for the benchmarks' web server (`-c python:…`): a worker is warm,
and says so, before anything is measured against it."""

import os
from pathlib import Path


def post_worker_init(worker) -> None:
    # Django imports the URLconf, and the API's routers and schemas with it, on a
    # worker's first request: about 0.5 s of CPU that a benchmark would count as
    # requests' CPU. A worker pays it once, when it starts.
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the import is the point
    ready = os.environ.get("BENCH_GUNICORN_READY_DIR")
    if ready:
        (Path(ready) / str(os.getpid())).touch()
