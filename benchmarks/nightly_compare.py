"""Nightly comparison at scale: a 10,000-series run against a 10-run history, end to end.

    .venv/bin/python benchmarks/nightly_compare.py                 # SQLite and PostgreSQL
    .venv/bin/python benchmarks/nightly_compare.py --series 2000 --database sqlite

Prints the seconds of ``results.comparisons.compare_run`` (database read, statistics, write of
both the history and the previous-night comparisons, q-values) with its number of queries, and
the seconds of the statistics alone on the same arrays, against a per-series scipy loop
measured in the same run (the baseline).
"""

import argparse
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import chosen, measure_in_child  # noqa: E402


def measure(series: int, history: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    import numpy as np
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from scipy import stats as scipy_stats

    from results import comparisons, services, stats
    from results.models import Comparison
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(5)
    start = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)
    run = None
    for night in range(history + 1):
        means = 1.0 + rng.normal(0, 0.01, series)
        document = RunIn.model_validate({
            "project": {"name": "Scale"}, "machine": {"name": "bench-1"}, "kind": "nightly",
            "revision": {"commit": f"{night:040x}", "branch": "main"}, "started_at": start + timedelta(days=night),
            "results": [{"benchmark": f"benchmark {i}", "summary": {"mean": float(means[i]), "subsession_size": 1,
                                                                    "variance": 0.0004, "n": 20}}
                        for i in range(series)],
        })
        run = services.ingest_run(document=document, user=None).run

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        comparisons.compare_run(run_id=run.pk)
        end_to_end = time.perf_counter() - started
    assert Comparison.objects.filter(candidate__run=run).count() == 2 * series

    mean = 1.0 + rng.normal(0, 0.01, series)
    history_mean = 1.0 + rng.normal(0, 0.01, (series, history))
    variance, n = np.full(series, 0.0004), np.full(series, 20)
    started = time.perf_counter()
    stats.compare_with_history(mean, variance, n, history_mean, np.full((series, history), 0.0004),
                               np.full((series, history), 20))
    stats.compare_summaries(mean, variance, n, history_mean[:, 0], variance, n)
    statistics = time.perf_counter() - started

    loop = min(series, 1000)
    started = time.perf_counter()
    for i in range(loop):
        scipy_stats.ttest_ind_from_stats(mean[i], 0.02, 20, history_mean[i, 0], 0.02, 20, equal_var=False)
        scipy_stats.t.ppf(0.975, history - 1)
    per_series_loop = (time.perf_counter() - started) * series / loop
    return {"database": connection.vendor, "series": series, "end_to_end": end_to_end, "queries": len(queries),
            "statistics": statistics, "loop": per_series_loop}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=10)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.series, arguments.history)))
        return
    print(f"Comparing a {arguments.series:,}-series run with a {arguments.history}-run history")
    print(f"{'database':<11}{'end to end s':>13}{'queries':>9}{'statistics s':>14}{'scipy loop s':>14}{'speed-up':>10}")
    for database in chosen(arguments.database):
        figures = measure_in_child(__file__, ["--series", str(arguments.series), "--history", str(arguments.history)], database=database)
        print(f"{figures['database']:<11}{figures['end_to_end']:>13.2f}{figures['queries']:>9}"
              f"{figures['statistics']:>14.3f}{figures['loop']:>14.2f}{figures['loop'] / figures['statistics']:>9.0f}x")
    print("target: statistics <= 2 s; a constant number of queries (bulk inserts add only their batches)")


if __name__ == "__main__":
    main()
