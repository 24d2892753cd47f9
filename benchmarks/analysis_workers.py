"""A large nightly compared by one and by two analysis workers, in chunks (issue 18, item 7).

    .venv/bin/python benchmarks/analysis_workers.py                          # 100,000 series, PostgreSQL
    .venv/bin/python benchmarks/analysis_workers.py --series 20000 --database sqlite

Seeds a project with ``--series`` series and ``--history`` earlier nights of each (summaries written with the
services' bulk insert), then, turn about, times the nightly comparison of tonight's run three ways:

* **whole**, the baseline: ``results.comparisons.compare_run`` in this process, the run in one transaction
  (what a single analysis worker did before chunks, and what ``import_results --compare`` does);
* **1 worker** and **2 workers**: real Celery analysis workers (one process each, ``--concurrency 1``) on a real
  Redis, the ``compare_run`` task sent as after ingestion; it splits the run into chunks of
  ``PILOTWEB_COMPARISON_CHUNK_SERIES`` series (``--chunk``), the workers take them, and the last chunk completes
  the run (q-values across all its series, alerts). Timed from the send to the run's ``compared_at``.

Workers are started before the clock starts. Printed: min / median seconds of the repeats, the ratios against
whole and 2 workers against 1, the chunks each worker took, and the 1-minute load before and after. The machine
has few cores and is shared: two workers can be at most as fast as two free cores make them.
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import chosen, load, measure_in_child, spread  # noqa: E402

REGRESSED = 0.01


def seed(*, series: int, history: int) -> int:
    """A project of `series` series with `history` earlier nights and tonight's run; tonight's run id."""
    import numpy as np

    from results import bulk
    from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run

    rng = np.random.default_rng(11)
    project = Project.objects.create(name="Scale", slug="scale")
    machine = Machine.objects.create(name="bench-1", queue="bench.bench-1")
    Benchmark.objects.bulk_create([Benchmark(project=project, name=f"benchmark {i:06d}") for i in range(series)],
                                  batch_size=5_000)
    benchmarks = Benchmark.objects.filter(project=project).order_by("name")
    Metric.objects.bulk_create([Metric(benchmark=b, name="time", unit="s") for b in benchmarks], batch_size=5_000)
    metric_ids = list(Metric.objects.filter(benchmark__project=project).order_by("benchmark__name")
                      .values_list("pk", flat=True))
    start = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)
    base = rng.uniform(0.5, 2.0, series)
    for night in range(history + 1):
        revision = Revision.objects.create(project=project, commit=f"{night:040x}", branch="main")
        run = Run.objects.create(project=project, machine=machine, revision=revision, kind="nightly",
                                 started_at=start + timedelta(days=night), compared_at=start)
        means = base * (1 + rng.normal(0, 0.01, series))
        if night == history:
            means[rng.random(series) < REGRESSED] *= 1.1
        counts = rng.integers(3, 40, series)
        variances = (0.02 * means) ** 2 * rng.uniform(0.5, 2.0, series)
        bulk.bulk_insert_columns(Result, {
            "run_id": [run.pk] * series, "metric_id": metric_ids, "mean": means.tolist(),
            "subsession_size": [1] * series, "variance": variances.tolist(), "n": counts.tolist(),
            "sample_count": counts.tolist()}, rows=series)
    return run.pk


def measure(*, series: int, history: int, chunk: int, repeats: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from results import comparisons, queue
    from results.models import ComparisonChunk, Run
    from tests.processes import wait_for, worker_process

    call_command("migrate", verbosity=0)
    run_id = seed(series=series, history=history)
    settings = connection.settings_dict
    database_url = (f"sqlite:///{settings['NAME']}" if connection.vendor == "sqlite" else
                    f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}")
    figures: dict = {"database": connection.vendor, "series": series, "chunk": chunk, "whole": [], "workers 1": [],
                     "workers 2": [], "chunks by worker": {}}

    def forget() -> None:
        """Tonight's run as stored after ingestion: no comparisons, no chunks, not compared."""
        comparisons.delete_comparisons(Run.objects.get(pk=run_id))
        Run.objects.filter(pk=run_id).update(compared_at=None)
        if connection.vendor == "postgresql":
            # The planner's statistics after the bulk loads and deletes, as autovacuum would keep them.
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE results_comparison")
                cursor.execute("ANALYZE results_result")
        connection.close()

    def by_workers(count: int, directory: Path) -> float:
        environment = {"DATABASE_URL": database_url, "PILOTWEB_COMPARISON_CHUNK_SERIES": str(chunk)}
        with contextlib.ExitStack() as stack:
            logs = [directory / f"analysis-{count}-{i}.log" for i in range(count)]
            for i, log in enumerate(logs):
                stack.enter_context(worker_process(redis_url=os.environ["REDIS_URL"], queues=["analysis"], log=log,
                                                   environment=environment, name=f"analysis-{i + 1}@bench"))
            for log in logs:
                wait_for(lambda log=log: log.exists() and " ready." in log.read_text(errors="replace"), timeout=120,
                         what=f"the worker logging to {log.name} ready")
            started = time.perf_counter()
            queue.enqueue(queue.COMPARE_RUN, run_id)
            wait_for(lambda: Run.objects.filter(pk=run_id, compared_at__isnull=False).exists(), timeout=1800,
                     what="the run compared")
            seconds = time.perf_counter() - started
            taken = Counter(ComparisonChunk.objects.filter(run_id=run_id).values_list("worker", flat=True))
            figures["chunks by worker"][str(count)] = dict(taken)
            connection.close()
        return seconds

    figures["load_before"] = load()
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(repeats):
            forget()
            started = time.perf_counter()
            comparisons.compare_run(run_id=run_id)
            figures["whole"].append(time.perf_counter() - started)
            for count in (1, 2):
                forget()
                figures[f"workers {count}"].append(by_workers(count, Path(directory)))
    figures["load_after"] = load()
    if connection.vendor == "postgresql":
        # Bytes per stored row, indexes and TOAST included: what a year of nights costs (docs/deployment.md, "Scaling out").
        with connection.cursor() as cursor:
            for table, model in (("results_result", "result"), ("results_comparison", "comparison")):
                cursor.execute(f"VACUUM FULL {table}")
                cursor.execute(f"SELECT pg_total_relation_size('{table}'), count(*) FROM {table}")
                size, count = cursor.fetchone()
                figures[f"bytes per {model}"] = size / count
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=100_000)
    parser.add_argument("--history", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=5_000, help="series per chunk")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="postgres")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(series=arguments.series, history=arguments.history, chunk=arguments.chunk,
                                 repeats=arguments.repeats)))
        return
    print(f"nightly comparison of {arguments.series:,} series ({arguments.history}-night histories), "
          f"chunks of {arguments.chunk:,}; seconds min / median of {arguments.repeats}, {os.cpu_count()} CPUs")
    print(f"{'database':<11}{'whole s':>15}{'1 worker s':>15}{'2 workers s':>15}{'1w/whole':>10}{'2w/1w':>8}"
          f"{'load':>13}")
    for database in chosen(arguments.database):
        figures = measure_in_child(__file__, ["--series", str(arguments.series), "--history", str(arguments.history),
                                              "--chunk", str(arguments.chunk), "--repeats", str(arguments.repeats)],
                                   database=database, debug=False)
        whole, one, two = (spread(figures[name]) for name in ("whole", "workers 1", "workers 2"))
        print(f"{figures['database']:<11}{whole[0]:>7.2f} / {whole[1]:<5.2f}{one[0]:>7.2f} / {one[1]:<5.2f}"
              f"{two[0]:>7.2f} / {two[1]:<5.2f}{one[1] / whole[1]:>9.2f}x{two[1] / one[1]:>7.2f}x"
              f"{figures['load_before']:>7.2f}->{figures['load_after']:.2f}")
        for count, taken in figures["chunks by worker"].items():
            print(f"    {count} worker{'s' if count != '1' else ''}: chunks taken "
                  + ", ".join(f"{worker} {number}" for worker, number in sorted(taken.items())))
        for model in ("result", "comparison"):
            if f"bytes per {model}" in figures:
                print(f"    PostgreSQL: {figures[f'bytes per {model}']:.0f} bytes per stored {model}, indexes included")
    print("whole: compare_run in one process (the baseline); n worker(s): the compare_run task on real Celery "
          "analysis workers, timed from the send to the run's compared_at. Ratios: median over median.")


if __name__ == "__main__":
    main()
