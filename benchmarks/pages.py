"""Server time of the dashboard's pages on a database seeded as production has it, at several sizes.

    .venv/bin/python benchmarks/pages.py                             # 2,000 series x 50, 150, 500 runs, both databases
    .venv/bin/python benchmarks/pages.py --results 100000 --database sqlite    # one size (runs = results / series)
    .venv/bin/python benchmarks/pages.py --series 200 --runs 50 --session-rounds 0 --repeats 5   # a quick check

Each size is seeded in its own child, on a fresh SQLite file or PostgreSQL cluster (``benchmarks.databases``):
one project and machine, `series` series, `runs` nightly runs of them (summaries, no raw samples), and for every
run and series what the analysis worker stores: a history, a previous-night and a shift comparison (Comparison
rows with the inputs ``results.comparisons.compare_run`` stores, their numbers from ``results.stats`` on the
seeded means, q-values and suspected verdicts per run and method); change points where 5% of the series step
by 5-10% every 40-120 nights; an alert (confirmed, then acknowledged or resolved as it ages) opened by the
shift comparison the night after each step, and a dismissed one at each one-night spike. The rows are built
in numpy and Python and stored with ``results.bulk.bulk_insert``; the newest run and an early one are
then compared by ``compare_run`` itself, and the script stops unless the synthetic rows carry the same
inputs keys as those real ones. On PostgreSQL the tables are then vacuumed and analysed, as autovacuum leaves
them on a server.

Then it requests each page repeatedly in-process (Django's test client: server time without a network), the
pages turn about so a change of load touches all alike: the nightly overview, a history page (every night,
500 points at 500 runs, of a series with change points and alerts), the newest run's page as its reader first
gets it (the cache emptied before each request: a run of more than 200 series shows its first page of series,
worst first, each series' section loaded when opened), one of its sections loaded on demand (also uncached),
the run's page from the cache, the runs list (first page, fifth page, one commit) and the alerts (every status;
the new ones; the last page). Printed per page: min, median
and 95th percentile server time, the queries of one request, and the median and p95 as ratios of the
baseline's, the bare API listing of runs (one small query) measured in the same rounds; the 1-minute load
before and after. Across sizes: whether each page's queries stay constant and how its median grows.

With the largest size it also runs a 160-round session (``--session-rounds``) of a synthetic 76 us benchmark
through Pilot's loop and the runner's own storage, and builds its run's page with the cache emptied before
every request: once from the analysis the session stored when it finished, and once replaying the session
(EDM on every round) with the stored analysis deleted before every request; the ratio compares the two.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import chosen, load, measure_in_child  # noqa: E402

SERIES = 2_000
RUNS = (50, 150, 500)
STEPPING = 0.05
"""Share of the series whose level steps, by 5-10% up or down, every 40-120 nights from night 20 on."""
SPIKES = 0.0005
"""Share of series-nights with a one-night 8% spike: a shift test alerts, the next nights dismiss it."""
NOISE = 0.01
"""Run-to-run standard deviation of a night's mean (relative); the mean of a run is known to 0.3%."""
WITHIN = 0.003
UNITS = 20
CONFIRMED_AFTER = 3
"""Nights after a step's first night when its alert is confirmed and its nights become the series' level."""
DETECTED_AFTER = 5
"""Nights after a step's first night when the change-point scan has stored it (five nights of a segment)."""
TRIAGED_AFTER = 60
"""Alerts older than this many nights are resolved (fixed, won't fix or invalid); newer ones new or acknowledged."""
EARLY_NIGHT = 2
"""The early night ``compare_run`` compares for real (too few nights for a history or shift test)."""


# --- Seeding ---------------------------------------------------------------------------------------------


