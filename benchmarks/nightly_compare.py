"""Nightly comparison at scale: a run of N series, each with a 10-night history, compared end to end.

    .venv/bin/python benchmarks/nightly_compare.py                       # 1,000 and 10,000 series, both databases
    .venv/bin/python benchmarks/nightly_compare.py --series 200 1000 --database sqlite

Measured: ``results.comparisons.compare_run(run_id=...)`` as the analysis worker calls it (reads the series'
baselines and histories, computes the history, previous-night and shift comparisons with q-values, stores
them, opens alerts, enqueues change-point detection).

Baseline, in the same child on the same database, turn about with it: the same comparison written the obvious way,
a per-series ORM loop in one transaction (for each series: query its earlier nights, compute the history
comparison and the previous-night Welch/Fieller comparison with scipy, test it for a shift at one of its recent
nights with the core's ``align_modes`` and ``recent_shift`` (its history winsorized) on that one series,
``create()`` the three Comparison rows; then Benjamini-Hochberg q-values with scipy, a ``bulk_update``, and an
alert ``create()``d for each alerting shift).
The script checks that both store the same numbers, verdicts and alerts.

Target (issue 18): end to end <= 2 s for 10,000 series on SQLite and on PostgreSQL, with a number of queries
that does not grow with the number of series. Printed: min / median of the repeats, the queries
(``CaptureQueriesContext``), the peak memory of the Python heap during one call (``tracemalloc``, numpy
included), and the 1-minute load before and after.
"""

import argparse
import json
import math
import os
import re
import sys
import tracemalloc
from collections import Counter, deque
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import REPEATS, chosen, interleaved, load, measure_in_child, print_verdicts, spread  # noqa: E402,E501

TARGET_SECONDS = 2.0
TARGET_SERIES = 10_000
REGRESSED = 0.01
"""Share of series that regress by 10% tonight, so every verdict occurs."""


