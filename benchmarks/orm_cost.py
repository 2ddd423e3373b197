"""What one database statement and one task message cost this process, in CPU.

Run:  .venv/bin/python benchmarks/orm_cost.py [--n 2000]

On a fresh `reviewapp_bench` database (PostgreSQL, prepared statements as
configured) and Redis /14, times in one process:

- a primary-key lookup through the Django ORM, as a model and as `values_list`,
  composed once (`reviewapp.compiled_queries.CompiledQuery`), and the same
  statement through a raw cursor;
- an UPDATE through `save(update_fields=…)`, composed once (`CompiledSave`), and
  through a raw cursor, on a plain table (the signed records' append-only
  triggers refuse a plain UPDATE);
- publishing one `evaluate_proposal` message with `.delay()` and through a
  shared producer (what a submission sends: one task per proposal).

These are the unit costs behind the pipeline's CPU per proposal (`pipeline.py`
prints how many statements each step of a proposal runs).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402


def cpu_ms(fn, n: int) -> float:
    """Mean CPU milliseconds of `fn()` over `n` calls, after a warm-up."""
    for _ in range(min(n, 50)):
        fn()
    started = time.process_time()
    for _ in range(n):
        fn()
    return 1000 * (time.process_time() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per measurement")
    args = parser.parse_args()

    s.heading("unit costs: one statement, one message (CPU of this process)")
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("orm_cost")
    from django.conf import settings
    from django.db import connection

    from reviewapp.compiled_queries import CompiledQuery, CompiledSave
    from reviewapp.review.evaluation.tasks import evaluate_proposal
    from reviewapp.review.models import EndpointCall, Lens

    s.pipeline_panel()
    lens = Lens.objects.order_by("pk").first()
    # A model without save() overrides or signals, so the UPDATE is the ORM's alone,
    # and outside the signed records, whose append-only triggers refuse a plain UPDATE.
    row = EndpointCall.objects.create(endpoint="0" * 64, token="orm-cost", started=0.0, ends=0.0)
    s.line(
        "prepared statements",
        str(settings.DATABASES["default"].get("OPTIONS", {}).get("server_side_binding", False)),
    )

    def raw_select() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, name, version FROM review_lens WHERE id = %s", [lens.pk])
            cursor.fetchone()

    def raw_update() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE review_endpointcall SET ends = %s WHERE id = %s", [row.ends, row.pk]
            )

    lens_row = CompiledQuery(lambda pk: Lens.objects.filter(pk=pk)[:1])
    save_ends = CompiledSave(EndpointCall, ["ends"])
    figures = {
        "ORM Lens.objects.get(pk=…)": cpu_ms(lambda: Lens.objects.get(pk=lens.pk), args.n),
        "ORM values_list(…).get(pk=…)": cpu_ms(
            lambda: Lens.objects.values_list("id", "name", "version").get(pk=lens.pk), args.n
        ),
        "the same, composed once (CompiledQuery)": cpu_ms(lambda: lens_row.first(lens.pk), args.n),
        "raw cursor SELECT by primary key": cpu_ms(raw_select, args.n),
        "ORM save(update_fields=[…])": cpu_ms(
            lambda: row.save(update_fields=["ends"]), args.n // 4
        ),
        "the same, composed once (CompiledSave)": cpu_ms(lambda: save_ends(row), args.n // 4),
        "raw cursor UPDATE by primary key": cpu_ms(raw_update, args.n // 4),
        "Celery evaluate_proposal.delay(…)": cpu_ms(lambda: evaluate_proposal.delay(0), args.n),
    }
    with evaluate_proposal.app.producer_or_acquire() as producer:
        figures["Celery apply_async(…, producer=shared)"] = cpu_ms(
            lambda: evaluate_proposal.apply_async((0,), producer=producer), args.n
        )
    s.flush_redis(env["CELERY_BROKER_URL"])  # the messages above name no proposal
    for label, value in figures.items():
        s.line(label, f"{value:.3f} ms CPU")
    s.line("load average at end", s.load_average())


if __name__ == "__main__":
    main()
