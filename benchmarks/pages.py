"""Server time of the dashboard's pages on a large database: 2,000 series × 500 nightly runs.

    .venv/bin/python benchmarks/pages.py                         # SQLite and PostgreSQL
    .venv/bin/python benchmarks/pages.py --series 200 --runs 100 --database sqlite

Seeds 1,000,000 results (summaries, no raw samples) with the services' bulk insert, compares
the latest nightly with its history, then requests the nightly overview and a 500-point
history page repeatedly in-process (Django's test client: server time without a network)
and prints the median and 95th percentile, with the number of queries per page. The
baseline, measured in the same run, is the bare API listing of runs (one small query).
"""

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import chosen, measure_in_child  # noqa: E402


def seed(series: int, runs: int):
    import numpy as np

    from results import comparisons, services
    from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run

    rng = np.random.default_rng(3)
    project = Project.objects.create(name="Pages", slug="pages")
    machine = Machine.objects.create(name="bench-1", queue="bench.bench-1")
    Benchmark.objects.bulk_create([Benchmark(project=project, name=f"benchmark {i:04d}") for i in range(series)])
    benchmarks = list(Benchmark.objects.filter(project=project).order_by("name"))
    Metric.objects.bulk_create([Metric(benchmark=b, name="time", unit="s") for b in benchmarks])
    metrics = list(Metric.objects.filter(benchmark__project=project).order_by("benchmark__name"))
    start = datetime(2025, 1, 1, 2, tzinfo=timezone.utc)
    base = rng.uniform(0.5, 2.0, series)
    for night in range(runs):
        revision = Revision.objects.create(project=project, commit=f"{night:040x}", branch="main")
        run = Run.objects.create(project=project, machine=machine, revision=revision, kind="nightly",
                                 started_at=start + timedelta(days=night), compared_at=start)
        means = base * (1 + rng.normal(0, 0.01, series))
        if night == runs - 1:
            means[: series // 50] *= 1.05
        half = 0.004 * means
        services.bulk_insert([
            Result(run=run, metric=metric, mean=float(mean), subsession_size=1, variance=float((0.01 * mean) ** 2 * 20),
                   n=20, sample_count=20, ci_low=float(mean - h), ci_high=float(mean + h))
            for metric, mean, h in zip(metrics, means, half)
        ])
    comparisons.compare_run(run_id=run.pk)
    return metrics[0].pk


def timed(client, url: str, repeats: int) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches and connections
    times = []
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], len(queries)


def measure(series: int, runs: int, repeats: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    metric_id = seed(series, runs)
    seconds = time.perf_counter() - started
    client = Client()
    pages = {
        "runs API (baseline)": "/api/v1/runs?limit=20",
        "nightly overview": "/",
        f"history, {runs} points": f"/history/{metric_id}/?machine=bench-1",
    }
    return {"database": connection.vendor, "seed_seconds": seconds,
            "pages": {name: timed(client, url, repeats) for name, url in pages.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.series, arguments.runs, arguments.repeats)))
        return
    print(f"{arguments.series:,} series x {arguments.runs} runs = {arguments.series * arguments.runs:,} results; "
          f"{arguments.repeats} requests per page")
    for database in chosen(arguments.database):
        figures = measure_in_child(__file__, ["--series", str(arguments.series), "--runs", str(arguments.runs), "--repeats", str(arguments.repeats)], database=database)
        print(f"\n{figures['database']} (seeded in {figures['seed_seconds']:.0f} s)")
        print(f"{'page':<26}{'median ms':>10}{'p95 ms':>9}{'queries':>9}")
        for name, (median, p95, queries) in figures["pages"].items():
            print(f"{name:<26}{median * 1000:>10.1f}{p95 * 1000:>9.1f}{queries:>9}")
    print("\ntargets: overview p95 <= 300 ms; 500-point history p95 <= 200 ms")


if __name__ == "__main__":
    main()