def measure(*, series: int, history: int, repeats: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from results import comparisons
    from results.models import Alert, Comparison

    call_command("migrate", verbosity=0)
    run = _nights(series=series, history=history)
    stored = Comparison.objects.filter(candidate__run=run)

    def end_to_end() -> None:
        comparisons.compare_run(run_id=run.pk)

    def baseline() -> None:
        compare_one_by_one(run.pk)

    functions = {"end_to_end": end_to_end, "baseline": baseline}
    figures: dict = {"database": connection.vendor, "series": series}
    compared = {}
    # CaptureQueriesContext counts the connection's query log, which keeps only the last 9,000 queries.
    connection.queries_log = deque()
    for name, function in functions.items():
        stored.delete()
        with CaptureQueriesContext(connection) as queries:
            function()
        figures[f"{name}_queries"] = len(queries)
        figures[f"{name}_statements"] = Counter(_statement(query["sql"]) for query in queries.captured_queries)
        compared[name] = {(pk, method): values for pk, method, *values in stored.values_list(
            "candidate_id", "method", "ratio", "ci_low", "ci_high", "pvalue", "qvalue", "verdict")}
        compared[name]["alerts"] = sorted(Alert.objects.filter(comparison__candidate__run=run).values_list(
            "comparison__candidate_id", "state"))
    _check_same(compared["end_to_end"], compared["baseline"], expected=3 * series + 1)
    for name, function in functions.items():
        stored.delete()
        tracemalloc.start()
        function()
        figures[f"{name}_peak_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    figures["load_before"] = load()
    figures.update(interleaved(functions, repeats=repeats, prepare=stored.delete))
    figures["load_after"] = load()
    return figures


def _statement(sql: str) -> str:
    """A query's kind and first table, e.g. 'INSERT results_comparison', to say which queries grow (an executemany
    is logged as 'N times: SQL', one query)."""
    sql = re.sub(r"^\d+ times: ", "", sql)
    found = re.match(r'\s*(UPDATE)\s+"?(\w+)', sql) or re.match(r'\s*(\w+).*?\b(?:FROM|INTO)\s+"?(\w+)', sql,
                                                                  re.DOTALL)
    return f"{found[1].upper()} {found[2]}" if found else sql.split(None, 1)[0].upper()


def _nights(*, series: int, history: int):
    """A project with `history` nights of `series` series and tonight's run after them; tonight's run."""
    import numpy as np

    from results import services
    from results.schemas import RunIn

    rng = np.random.default_rng(5)
    start = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)
    run = None
    for night in range(history + 1):
        means = 1.0 + rng.normal(0, 0.01, series)
        if night == history:
            means[rng.random(series) < REGRESSED] *= 1.1
        variances = 0.0004 * rng.uniform(0.5, 2.0, series)
        counts = rng.integers(3, 40, series)
        document = RunIn.model_validate({
            "project": {"name": "Scale"}, "machine": {"name": "bench-1"}, "kind": "nightly",
            "revision": {"commit": f"{night:040x}", "branch": "main"}, "started_at": start + timedelta(days=night),
            "results": [{"benchmark": f"benchmark {i}", "summary": {
                "mean": float(means[i]), "subsession_size": 1, "variance": float(variances[i]), "n": int(counts[i])}}
                for i in range(series)],
        })
        run = services.ingest_run(document=document, user=None).run
    return run


def _check_same(computed: dict, baseline: dict, *, expected: int) -> None:
    """Both ways stored the same rows (equal verdicts, numbers to 1e-9) and opened the same alerts."""
    if len(computed) != expected or computed.keys() != baseline.keys():
        raise SystemExit(f"compare_run stored {len(computed) - 1} rows, the baseline {len(baseline) - 1}; "
                         f"{expected - 1} expected")
    if computed.pop("alerts") != baseline.pop("alerts"):
        raise SystemExit("the baseline opened other alerts than compare_run")
    for key, numbers in computed.items():
        other = baseline[key]
        if numbers[-1] != other[-1] or not all(
                (a is None and b is None)
                or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12))
                for a, b in zip(numbers[:-1], other[:-1])):
            raise SystemExit(f"the baseline differs from compare_run at {key}: {other} != {numbers}")


