"""Ingestion throughput: results per second for batch posts of runs with raw samples.

    .venv/bin/python benchmarks/ingest.py                # SQLite and PostgreSQL, 100,000 results
    .venv/bin/python benchmarks/ingest.py --results 20000 --database sqlite

Each run is posted as one JSON document through the real API (token auth, validation,
summaries by the numerical core, one transaction). Half of the results carry one-level
samples (60 values, subsession analysis), half two-level samples (5 processes x 10 values).
The baseline, measured in the same process on the same database, is the obvious
implementation: one ``Result.objects.create`` per result (the summaries precomputed, so it
measures only the per-row writes the service avoids).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import chosen, measure_in_child  # noqa: E402


def documents(*, results: int, per_run: int, seed: int = 1):
    import numpy as np

    rng = np.random.default_rng(seed)
    for run in range(results // per_run):
        rows = []
        for index in range(per_run):
            if index % 2:
                samples = rng.normal(1.0, 0.02, 60)
            else:
                samples = rng.normal(1.0, 0.02, (5, 10))
            rows.append({"benchmark": f"benchmark {index // 2}", "metric": f"metric {index % 2}", "unit": "s",
                         "samples": samples.round(6).tolist()})
        yield {"project": {"name": "Ingest"}, "machine": {"name": "bench-1"},
               "revision": {"commit": f"{run:040x}", "branch": "main"}, "kind": "nightly",
               "started_at": f"2026-01-01T00:{run // 60 % 60:02d}:{run % 60:02d}Z", "results": rows}


def measure(*, results: int, per_run: int, baseline_results: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from results import services
    from results.models import Result, Run
    from tests.factories import UserFactory

    call_command("migrate", verbosity=0)
    _, token = services.create_api_token(user=UserFactory(), name="bench")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    bodies = [json.dumps(document) for document in documents(results=results, per_run=per_run)]

    started = time.perf_counter()
    for body in bodies:
        response = client.post("/api/v1/runs", data=body, content_type="application/json")
        assert response.status_code == 201, response.content[:300]
    api_seconds = time.perf_counter() - started
    assert Result.objects.count() == results

    # Baseline: the same kind of rows written one create() at a time.
    template = Result.objects.select_related("metric").first()
    metrics = list(Run.objects.order_by("pk").first().results.values_list("metric_id", flat=True))
    run = Run.objects.create(project_id=template.run.project_id, machine_id=template.run.machine_id,
                             kind="manual", started_at=template.run.started_at)
    started = time.perf_counter()
    created = 0
    while created < baseline_results:
        if created and created % len(metrics) == 0:
            run = Run.objects.create(project_id=template.run.project_id, machine_id=template.run.machine_id,
                                     kind="manual", started_at=template.run.started_at)
        Result.objects.create(run=run, metric_id=metrics[created % len(metrics)], mean=template.mean,
                              subsession_size=template.subsession_size, variance=template.variance, n=template.n,
                              sample_count=template.sample_count, ci_low=template.ci_low, ci_high=template.ci_high,
                              samples=template.samples, samples_shape=template.samples_shape)
        created += 1
    baseline_seconds = time.perf_counter() - started
    return {"database": connection.vendor, "results": results, "per_run": per_run,
            "api_seconds": api_seconds, "api_rate": results / api_seconds,
            "baseline_results": baseline_results, "baseline_rate": baseline_results / baseline_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--per-run", type=int, default=1_000)
    parser.add_argument("--baseline-results", type=int, default=5_000)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(results=arguments.results, per_run=arguments.per_run,
                                 baseline_results=arguments.baseline_results)))
        return
    print(f"Ingesting {arguments.results:,} results with raw samples, {arguments.per_run:,} per posted run")
    print(f"{'database':<10} {'API results/s':>14} {'seconds':>8} {'baseline results/s':>19} {'ratio':>6}")
    for database in chosen(arguments.database):
        figures = measure_in_child(__file__, ["--results", str(arguments.results), "--per-run", str(arguments.per_run),
                                              "--baseline-results", str(arguments.baseline_results)],
                                   database=database)
        print(f"{figures['database']:<10} {figures['api_rate']:>14,.0f} {figures['api_seconds']:>8.1f} "
              f"{figures['baseline_rate']:>19,.0f} {figures['api_rate'] / figures['baseline_rate']:>6.1f}x")
    print("target: >= 2,000 results/s (API, end to end)")


if __name__ == "__main__":
    main()
