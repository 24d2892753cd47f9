"""Server time of the dashboard's pages on a large database: 2,000 series × 500 nightly runs.

    .venv/bin/python benchmarks/pages.py                         # SQLite and PostgreSQL
    .venv/bin/python benchmarks/pages.py --series 200 --runs 100 --database sqlite

Seeds 1,000,000 results (summaries, no raw samples) with the services' bulk insert, compares
the latest nightly with its history, then requests the nightly overview, a 500-point
history page and the runs list (first page, fifth page, one commit) repeatedly in-process (Django's test client: server time without a network)
and prints the median and 95th percentile, with the number of queries per page. The
baseline, measured in the same run, is the bare API listing of runs (one small query).

It also runs a 160-round session (``--session-rounds``) of a synthetic 76 µs benchmark through
Pilot's loop and the runner's own storage, and builds its run's page with the cache emptied
before every request (a first view): once as it is built now, from the analysis the session
stored when it finished, and once as it was built before, replaying the session (EDM on every
round) with the stored analysis deleted before every request; the ratio compares the two.
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


def seed_session(rounds: int) -> tuple[int, int]:
    """A finished session of `rounds` rounds of a 76 µs benchmark (a warm-up in every round, readings at the
    nanosecond resolution of a clock, so they repeat, and a few 1–16 ms outliers); its run's and its ids."""
    import numpy as np
    from django.utils import timezone as django_timezone

    from results.models import Machine, Project
    from runner import services
    from runner import session as session_loop
    from runner.models import Job, Session

    rng = np.random.default_rng(5)
    project = Project.objects.create(name="Sessions", slug="sessions")
    machine = Machine.objects.create(name="runner-1", queue="bench.runner-1")
    job = Job.objects.create(project=project, name="sort", benchmark="sort 1k", machine=machine, builtin="sort",
                             target_width=1e-5, work_min=300, work_max=600, budget_rounds=rounds,
                             budget_seconds=1e9, min_round_duration=0.0)
    session = Session.objects.create(job=job, status="running", started_at=django_timezone.now())

    def workload(work_amount: float) -> session_loop.RoundOutcome:
        values = 76e-6 * (1 + rng.normal(0, 0.02, int(work_amount)))
        values[:40] += 20e-6
        outliers = rng.random(values.size) < 0.002
        values[outliers] = rng.uniform(1e-3, 16e-3, outliers.sum())
        values = np.round(values, 9)
        return session_loop.RoundOutcome(duration=float(values.sum()), readings={"time": float(values.mean())},
                                         unit_readings={"time": values.tolist()})

    clock = iter(range(10**9))
    outcome = session_loop.run_session(
        {"A": workload}, job.metric_specs(), job.session_targets(), clock=lambda: next(clock) * 1e-3,
        on_round=lambda record, progress: services._store_round(session, record, progress, None))
    session = services._finish(Session.objects.select_related("job__project", "job__machine").get(pk=session.pk),
                               outcome)
    return session.runs.get().pk, session.pk


def timed(client, url: str, repeats: int, *, before=None) -> tuple[float, float, int]:
    """Median and 95th percentile seconds of `repeats` requests, and the queries of the last; `before()`, when
    given, runs ahead of every request, untimed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches and connections
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], len(queries)


def measure(series: int, runs: int, repeats: int, session_rounds: int, replay_repeats: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from runner.models import SessionAnalysis

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    metric_id = seed(series, runs)
    seconds = time.perf_counter() - started
    client = Client()
    pages = {
        "runs API (baseline)": "/api/v1/runs?limit=20",
        "nightly overview": "/",
        f"history, {runs} points": f"/history/{metric_id}/?machine=bench-1",
        "runs list": "/runs/",
        "runs list, page 5": "/runs/?page=5",
        "runs list, one commit": f"/runs/?commit={runs // 2:040x}",
    }
    figures = {name: timed(client, url, repeats) for name, url in pages.items()}
    session_seconds = 0.0
    if session_rounds:
        started = time.perf_counter()
        run_id, session_id = seed_session(session_rounds)
        session_seconds = time.perf_counter() - started

        def replaying() -> None:
            cache.clear()
            SessionAnalysis.objects.filter(session_id=session_id).delete()

        url = f"/runs/{run_id}/"
        figures[f"session run, {session_rounds} rounds"] = timed(client, url, repeats, before=cache.clear)
        figures["  replaying it (before)"] = timed(client, url, replay_repeats, before=replaying)
    return {"database": connection.vendor, "seed_seconds": seconds, "session_seconds": session_seconds,
            "pages": figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--session-rounds", type=int, default=160, help="rounds of the session (0: skip it)")
    parser.add_argument("--replay-repeats", type=int, default=5,
                        help="requests of the replaying session run page (seconds each)")
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.series, arguments.runs, arguments.repeats, arguments.session_rounds,
                                 arguments.replay_repeats)))
        return
    print(f"{arguments.series:,} series x {arguments.runs} runs = {arguments.series * arguments.runs:,} results; "
          f"{arguments.repeats} requests per page ({arguments.replay_repeats} of the replaying session run page)")
    options = ["--series", str(arguments.series), "--runs", str(arguments.runs), "--repeats", str(arguments.repeats),
               "--session-rounds", str(arguments.session_rounds), "--replay-repeats", str(arguments.replay_repeats)]
    for database in chosen(arguments.database):
        figures = measure_in_child(__file__, options, database=database)
        print(f"\n{figures['database']} (seeded in {figures['seed_seconds']:.0f} s, the session in "
              f"{figures['session_seconds']:.0f} s)")
        print(f"{'page':<30}{'median ms':>10}{'p95 ms':>9}{'queries':>9}")
        for name, (median, p95, queries) in figures["pages"].items():
            print(f"{name:<30}{median * 1000:>10.1f}{p95 * 1000:>9.1f}{queries:>9}")
        pages = list(figures["pages"].values())
        if arguments.session_rounds:
            (stored, stored_p95, _), (replayed, replayed_p95, _) = pages[-2:]
            print(f"session run page, stored analysis / replaying: median {stored / replayed:.3f}x, "
                  f"p95 {stored_p95 / replayed_p95:.3f}x")
    print("\ntargets: overview p95 <= 300 ms; 500-point history p95 <= 200 ms; "
          "160-round session run page and runs list p95 <= 300 ms, queries constant")


if __name__ == "__main__":
    main()