def compare_one_by_one(run_id: int) -> None:
    """The baseline: a run's history, previous-night and shift comparisons and its alerts, series by series
    through the ORM."""
    from django.db import transaction
    from scipy import stats as scipy_stats

    from results.decisions import NIGHTLY_ALERTS, SERIES_LEVEL
    from results.nightly_rows import MIN_HISTORY, SHIFT_HISTORY, SHIFT_RECENT
    from results.models import (Alert, AlertGroup, AlertState, Comparison, ComparisonMethod, Result, Run, RunKind,
                                RunStatus, Verdict)
    from results.decisions import ALPHA

    run = Run.objects.select_related("project").get(pk=run_id)
    history_size = run.project.history_size
    rows: dict[str, list[Comparison]] = {method: [] for method in (
        ComparisonMethod.HISTORY, ComparisonMethod.PREVIOUS, ComparisonMethod.SHIFT)}
    with transaction.atomic():
        for result in Result.objects.filter(run=run).select_related("metric").order_by("id"):
            metric = result.metric
            nights = list(Result.objects.filter(
                metric=metric, run__project=run.project, run__machine_id=run.machine_id, run__kind=RunKind.NIGHTLY,
                run__status=RunStatus.COMPLETED, run__revision__branch=run.project.default_branch,
                run__started_at__lt=run.started_at,
            ).order_by("-run__started_at").values_list("id", "run_id", "mean", "variance", "n")[
                :max(history_size, SHIFT_HISTORY + SHIFT_RECENT)])
            earlier = nights[:history_size]
            candidate = [result.mean, result.variance, result.n]
            common = {"candidate": result, "threshold": metric.threshold, "confidence_level": metric.confidence_level}
            rows[ComparisonMethod.SHIFT].append(_shift_one(result, nights, common))
            if len(earlier) < MIN_HISTORY:
                rows[ComparisonMethod.HISTORY].append(Comparison.objects.create(
                    **common, method=ComparisonMethod.HISTORY, verdict=Verdict.INSUFFICIENT_HISTORY,
                    ratio=None, bounded=False, inputs={"candidate": candidate}))
                continue
            k = len(earlier)
            means = [row[2] for row in earlier]
            baseline = sum(means) / k
            history_variance = sum((mean - baseline) ** 2 for mean in means) / (k - 1)
            within = sum(row[3] / row[4] for row in earlier) / k
            between = max(history_variance - within, 0.0)
            candidate_error = between + result.variance / result.n
            standard_error = math.sqrt(candidate_error + history_variance / k)
            statistic = (result.mean - baseline) / standard_error
            pvalue = 2.0 * scipy_stats.t.sf(abs(statistic), k - 1)
            h2 = scipy_stats.t.ppf((1.0 + metric.confidence_level) / 2.0, k - 1) ** 2
            low, high = _fieller(result.mean, candidate_error, baseline, history_variance / k, h2)
            rows[ComparisonMethod.HISTORY].append(Comparison.objects.create(
                **common, method=ComparisonMethod.HISTORY, ratio=result.mean / baseline, ci_low=low, ci_high=high,
                bounded=low is not None, statistic=statistic, df=k - 1, pvalue=pvalue,
                verdict=_verdict(low, high, metric.threshold, metric.direction),
                inputs={"candidate": candidate, "history_runs": [row[1] for row in earlier],
                        "history": [list(row[2:]) for row in earlier], "between_variance": between,
                        "baseline": baseline}))

            previous_id, previous_run, previous_mean, previous_variance, previous_n = earlier[0]
            if result.n < 2 or previous_n < 2:
                continue
            welch = scipy_stats.ttest_ind_from_stats(result.mean, math.sqrt(result.variance), result.n,
                                                     previous_mean, math.sqrt(previous_variance), previous_n,
                                                     equal_var=False)
            error, previous_error = result.variance / result.n, previous_variance / previous_n
            # Welch-Satterthwaite's df, or Hsu's min(n) - 1 where a side has fewer than 5 units (spec §5).
            small = min(result.n, previous_n) < 5
            df = (min(result.n, previous_n) - 1.0 if small else (error + previous_error) ** 2
                  / (error ** 2 / (result.n - 1) + previous_error ** 2 / (previous_n - 1)))
            h2 = scipy_stats.t.ppf((1.0 + metric.confidence_level) / 2.0, df) ** 2
            low, high = _fieller(result.mean, error, previous_mean, previous_error, h2)
            statistic = welch.statistic
            pvalue = 2.0 * scipy_stats.t.sf(abs(statistic), df) if small else welch.pvalue
            rows[ComparisonMethod.PREVIOUS].append(Comparison.objects.create(
                **common, method=ComparisonMethod.PREVIOUS, baseline_id=previous_id,
                ratio=result.mean / previous_mean, ci_low=low, ci_high=high, bounded=low is not None,
                statistic=statistic, df=df, pvalue=pvalue,
                verdict=_verdict(low, high, metric.threshold, metric.direction),
                inputs={"candidate": candidate, "baseline_run": previous_run,
                        "baseline": [previous_mean, previous_variance, previous_n]}))

        for method_rows in rows.values():
            tested = [row for row in method_rows if row.pvalue is not None]
            if not tested:
                continue
            qvalues = scipy_stats.false_discovery_control([row.pvalue for row in tested], method="bh")
            for row, qvalue in zip(tested, qvalues):
                row.qvalue = min(float(qvalue), 1.0)
                beyond = row.ratio > 1.0 + row.threshold if row.candidate.metric.direction == "lower_is_better" \
                    else row.ratio < 1.0 - row.threshold
                within_band = 1.0 - row.threshold <= row.ratio <= 1.0 + row.threshold
                if row.verdict == Verdict.INCONCLUSIVE and row.qvalue < ALPHA and not within_band:
                    row.verdict = Verdict.SUSPECTED_REGRESSION if beyond else Verdict.SUSPECTED_IMPROVEMENT
            Comparison.objects.bulk_update(tested, ["qvalue", "verdict"], batch_size=500)

        for row in rows[ComparisonMethod.SHIFT]:
            if row.verdict in NIGHTLY_ALERTS and row.qvalue < ALPHA and row.pvalue < SERIES_LEVEL:
                welch = row.inputs["welch_pvalue"]
                confirmed = row.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and welch is not None \
                    and welch < ALPHA
                Alert.objects.create(group=AlertGroup.objects.get_or_create(run=run)[0], comparison=row,
                                     first_run_id=row.inputs["first_run"], evidence=row,
                                     state=AlertState.CONFIRMED if confirmed else AlertState.SUSPECTED)