def seed(series: int, runs: int) -> dict:
    """Seed the database; the ids the pages need, the seconds each part took and the rows stored."""
    from results import comparisons
    from results.models import (
        Alert,
        Benchmark,
        ChangePoint,
        Comparison,
        Machine,
        Metric,
        Project,
        Run,
    )
    from results.selectors import ALERTS_PER_PAGE

    rng = np.random.default_rng(3)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    project = Project.objects.create(name="Pages", slug="pages")
    machine = Machine.objects.create(name="bench-1", queue="bench.bench-1")
    Benchmark.objects.bulk_create([Benchmark(project=project, name=f"benchmark {i:04d}") for i in range(series)])
    benchmarks = list(Benchmark.objects.filter(project=project).order_by("name"))
    Metric.objects.bulk_create([Metric(benchmark=b, name="time", unit="s") for b in benchmarks])
    metric_ids = np.array(Metric.objects.filter(benchmark__project=project).order_by("benchmark__name")
                          .values_list("pk", flat=True))
    truth = _truth(series, runs, rng, history_size=project.history_size)
    night_runs, result_ids = _seed_results(project, machine, metric_ids, truth)
    seconds["results"] = time.perf_counter() - started

    started = time.perf_counter()
    shapes = _seed_comparisons(truth, night_runs, result_ids)
    seconds["comparisons"] = time.perf_counter() - started

    started = time.perf_counter()
    _seed_change_points_and_alerts(truth, machine, night_runs, metric_ids, result_ids, rng)
    seconds["change points and alerts"] = time.perf_counter() - started

    started = time.perf_counter()
    newest = night_runs[-1]
    # compare_run itself, on an early night (insufficient histories) and on the newest (every test made):
    # the synthetic rows must carry the inputs it stores.
    comparisons.compare_run(run_id=night_runs[EARLY_NIGHT].pk)
    comparisons.compare_run(run_id=newest.pk)
    seconds["compare_run, 2 runs"] = time.perf_counter() - started
    real = {(method, frozenset(inputs)) for method, inputs in Comparison.objects.filter(
        candidate__run_id__in=[newest.pk, night_runs[EARLY_NIGHT].pk]).values_list("method", "inputs")}
    if real != shapes:
        raise SystemExit("the seeded comparisons' inputs differ from compare_run's:\n  seeded "
                         f"{sorted(map(_shape, shapes - real))}\n  compare_run {sorted(map(_shape, real - shapes))}")

    started = time.perf_counter()
    _as_autovacuum_leaves_it()
    seconds["vacuum and analyse"] = time.perf_counter() - started

    # The history page shows the series that stepped most often: the most change points and alerts.
    most_steps = Counter(truth["steps"]["series"].tolist()).most_common(1)[0][0]
    alerts = Alert.objects.count()
    return {"metric_id": int(metric_ids[most_steps]), "newest_run": newest.pk, "seconds": seconds,
            "alert_pages": max(1, -(-alerts // ALERTS_PER_PAGE)),
            "rows": {"results": series * runs, "comparisons": Comparison.objects.count(),
                     "change points": ChangePoint.objects.count(), "alerts": alerts,
                     "runs": Run.objects.count()},
            "verdicts": _verdicts(night_runs[-2].pk, newest.pk)}


def _as_autovacuum_leaves_it() -> None:
    """PostgreSQL: vacuum and analyse the seeded database, as a production server's autovacuum does after bulk
    inserts (the throwaway cluster runs without it, ``tests.pgcluster``): never analysed, 3M comparisons are
    planned from their size alone (at 1M results the overview took 1.8 s against 129 ms analysed, the run page's
    first view 2.4 s against 98 ms)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def _shape(key: tuple) -> str:
    return f"{key[0]}: {sorted(key[1])}"


def _verdicts(seeded_run: int, compared_run: int) -> dict:
    """History verdict counts of the last seeded night and of the newest (compare_run's): alike if realistic."""
    from django.db.models import Count

    from results.models import Comparison, ComparisonMethod

    return {label: dict(Comparison.objects.filter(candidate__run_id=run, method=ComparisonMethod.HISTORY)
                        .values_list("verdict").annotate(count=Count("id")).order_by())
            for label, run in (("seeded night", seeded_run), ("newest (compare_run)", compared_run))}


def _truth(series: int, runs: int, rng, *, history_size: int) -> dict:
    """The seeded series: night means (runs x series) and their within-run variances, the steps (night of the
    first night at the new level, series) and spikes, and per night and series where the history's level
    starts and where it ends (the nights of an unconfirmed step are kept out, as results.baselines does); K,
    the nights of a history."""
    base = rng.uniform(0.5, 2.0, series)
    level = np.ones((runs, series))
    steps = []
    for s in rng.choice(series, size=max(1, round(STEPPING * series)), replace=False):
        night = int(rng.integers(20, 100))
        while night < runs:
            level[night:, s] *= 1 + rng.choice([-1, 1]) * rng.uniform(0.05, 0.10)
            steps.append((night, int(s)))
            night += int(rng.integers(40, 120))
    steps.sort()
    means = base * level * (1 + rng.normal(0, NOISE, (runs, series)))
    spiked = rng.random((runs, series)) < SPIKES
    spiked[:12] = spiked[runs - 1:] = False  # a shift test needs 10 nights; the newest night is compare_run's
    means[spiked] *= 1.08
    level_start = np.zeros((runs, series), dtype=int)
    history_end = np.repeat(np.arange(runs)[:, None], series, axis=1)
    for night, s in steps:
        level_start[night + CONFIRMED_AFTER:, s] = night
        history_end[night + 1:night + CONFIRMED_AFTER, s] = night
    spike_nights, spike_series = np.nonzero(spiked)
    return {"means": means, "variances": UNITS * (WITHIN * means) ** 2, "level_start": level_start,
            "history_end": history_end, "history_size": history_size,
            "steps": {"night": np.array([n for n, _ in steps], dtype=int),
                      "series": np.array([s for _, s in steps], dtype=int)},
            "spikes": {"night": spike_nights, "series": spike_series}}


def _seed_results(project, machine, metric_ids, truth) -> tuple[list, np.ndarray]:
    """One nightly run per night with a result per series; the runs and the result ids (runs x series)."""

    from results import bulk
    from results.models import Result, Revision, Run

    start = datetime(2025, 1, 1, 2, tzinfo=timezone.utc)
    means, variances = truth["means"], truth["variances"]
    half = 2.093 * WITHIN * means  # t(0.975, 19) times the standard error of the mean
    runs = []
    ids = np.zeros(means.shape, dtype=np.int64)
    for night in range(means.shape[0]):
        revision = Revision.objects.create(project=project, commit=f"{night:040x}", branch="main")
        run = Run.objects.create(project=project, machine=machine, revision=revision, kind="nightly",
                                 started_at=start + timedelta(days=night), compared_at=start + timedelta(days=night))
        bulk.bulk_insert([
            Result(run=run, metric_id=int(metric), mean=mean, subsession_size=1, variance=variance, n=UNITS,
                   sample_count=UNITS, ci_low=mean - h, ci_high=mean + h)
            for metric, mean, variance, h in zip(metric_ids, means[night].tolist(), variances[night].tolist(),
                                                 half[night].tolist())])
        found = dict(Result.objects.filter(run=run).values_list("metric_id", "pk"))
        ids[night] = [found[int(metric)] for metric in metric_ids]
        runs.append(run)
    return runs, ids


def _seed_comparisons(truth, night_runs, result_ids) -> set:
    """The history, previous-night and shift comparisons of every night but the newest (compare_run's), one
    night at a time; the (method, inputs keys) shapes stored."""
    from results import bulk

    shapes: set = set()
    run_ids = [run.pk for run in night_runs]
    for night in range(len(night_runs) - 1):
        rows = _night_comparisons(night, truth, run_ids, result_ids)
        shapes |= {(row.method, frozenset(row.inputs)) for row in rows}
        bulk.bulk_insert(rows)
    return shapes


def _night_comparisons(night: int, truth: dict, run_ids: list[int], result_ids) -> list:
    """A night's Comparison rows as compare_run stores them (without its database reads): the numbers from
    results.stats on the seeded means, Benjamini-Hochberg q-values per method, inconclusive rows that are
    significant beyond the band marked suspected."""
    from scipy.stats import false_discovery_control

    from results.models import Comparison, ComparisonMethod, Verdict
    from results.decisions import ALPHA
    from results.result_schema import DEFAULT_THRESHOLD

    means, variances = truth["means"], truth["variances"]
    candidates = [[mean, variance, UNITS] for mean, variance in zip(means[night].tolist(), variances[night].tolist())]
    rows: dict[str, list[dict]] = {}
    rows[ComparisonMethod.HISTORY] = _history(night, truth, run_ids)
    rows[ComparisonMethod.PREVIOUS] = _previous(night, truth, run_ids) if night >= 1 else []
    rows[ComparisonMethod.SHIFT] = _shift(night, truth, run_ids)
    stored = []
    for method, method_rows in rows.items():
        tested = [row for row in method_rows if row.get("pvalue") is not None]
        if tested:
            qvalues = np.atleast_1d(false_discovery_control([row["pvalue"] for row in tested], method="bh"))
            for row, qvalue in zip(tested, qvalues.tolist()):
                row["qvalue"] = min(qvalue, 1.0)
                ratio = row["ratio"]
                if row["verdict"] == Verdict.INCONCLUSIVE and ratio is not None and row["qvalue"] < ALPHA:
                    if ratio > 1.0 + DEFAULT_THRESHOLD:
                        row["verdict"] = Verdict.SUSPECTED_REGRESSION
                    elif ratio < 1.0 - DEFAULT_THRESHOLD:
                        row["verdict"] = Verdict.SUSPECTED_IMPROVEMENT
        for s, row in enumerate(method_rows):
            inputs = row.pop("inputs")
            stored.append(Comparison(
                candidate_id=int(result_ids[night, s]), method=method, threshold=DEFAULT_THRESHOLD,
                confidence_level=0.95, inputs={"candidate": candidates[s], **inputs}, **row))
    return stored


def _untested(inputs: dict) -> dict:
    """A row without a test: too few nights."""
    from results.models import Verdict

    return {"ratio": None, "ci_low": None, "ci_high": None, "bounded": False, "statistic": None, "df": None,
            "pvalue": None, "qvalue": None, "verdict": Verdict.INSUFFICIENT_HISTORY, "inputs": inputs}


def _tested(numbers: dict, i: int, verdict: str, inputs: dict) -> dict:
    """A row's stored numbers from one entry of the core's columns, as pairwise_rows.comparison_row takes them."""
    bounded = bool(numbers["bounded"][i])
    ratio, statistic = float(numbers["ratio"][i]), float(numbers["statistic"][i])
    return {"ratio": ratio if math.isfinite(ratio) else None,
            "ci_low": float(numbers["low"][i]) if bounded else None,
            "ci_high": float(numbers["high"][i]) if bounded else None, "bounded": bounded,
            "statistic": statistic if math.isfinite(statistic) else None, "df": float(numbers["df"][i]),
            "pvalue": float(numbers["pvalue"][i]), "qvalue": None, "verdict": str(verdict), "inputs": inputs}


def _history(night: int, truth: dict, run_ids: list[int]) -> list[dict]:
    """Each series against the last K nights of its level (results.nightly_rows.history_rows' numbers)."""
    from results import stats
    from results.nightly_rows import MIN_HISTORY
    from results.result_schema import DEFAULT_THRESHOLD

    means, variances = truth["means"], truth["variances"]
    series = means.shape[1]
    end = truth["history_end"][night]
    size = truth["history_size"]
    first = np.maximum(truth["level_start"][night], end - size)
    count = end - first
    back = np.arange(size)
    nights = end[:, None] - 1 - back[None, :]  # newest first
    present = back[None, :] < count[:, None]
    taken = np.where(present, nights, 0)
    columns = np.arange(series)[:, None]
    history_means = np.where(present, means[taken, columns], np.nan)
    history_variances = np.where(present, variances[taken, columns], np.nan)
    usable = count >= MIN_HISTORY
    numbers = {}
    if usable.any():
        found = stats.compare_with_history(
            means[night, usable], variances[night, usable], np.full(usable.sum(), UNITS), history_means[usable],
            history_variances[usable], np.where(present[usable], float(UNITS), np.nan), threshold=DEFAULT_THRESHOLD,
            direction="lower_is_better", confidence=0.95)
        numbers = {name: np.atleast_1d(getattr(found, name)).tolist() for name in (
            "ratio", "low", "high", "bounded", "statistic", "pvalue", "df", "verdict", "baseline", "between_variance",
            "prediction_low", "prediction_high")}
    ids = np.asarray(run_ids)[taken].tolist()
    history_means, history_variances = history_means.tolist(), history_variances.tolist()
    rows, row = [], 0
    for s in range(series):
        k = int(count[s])
        history_runs = ids[s][:k]
        if not usable[s]:
            rows.append(_untested({"history_runs": history_runs, "needed": MIN_HISTORY}))
            continue
        rows.append(_tested(numbers, row, numbers["verdict"][row], {
            "history_runs": history_runs,
            "history": [[m, v, UNITS] for m, v in zip(history_means[s][:k], history_variances[s][:k])],
            "between_variance": numbers["between_variance"][row], "baseline": numbers["baseline"][row],
            "band": [numbers["prediction_low"][row], numbers["prediction_high"][row]]}))
        row += 1
    return rows


def _previous(night: int, truth: dict, run_ids: list[int]) -> list[dict]:
    """Each series against the previous night alone, naively (Welch and Fieller: pairwise_rows.pairwise_rows)."""

    from results import stats
    from results.result_schema import DEFAULT_THRESHOLD

    means, variances = truth["means"], truth["variances"]
    series = means.shape[1]
    units = np.full(series, UNITS)
    found = stats.compare_summaries(means[night], variances[night], units, means[night - 1], variances[night - 1],
                                    units, threshold=DEFAULT_THRESHOLD, direction="lower_is_better", confidence=0.95)
    numbers = {name: np.atleast_1d(getattr(found, name)).tolist() for name in (
        "ratio", "low", "high", "bounded", "statistic", "pvalue", "df", "verdict")}
    before, before_variances = means[night - 1].tolist(), variances[night - 1].tolist()
    return [_tested(numbers, s, numbers["verdict"][s], {
        "baseline_run": run_ids[night - 1], "baseline": [before[s], before_variances[s], UNITS, 1, True]})
        for s in range(series)]


def _shift(night: int, truth: dict, run_ids: list[int]) -> list[dict]:
    """Each series tested for a shift at one of its recent nights (nightly_rows.shift_rows' numbers and inputs;
    never carried: the seeded alerts are confirmed within CONFIRMED_AFTER nights)."""
    from results import stats
    from results.nightly_rows import NEWEST_NIGHT_WEIGHT, SHIFT_HISTORY, SHIFT_MIN_HISTORY, SHIFT_RECENT
    from results.result_schema import DEFAULT_THRESHOLD

    means = truth["means"]
    series = means.shape[1]
    first = np.maximum(truth["level_start"][night], night - (SHIFT_HISTORY + SHIFT_RECENT))
    earlier = night - first
    recent = np.minimum(SHIFT_RECENT, earlier + 1)
    rows: list[dict | None] = [None] * series
    for s in np.flatnonzero(earlier < SHIFT_MIN_HISTORY).tolist():
        rows[s] = _untested({"starts_tried": 0})
    tested = earlier >= SHIFT_MIN_HISTORY
    for tried in np.unique(recent[tested]).tolist():
        members = np.flatnonzero(tested & (recent == tried))
        width = int(earlier[members].max()) + 1
        position = np.arange(width)
        nights = night - (width - 1) + position[None, :]
        present = nights >= first[members, None]
        values = np.where(present, means[np.where(present, nights, 0), members[:, None]], np.nan)
        found = stats.recent_shift(values, history=SHIFT_HISTORY, recent=int(tried), min_history=SHIFT_MIN_HISTORY,
                                   confidence=0.95, newest_weight=NEWEST_NIGHT_WEIGHT)
        columns = {name: np.atleast_1d(getattr(found, name)) for name in (
            "start", "nights", "history_size", "ratio", "low", "high", "bounded", "statistic", "pvalue",
            "unadjusted_pvalue", "mean_after", "mean_before", "pooled_variance", "newest_alone")}
        m, k = columns["nights"], columns["history_size"]
        # The nights since the start against those before it, each with its own spread (two nights at least).
        after = position[None, :] >= width - m[:, None]
        before = (position[None, :] < width - m[:, None]) & (position[None, :] >= width - m[:, None] - k[:, None])
        welch = np.full(len(members), np.nan)
        pooled = (columns["start"] >= 0) & (m >= 2)
        if pooled.any():
            welch[pooled] = stats.welch_test(
                columns["mean_after"][pooled], _variances(values[pooled], after[pooled]), m[pooled],
                columns["mean_before"][pooled], _variances(values[pooled], before[pooled]), k[pooled]).pvalue
        columns["df"] = (k + m - 2).astype(float)
        verdicts = np.full(len(members), None, dtype=object)
        shifted = columns["start"] >= 0
        if shifted.any():
            verdicts[shifted] = stats.verdict(columns["low"][shifted], columns["high"][shifted],
                                              threshold=DEFAULT_THRESHOLD, direction="lower_is_better")
        columns["verdict"] = verdicts
        numbers = {name: column.tolist() for name, column in columns.items()}
        welch = welch.tolist()
        for row, s in enumerate(members.tolist()):
            if numbers["start"][row] < 0:
                rows[s] = _untested({"starts_tried": 0})
                continue
            nights_after, history = numbers["nights"][row], numbers["history_size"][row]
            since = night + 1 - nights_after
            rows[s] = _tested(numbers, row, numbers["verdict"][row], {
                "first_run": run_ids[since], "pooled_runs": run_ids[since:night + 1],
                "history_runs": run_ids[since - history:since][::-1], "starts_tried": int(tried),
                "nights_since": nights_after, "carried": False,
                "unadjusted_pvalue": numbers["unadjusted_pvalue"][row],
                "baseline": [numbers["mean_before"][row], numbers["pooled_variance"][row], history, 1, True],
                "welch_pvalue": welch[row] if nights_after >= 2 else None,
                **({"newest_weight": NEWEST_NIGHT_WEIGHT} if numbers["newest_alone"][row] else {})})
    return rows


def _variances(values, chosen):
    """Sample variance (ddof 1) of each row's chosen values."""
    count = chosen.sum(axis=1)
    picked = np.where(chosen, values, 0.0)
    mean = picked.sum(axis=1) / count
    return (np.where(chosen, values - mean[:, None], 0.0) ** 2).sum(axis=1) / (count - 1)


def _seed_change_points_and_alerts(truth, machine, night_runs, metric_ids, result_ids, rng) -> None:
    """A change point at every step the scan has had DETECTED_AFTER nights to find; an alert on the shift
    comparison of the night after each step (its first night recorded), confirmed once CONFIRMED_AFTER nights
    bear it out and triaged as it ages, and a dismissed one at each spike; each night's alerts in its group,
    created that night."""
    from django.db.models import OuterRef, Subquery

    from results import bulk
    from results.models import (
        Alert,
        AlertEvent,
        AlertGroup,
        AlertState,
        AlertStatus,
        ChangePoint,
        Comparison,
        ComparisonMethod,
        Run,
    )

    runs = len(night_runs)
    means = truth["means"]
    steps, spikes = truth["steps"], truth["spikes"]
    points = []
    for night, s in zip(steps["night"].tolist(), steps["series"].tolist()):
        if night + DETECTED_AFTER <= runs - 1:
            ratio = float(means[night:night + 10, s].mean() / means[max(0, night - 10):night, s].mean())
            points.append(ChangePoint(metric_id=int(metric_ids[s]), machine=machine, run=night_runs[night],
                                      ratio=ratio, ci_low=ratio - 0.012, ci_high=ratio + 0.012, pvalue=0.002))
    bulk.bulk_insert(points)

    # (opened night, series) -> (first night, kind)
    opened: dict[tuple[int, int], tuple[int, str]] = {}
    for night, s in zip(steps["night"].tolist(), steps["series"].tolist()):
        if night + 1 <= runs - 2:
            opened[night + 1, s] = (night, "step")
    for night, s in zip(spikes["night"].tolist(), spikes["series"].tolist()):
        opened.setdefault((night, s), (night, "spike"))
    if not opened:
        return
    evidence_nights = {key: min(first + (CONFIRMED_AFTER - 1 if kind == "step" else 2), runs - 2)
                       for key, (first, kind) in opened.items()}
    wanted = {int(result_ids[night, s]) for (night, s) in opened} | {
        int(result_ids[evidence_nights[key], key[1]]) for key in opened}
    shift_of = dict(Comparison.objects.filter(method=ComparisonMethod.SHIFT, candidate_id__in=wanted)
                    .values_list("candidate_id", "pk"))
    bulk.bulk_insert([AlertGroup(run=night_runs[night]) for night in sorted({night for night, _ in opened})])
    groups = dict(AlertGroup.objects.values_list("run_id", "pk"))
    alerts = []
    for (night, s), (first, kind) in sorted(opened.items()):
        age = runs - 1 - first
        if kind == "spike":
            state, status = AlertState.DISMISSED, rng.choice([AlertStatus.NEW, AlertStatus.INVALID])
            note = "dismissed: 3 nights pooled, no change"
        else:
            confirmed = evidence_nights[night, s] - first >= CONFIRMED_AFTER - 1
            state = AlertState.CONFIRMED if confirmed else AlertState.SUSPECTED
            note = f"confirmed: {CONFIRMED_AFTER} nights pooled" if confirmed else ""
            status = (rng.choice([AlertStatus.FIXED, AlertStatus.WONT_FIX, AlertStatus.INVALID], p=[0.5, 0.3, 0.2])
                      if age > TRIAGED_AFTER else rng.choice([AlertStatus.NEW, AlertStatus.ACKNOWLEDGED]))
        alerts.append(Alert(
            group_id=groups[night_runs[night].pk], comparison_id=shift_of[int(result_ids[night, s])],
            status=str(status), state=state, first_run=night_runs[first], state_note=note,
            evidence_id=shift_of[int(result_ids[evidence_nights[night, s], s])],
            bug_url=f"https://bugs.example.org/{night}-{s}" if status == AlertStatus.FIXED else ""))
    bulk.bulk_insert(alerts)
    AlertGroup.objects.update(created_at=Subquery(
        Run.objects.filter(pk=OuterRef("run_id")).values("started_at")[:1]))
    ChangePoint.objects.update(detected_at=Subquery(
        Run.objects.filter(pk=OuterRef("run_id")).values("started_at")[:1]))
    bulk.bulk_insert([AlertEvent(alert_id=pk, old_status=AlertStatus.NEW, new_status=status, note="triaged")
                          for pk, status in Alert.objects.exclude(status=AlertStatus.NEW).values_list("pk", "status")])


# --- Measuring -------------------------------------------------------------------------------------------


def timed_pages(client, pages: dict[str, tuple[str, Callable[[], object] | None, int]]) -> dict[str, dict]:
    """Each page's server times and the queries of one request; the pages requested turn about, each
    `repeats` times (``(url, before, repeats)``; ``before()``, when given, runs ahead of every request,
    untimed)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    figures = {}
    for name, (url, before, _) in pages.items():
        if before is not None:
            before()
        client.get(url)  # warm caches and connections
        if before is not None:
            before()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        figures[name] = {"seconds": [], "queries": len(queries)}
    for round_ in range(max(repeats for _, _, repeats in pages.values())):
        for name, (url, before, repeats) in pages.items():
            if round_ >= repeats:
                continue
            if before is not None:
                before()
            started = time.perf_counter()
            response = client.get(url)
            figures[name]["seconds"].append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.status_code)
    return figures


def measure(*, series: int, runs: int, repeats: int, slow_repeats: int, session_rounds: int,
            replay_repeats: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    seeded = seed(series, runs)
    seconds = time.perf_counter() - started
    client = Client()
    pages = {
        BASELINE: ("/api/v1/runs?limit=20", None, repeats),
        "nightly overview": ("/", None, repeats),
        f"history, {min(runs, 1000)} points": (f"/history/{seeded['metric_id']}/?machine=bench-1", None, repeats),
        # A run of more than 200 series shows its first 50, worst first, each series' section loaded on demand
        # (timed below): not the whole run's work, which reading every section adds (50 sections a page).
        "newest run, first view (page 1)": (f"/runs/{seeded['newest_run']}/", cache.clear, slow_repeats),
        "newest run, cached": (f"/runs/{seeded['newest_run']}/", None, repeats),
        # After the cached page: emptying the cache before it empties the page's too.
        "  one section, first view": (f"/runs/{seeded['newest_run']}/metrics/{seeded['metric_id']}/", cache.clear,
                                      repeats),
        "runs list": ("/runs/", None, repeats),
        "runs list, page 5": ("/runs/?page=5", None, repeats),
        "runs list, one commit": (f"/runs/?commit={runs // 2:040x}", None, repeats),
        "alerts": ("/alerts/", None, repeats),
        "alerts, new": ("/alerts/?status=new", None, repeats),
        "alerts, last page": (f"/alerts/?page={seeded['alert_pages']}", None, repeats),
    }
    load_before = load()
    figures = timed_pages(client, pages)
    load_after = load()
    session = {}
    if session_rounds:
        session = measure_session(client, session_rounds=session_rounds, repeats=repeats,
                                  replay_repeats=replay_repeats)
    return {"database": connection.vendor, "series": series, "runs": runs, "seed_seconds": seconds,
            "seed_parts": seeded["seconds"], "rows": seeded["rows"], "verdicts": seeded["verdicts"],
            "pages": figures, "load": [load_before, load_after], "session": session}


BASELINE = "runs API (baseline)"


def measure_session(client, *, session_rounds: int, repeats: int, replay_repeats: int) -> dict:
    """The session run page from the stored analysis, and replaying the session (before it was stored)."""
    from django.core.cache import cache

    from runner.models import SessionAnalysis

    started = time.perf_counter()
    run_id, session_id = seed_session(session_rounds)
    seeded = time.perf_counter() - started

    def replaying() -> None:
        cache.clear()
        SessionAnalysis.objects.filter(session_id=session_id).delete()

    url = f"/runs/{run_id}/"
    load_before = load()
    figures = timed_pages(client, {f"session run, {session_rounds} rounds": (url, cache.clear, repeats)})
    figures |= timed_pages(client, {"  replaying it (before)": (url, replaying, replay_repeats)})
    return {"seconds": seeded, "pages": figures, "load": [load_before, load()]}


def seed_session(rounds: int) -> tuple[int, int]:
    """A finished session of `rounds` rounds of a 76 µs benchmark (a warm-up in every round, readings at the
    nanosecond resolution of a clock, so they repeat, and a few 1–16 ms outliers); its run's and its ids."""
    from django.utils import timezone as django_timezone

    from results.models import Machine, Project
    from runner import execution
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
        on_round=lambda record, progress: execution._store_round(session, record, progress, None))
    session = execution._finish(Session.objects.select_related("job__project", "job__machine").get(pk=session.pk),
                                outcome)
    return session.runs.get().pk, session.pk


# --- Reporting -------------------------------------------------------------------------------------------


def _spread(seconds: list[float]) -> tuple[float, float, float]:
    """(min, median, 95th percentile) of repeated timings."""
    ordered = sorted(seconds)
    return ordered[0], statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def report(figures: dict) -> None:
    rows = figures["rows"]
    print(f"\n{figures['database']}, {figures['series']:,} series x {figures['runs']} runs: "
          + ", ".join(f"{count:,} {name}" for name, count in rows.items())
          + f"; seeded in {figures['seed_seconds']:.0f} s ("
          + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in figures["seed_parts"].items()) + ")")
    for label, counts in figures["verdicts"].items():
        print(f"  history verdicts, {label}: " + ", ".join(f"{v} {c}" for v, c in sorted(counts.items())))
    base = _spread(figures["pages"][BASELINE]["seconds"])
    print(f"{'page':<30}{'n':>4}{'min ms':>9}{'median ms':>10}{'p95 ms':>9}{'queries':>8}"
          f"{'median/base':>12}{'p95/base':>9}")
    for name, page in figures["pages"].items():
        low, median, p95 = _spread(page["seconds"])
        print(f"{name:<30}{len(page['seconds']):>4}{low * 1000:>9.1f}{median * 1000:>10.1f}{p95 * 1000:>9.1f}"
              f"{page['queries']:>8}{median / base[1]:>11.1f}x{p95 / base[2]:>8.1f}x")
    print(f"load (1 min) {figures['load'][0]:.2f} -> {figures['load'][1]:.2f}")
    session = figures["session"]
    if session:
        print(f"session seeded in {session['seconds']:.0f} s")
        for name, page in session["pages"].items():
            low, median, p95 = _spread(page["seconds"])
            print(f"{name:<30}{len(page['seconds']):>4}{low * 1000:>9.1f}{median * 1000:>10.1f}{p95 * 1000:>9.1f}"
                  f"{page['queries']:>8}")
        (stored, replayed) = (_spread(page["seconds"]) for page in session["pages"].values())
        print(f"session run page, stored analysis / replaying: median {stored[1] / replayed[1]:.3f}x, "
              f"p95 {stored[2] / replayed[2]:.3f}x; load {session['load'][0]:.2f} -> {session['load'][1]:.2f}")


def growth(sized: list[dict]) -> None:
    """Per page, its queries and its median (and ratio to the baseline) at each size: what grows."""
    if len(sized) < 2:
        return
    print(f"\n{sized[0]['database']}: growth from {sized[0]['rows']['results']:,} to {sized[-1]['rows']['results']:,}"
          " results (queries; median ms; median/baseline)")
    # By position: a page's name may hold the size (the history's points).
    for index, name in enumerate(sized[-1]["pages"]):
        pages = [list(figures["pages"].values())[index] for figures in sized]
        queries = [page["queries"] for page in pages]
        medians = [_spread(page["seconds"])[1] for page in pages]
        bases = [_spread(figures["pages"][BASELINE]["seconds"])[1] for figures in sized]
        print(f"  {name:<28} queries " + " -> ".join(map(str, queries))
              + (" constant" if len(set(queries)) == 1 else " GROWS")
              + "; ms " + " -> ".join(f"{m * 1000:.0f}" for m in medians)
              + f" (x{medians[-1] / medians[0]:.1f}); /base "
              + " -> ".join(f"{m / b:.1f}" for m, b in zip(medians, bases)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=SERIES)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--runs", type=int, nargs="+", help=f"nightly runs per size (default {RUNS})")
    sizes.add_argument("--results", type=int, nargs="+", help="results per size (runs = results / series)")
    parser.add_argument("--repeats", type=int, default=30, help="requests per page")
    parser.add_argument("--slow-repeats", type=int, default=10,
                        help="requests of the newest run's page built afresh (the cache emptied before each)")
    parser.add_argument("--session-rounds", type=int, default=160,
                        help="rounds of the session, measured with the largest size (0: skip it)")
    parser.add_argument("--replay-repeats", type=int, default=5,
                        help="requests of the replaying session run page (seconds each)")
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    runs = (arguments.runs or [max(results // arguments.series, 1) for results in arguments.results]
            if arguments.runs or arguments.results else list(RUNS))
    if arguments.child:
        print(json.dumps(measure(series=arguments.series, runs=runs[0], repeats=arguments.repeats,
                                 slow_repeats=arguments.slow_repeats, session_rounds=arguments.session_rounds,
                                 replay_repeats=arguments.replay_repeats)))
        return
    if min(runs) <= EARLY_NIGHT + 1:
        raise SystemExit(f"--runs must be above {EARLY_NIGHT + 1}")
    print(f"{arguments.series:,} series x {', '.join(map(str, runs))} runs; {arguments.repeats} requests per page "
          f"({arguments.slow_repeats} of the run page built afresh), the pages turn about; {os.cpu_count()} CPUs")
    for database in chosen(arguments.database):
        sized = []
        for size in sorted(runs):
            options = ["--series", str(arguments.series), "--runs", str(size), "--repeats", str(arguments.repeats),
                       "--slow-repeats", str(arguments.slow_repeats), "--replay-repeats", str(arguments.replay_repeats),
                       "--session-rounds", str(arguments.session_rounds if size == max(runs) else 0)]
            figures = measure_in_child(__file__, options, database=database, debug=False)
            report(figures)
            sized.append(figures)
        growth(sized)
    print("\ntargets (issue 31, at 1M results on PostgreSQL): the run page at 2,000 series <= 300 ms uncached "
          "(here its first page of 50 series; a section opened adds the 'one section' line); the overview p95 "
          "<= 300 ms. Also watched: 500-point history p95 <= 200 ms; 160-round session run page and runs list p95 "
          "<= 300 ms; queries constant whatever the size")


if __name__ == "__main__":
    main()
