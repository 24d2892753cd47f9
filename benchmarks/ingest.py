"""Ingestion throughput: results per second for batch posts of runs with raw samples, API against the obvious way.

    .venv/bin/python benchmarks/ingest.py                # SQLite and PostgreSQL, 20,000 results per repeat
    .venv/bin/python benchmarks/ingest.py --results 4000 --database sqlite

Measured: each run posted as one JSON document through the real API (``POST /api/v1/runs``: token auth,
validation, summaries and intervals by the numerical core, one transaction, the comparison enqueued on a real
Redis). Half of the results carry one-level samples (60 values, subsession analysis), half two-level samples
(5 processes x 10 values).

Baseline, in the same child on the same database, turn about with the API on the same documents: the same work
done the obvious way. Each document parsed with the schema (``RunIn.model_validate_json``), each result's summary
and interval computed with ``results.stats`` one result at a time, and the Project, Machine, Revision, Benchmark,
Metric, Run and Result rows written with ``get_or_create`` and ``create()``, one transaction per run. The script
checks that both store the same results. The API does a little more (HTTP, token, payload digest, the enqueue).

Target: >= 2,000 results/s through the API, end to end, on SQLite and on PostgreSQL. Printed: results/s
from the min / median of the repeats (each repeat posts every document into a new project), API / baseline, and
the 1-minute load before and after.
"""

import argparse
import itertools
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import REPEATS, chosen, interleaved, load, measure_in_child, print_verdicts, spread  # noqa: E402,E501

TARGET_RATE = 2_000
PROJECT = "Ingest project placeholder"
"""Each repeat posts the documents into a project of its own: this name is replaced in the bodies."""


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
        yield {"project": {"name": PROJECT}, "machine": {"name": "bench-1"},
               "revision": {"commit": f"{run:040x}", "branch": "main"}, "kind": "nightly",
               "started_at": f"2026-01-01T00:{run // 60 % 60:02d}:{run % 60:02d}Z", "results": rows}


def ingest_one_by_one(body: str) -> None:
    """The baseline: one posted document stored the obvious way, row by row through the ORM."""
    from django.db import transaction
    from django.utils.text import slugify

    from results import presentation, stats
    from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run
    from results.schemas import RunIn
    from results.services import default_queue

    document = RunIn.model_validate_json(body)
    with transaction.atomic():
        project, _ = Project.objects.get_or_create(slug=slugify(document.project.name),
                                                   defaults={"name": document.project.name})
        machine, _ = Machine.objects.get_or_create(name=document.machine.name,
                                                   defaults={"queue": default_queue(document.machine.name)})
        revision, _ = Revision.objects.get_or_create(project=project, commit=document.revision.commit,
                                                     branch=document.revision.branch)
        run = Run.objects.create(project=project, machine=machine, revision=revision, kind=document.kind,
                                 started_at=document.started_at)
        for result in document.results:
            summary = stats.summarize_samples(result.samples)
            benchmark, _ = Benchmark.objects.get_or_create(project=project, name=result.benchmark)
            metric, _ = Metric.objects.get_or_create(benchmark=benchmark, name=result.metric, defaults={
                "unit": result.unit, "direction": result.direction,
                "display_unit": presentation.display_unit(result.unit, summary.mean)})
            low = high = None
            if summary.n > 1:
                interval = stats.mean_interval(summary.mean, summary.variance, summary.n,
                                               confidence=result.confidence_level)
                low, high = min(interval.low, summary.mean), max(interval.high, summary.mean)
            Result.objects.create(
                run=run, metric=metric, mean=summary.mean, subsession_size=summary.subsession_size,
                variance=summary.variance, n=summary.n, sample_count=summary.sample_count,
                confidence_level=result.confidence_level, ci_low=low, ci_high=high,
                autocorrelation=None if math.isnan(summary.autocorrelation) else summary.autocorrelation,
                independent=summary.independent, variance_method=summary.variance_method,
                converged=low is not None and high - low <= metric.target_width * abs(summary.mean),
                subsession_variance=None if math.isnan(summary.subsession_variance) else summary.subsession_variance,
                subsessions=summary.subsessions or None, samples=result.samples.tobytes(),
                samples_shape=list(result.samples.shape))