def _shift_one(result, nights: list[tuple], common: dict):
    """The shift comparison of one series: each of its recent nights tried as a shift's first night against the
    nights before it, with the core's recent_shift on this one series; `nights` newest first."""
    import numpy as np
    from scipy import stats as scipy_stats

    from results import stats
    from results.nightly_rows import SHIFT_CLIP, SHIFT_HISTORY, SHIFT_MIN_HISTORY, SHIFT_RECENT
    from results.models import Comparison, ComparisonMethod, Verdict

    metric = result.metric
    candidate = [result.mean, result.variance, result.n]
    oldest_first = nights[::-1]
    recent = min(SHIFT_RECENT, len(nights) + 1)
    # As the product reads them: nights of two far-apart modes within their mode, the history winsorized.
    means = stats.align_modes(np.array([night[2] for night in oldest_first] + [result.mean]),
                              tested=min(recent, len(nights))).values
    found = None
    if len(nights) >= SHIFT_MIN_HISTORY:
        found = stats.recent_shift(means[None, :], history=SHIFT_HISTORY, recent=recent,
                                   min_history=SHIFT_MIN_HISTORY, confidence=metric.confidence_level, clip=SHIFT_CLIP)
    if found is None or int(found.start[0]) < 0:
        return Comparison.objects.create(**common, method=ComparisonMethod.SHIFT, verdict=Verdict.INSUFFICIENT_HISTORY,
                                         ratio=None, bounded=False, inputs={"candidate": candidate})
    m, k = int(found.nights[0]), int(found.history_size[0])
    after, before = means[len(means) - m:], means[len(means) - m - k:len(means) - m]
    welch = (float(scipy_stats.ttest_ind_from_stats(after.mean(), after.std(ddof=1), m, before.mean(),
                                                    before.std(ddof=1), k, equal_var=False).pvalue)
             if m >= 2 else None)
    bounded = bool(found.bounded[0])
    low, high = (float(found.low[0]), float(found.high[0])) if bounded else (None, None)
    return Comparison.objects.create(
        **common, method=ComparisonMethod.SHIFT, ratio=float(found.ratio[0]), ci_low=low, ci_high=high,
        bounded=bounded, statistic=float(found.statistic[0]), df=k + m - 2, pvalue=float(found.pvalue[0]),
        verdict=_verdict(low, high, metric.threshold, metric.direction),
        inputs={"candidate": candidate, "first_run": ([night[1] for night in oldest_first] + [result.run_id])[-m],
                "pooled_runs": [night[1] for night in oldest_first[len(oldest_first) - m + 1:]] + [result.run_id],
                "history_runs": [night[1] for night in nights[m - 1:m - 1 + k]],
                "welch_pvalue": welch, "unadjusted_pvalue": float(found.unadjusted_pvalue[0])})


def _fieller(mean_new: float, error_new: float, mean_old: float, error_old: float,
             h2: float) -> tuple[float | None, float | None]:
    """Fieller's limits of mean_new / mean_old from the variances of the two means; (None, None) if unbounded."""
    a = mean_old ** 2 - h2 * error_old
    if a <= 0.0:
        return None, None
    product = mean_new * mean_old
    root = math.sqrt(max(product ** 2 - a * (mean_new ** 2 - h2 * error_new), 0.0))
    return (product - root) / a, (product + root) / a


