"""Helpers every benchmark shares, by kind; a benchmark reads them as `s.<name>`.

- `stack`: the environment (production settings, bench database and broker),
  resetting them, Django set up in the benchmark's own process;
- `processes`: gunicorn and Celery workers started as child processes;
- `private_servers`: throwaway PostgreSQL and Redis servers that drills restart;
- `bulk_sql`: `INSERT … SELECT` statements whose columns come from the models;
- `workload`: the 3-lens recorded panel, its content and answers, tokens and sessions;
- `noop`: no-op Celery tasks, the yardstick a pipeline's cost is compared with;
- `measurement`: percentiles, task run times, CPU seconds per process group;
- `outcomes`: waiting for every proposal to be final, the exactly-once audit;
- `reporting`: headings and aligned lines;
- `profiling`: py-spy profiles (imported on its own: only two benchmarks use it).
"""

from .bulk_sql import insert_select
from .measurement import (
    CpuMeter,
    cpu_seconds,
    load_average,
    percentile,
    process_tree,
    task_runtimes,
)
from .noop import noop_round_trips, noop_throughput
from .outcomes import outcome_audit, verify_chain, wait_all_final
from .private_servers import PrivatePostgres, PrivateRedis
from .processes import Service, free_port, start_gunicorn, start_worker, wait_port
from .reporting import heading, line, print_task_runtimes
from .stack import (
    BENCH_DB,
    PG_URL,
    ROOT,
    VENV_BIN,
    bench_env,
    collectstatic,
    django_setup,
    env_from_args,
    flush_redis,
    fresh_stack,
    migrate,
    reset_database,
)
from .workload import (
    PIPELINE_LENSES,
    api_token,
    pipeline_contents,
    pipeline_panel,
    record_answers,
    reviewer_session,
)

__all__ = [
    "BENCH_DB",
    "PG_URL",
    "PIPELINE_LENSES",
    "ROOT",
    "VENV_BIN",
    "CpuMeter",
    "PrivatePostgres",
    "PrivateRedis",
    "Service",
    "free_port",
    "wait_port",
    "api_token",
    "bench_env",
    "collectstatic",
    "cpu_seconds",
    "django_setup",
    "env_from_args",
    "flush_redis",
    "fresh_stack",
    "heading",
    "insert_select",
    "line",
    "load_average",
    "migrate",
    "noop_round_trips",
    "noop_throughput",
    "outcome_audit",
    "percentile",
    "pipeline_contents",
    "pipeline_panel",
    "print_task_runtimes",
    "process_tree",
    "record_answers",
    "reset_database",
    "reviewer_session",
    "start_gunicorn",
    "start_worker",
    "task_runtimes",
    "verify_chain",
    "wait_all_final",
]