def measure(*, results: int, per_run: int, repeats: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from results import services
    from tests.factories import UserFactory

    call_command("migrate", verbosity=0)
    _, token = services.create_api_token(user=UserFactory(), name="bench")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    template = [json.dumps(document) for document in documents(results=results, per_run=per_run)]
    bodies: list[str] = []
    projects = itertools.count(1)

    def next_project() -> None:
        # Untimed: a new project for every call, so each writes its benchmarks and metrics afresh.
        name = f"Ingest {next(projects)}"
        bodies[:] = [body.replace(PROJECT, name) for body in template]

    def api() -> None:
        for body in bodies:
            response = client.post("/api/v1/runs", data=body, content_type="application/json")
            assert response.status_code == 201, response.content[:300]

    def baseline() -> None:
        for body in bodies:
            ingest_one_by_one(body)

    functions = {"api": api, "baseline": baseline}
    for function in functions.values():
        next_project()
        function()
    _check_same("ingest-1", "ingest-2", expected=results)
    figures = {"database": connection.vendor, "results": results, "per_run": per_run, "load_before": load()}
    figures.update(interleaved(functions, repeats=repeats, prepare=next_project))
    figures["load_after"] = load()
    return figures


def _check_same(api_project: str, baseline_project: str, *, expected: int) -> None:
    """Both ways stored the same results (summaries, intervals, samples) for the same documents."""
    from results.models import Result

    fields = ("run__revision__commit", "metric__benchmark__name", "metric__name", "mean", "subsession_size",
              "variance", "n", "sample_count", "ci_low", "ci_high", "independent", "converged", "variance_method",
              "subsessions", "samples", "samples_shape", "metric__display_unit", "run__kind")
    stored = [list(Result.objects.filter(run__project__slug=slug).order_by(*fields[:3]).values_list(*fields))
              for slug in (api_project, baseline_project)]
    if len(stored[0]) != expected:
        raise SystemExit(f"the API stored {len(stored[0])} results, {expected} expected")
    for api_row, baseline_row in zip(*stored, strict=True):
        if [bytes(v) if isinstance(v, memoryview) else v for v in api_row] != \
                [bytes(v) if isinstance(v, memoryview) else v for v in baseline_row]:
            raise SystemExit(f"the baseline stored {baseline_row[:12]}, the API {api_row[:12]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=int, default=20_000, help="results posted per repeat, by each way")
    parser.add_argument("--per-run", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(results=arguments.results, per_run=arguments.per_run, repeats=arguments.repeats)))
        return
    print(f"Ingesting {arguments.results:,} results with raw samples, {arguments.per_run:,} per posted run: the API "
          f"against the obvious way (baseline); results/s from the min / median of {arguments.repeats} repeats, "
          f"{os.cpu_count()} CPUs")
    print(f"{'database':<10}{'API results/s':>18}{'baseline results/s':>21}{'API/baseline':>14}{'load':>13}")
    verdicts = []
    for database in chosen(arguments.database):
        options = ["--results", str(arguments.results), "--per-run", str(arguments.per_run),
                   "--repeats", str(arguments.repeats)]
        figures = measure_in_child(__file__, options, database=database, debug=False)
        api, base = spread(figures["api"]), spread(figures["baseline"])
        rate, base_rate = [figures["results"] / s for s in api], [figures["results"] / s for s in base]
        print(f"{figures['database']:<10}{rate[0]:>9,.0f} /{rate[1]:>7,.0f}{base_rate[0]:>12,.0f} /"
              f"{base_rate[1]:>7,.0f}{rate[1] / base_rate[1]:>13.1f}x{figures['load_before']:>7.2f}->"
              f"{figures['load_after']:.2f}")
        verdicts.append(f"{figures['database']}: {rate[1]:,.0f} results/s median through the API, "
                        f"{'meets' if rate[1] >= TARGET_RATE else 'MISSES'} >= {TARGET_RATE:,}")
    print_verdicts(f"target: >= {TARGET_RATE:,} results/s through the API, end to end, on SQLite and PostgreSQL",
                   verdicts, "results/s: best repeat / median repeat; API/baseline: median over median. load: "
                   "1-minute average before -> after the timed repeats")


if __name__ == "__main__":
    main()