def _verdict(low: float | None, high: float | None, threshold: float, direction: str) -> str:
    from results.models import Verdict

    if low is None:
        return Verdict.INCONCLUSIVE
    above, below = low > 1.0 + threshold, high < 1.0 - threshold
    worse, better = (above, below) if direction == "lower_is_better" else (below, above)
    if worse:
        return Verdict.REGRESSION
    if better:
        return Verdict.IMPROVEMENT
    if threshold > 0.0 and low >= 1.0 - threshold and high <= 1.0 + threshold:
        return Verdict.NO_CHANGE
    return Verdict.INCONCLUSIVE


def _pair(seconds: tuple[float, float]) -> str:
    return f"{seconds[0]:.2f} / {seconds[1]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, nargs="+", default=[1_000, TARGET_SERIES],
                        help="series per run; two or more sizes show whether the queries grow with them")
    parser.add_argument("--history", type=int, default=10, help="earlier nights of every series")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(series=arguments.series[0], history=arguments.history, repeats=arguments.repeats)))
        return
    print(f"compare_run (end to end) against a per-series ORM loop (baseline), {arguments.history}-night histories; "
          f"seconds min / median of {arguments.repeats}, {os.cpu_count()} CPUs")
    print(f"{'database':<11}{'series':>7}{'end to end s':>15}{'queries':>8}{'peak MiB':>9}"
          f"{'baseline s':>15}{'queries':>8}{'peak MiB':>9}{'baseline/e2e':>13}{'load':>13}")
    verdicts = []
    for database in chosen(arguments.database):
        queries = {}
        for series in arguments.series:
            options = ["--series", str(series), "--history", str(arguments.history),
                       "--repeats", str(arguments.repeats)]
            figures = measure_in_child(__file__, options, database=database, debug=False)
            e2e, base = spread(figures["end_to_end"]), spread(figures["baseline"])
            print(f"{figures['database']:<11}{series:>7,}{_pair(e2e):>15}{figures['end_to_end_queries']:>8,}"
                  f"{figures['end_to_end_peak_bytes'] / 2**20:>9.0f}{_pair(base):>15}"
                  f"{figures['baseline_queries']:>8,}{figures['baseline_peak_bytes'] / 2**20:>9.0f}"
                  f"{base[1] / e2e[1]:>12.1f}x{figures['load_before']:>7.2f}->{figures['load_after']:.2f}")
            queries[series] = figures["end_to_end_statements"]
            if series == TARGET_SERIES:
                verdicts.append(f"{figures['database']}: {e2e[1]:.2f} s median end to end, "
                                f"{'meets' if e2e[1] <= TARGET_SECONDS else 'MISSES'} <= {TARGET_SECONDS:g} s")
        if len(queries) > 1:
            sizes = sorted(queries)
            grows = "constant" if sum(queries[sizes[0]].values()) == sum(queries[sizes[-1]].values()) else "GROWS"
            verdicts.append(f"{figures['database']}: queries "
                            + " -> ".join(f"{sum(queries[s].values())} ({s:,} series)" for s in sizes) + f": {grows}")
            grown = {kind: queries[sizes[-1]].get(kind, 0) - queries[sizes[0]].get(kind, 0)
                     for kind in queries[sizes[-1]]}
            verdicts += [f"    +{count} {kind}" for kind, count in sorted(grown.items(), key=lambda item: -item[1])
                         if count > 0]
    print_verdicts(f"target (issue 18): end to end <= {TARGET_SECONDS:g} s for {TARGET_SERIES:,} series on SQLite "
                   "and PostgreSQL; a number of queries that does not grow with the series", verdicts,
                   "baseline/e2e: median over median. peak MiB: tracemalloc during one call. load: 1-minute average "
                   "before -> after the timed repeats")


if __name__ == "__main__":
    main()
