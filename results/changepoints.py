"""Change points of nightly histories: where a series of run means shifted, stored as annotations (spec §8).

A series is one metric on one machine over the completed runs of one branch (the project's default
branch unless told otherwise; pull-request runs are one-offs, never part of a history). Its units are
the runs: each run contributes its mean, and run-to-run variation is the noise a shift must stand out
from (spec §8; Kalibera & Jones §8.4.2). The change points are placed by E-Divisive with Medians (spec
§4; James, Kejariwal & Matteson 2014), each one is then sized by comparing the segment after it with
the segment before it (Welch's test and Fieller's ratio, spec §5–§6, the runs of a segment as its units).
Both are :mod:`results.stats` (:func:`~results.stats.locate_shifts`, :func:`~results.stats.compare_summaries`);
this module reads the histories and stores what they find.

Cost: EDM over a 500-night series takes about 50 ms. The per-run trigger therefore re-examines only the
series whose history comparison was not "no change" (:func:`series_to_check`); a daily scan
(:func:`scan_change_points`) walks every series in chunks, so shifts too small for one night's verdict
are still found once enough nights show them.
"""

from collections import defaultdict
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from . import stats
from .models import (
    ChangePoint,
    Comparison,
    ComparisonMethod,
    OUTSIDE_SERIES,
    Metric,
    Result,
    Run,
    RunStatus,
    Verdict,
)

# Newest runs per series: a year and a half of nightlies, about 50 ms of EDM per series.
HISTORY_LIMIT = 500
# Metrics per machine analysed in one transaction of the daily scan.
CHUNK_SIZE = 200
# History verdicts after which a run's series are re-examined: everything but "no change" (and
# "insufficient history", too short for a change point anyway).
FLAGGED = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.INCONCLUSIVE)

LIMIT_TOO_SMALL = "limit must be at least {minimum} runs (two segments of the shortest); got {limit}."


@transaction.atomic
def detect_change_points(*, metric_ids: list[int], machine_id: int, branch: str | None = None,
                         limit: int = HISTORY_LIMIT) -> list[ChangePoint]:
    """Find, size and store the change points of each metric's history on a machine.

    The history of a metric is its completed, non-pull-request runs on `branch` (each project's default
    branch when None), the newest `limit` of them, in time order. Every change point found by
    :func:`results.stats.locate_shifts` is stored at the first run of its new segment with the ratio of the mean of the
    run means after it to the mean before it (up to the neighbouring change points), the Fieller interval
    at the metric's confidence level and Welch's p-value (:func:`results.stats.compare_summaries`: a
    segment's mean, variance (ddof=1) and number of runs). A shift away from a zero mean has no ratio and
    is not stored.

    The series' earlier change points within the analysed window (from its oldest analysed run on) are
    replaced in the same transaction; older ones, beyond `limit`, are kept as history. Three queries (read,
    delete, insert), whatever the number of series.
    """
    if limit < 2 * stats.SHIFT_MIN_SEGMENT:
        raise ValueError(LIMIT_TOO_SMALL.format(minimum=2 * stats.SHIFT_MIN_SEGMENT, limit=limit))
    on_branch = Q(run__revision__branch=F("run__project__default_branch") if branch is None else branch)
    rows = (
        Result.objects.filter(on_branch, metric_id__in=metric_ids, run__machine_id=machine_id,
                              run__status=RunStatus.COMPLETED)
        .exclude(run__kind__in=OUTSIDE_SERIES)
        .alias(newness=Window(RowNumber(), partition_by=F("metric_id"),
                              order_by=[F("run__started_at").desc(), F("run_id").desc()]))
        .filter(newness__lte=limit)
        .order_by()  # sorted per series below; the models' default ordering would join four more tables
        .values("metric_id", "run_id", "run__started_at", "mean", "metric__confidence_level")
    )
    series: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        series[row["metric_id"]].append(row)

    window_start: dict[datetime, list[int]] = defaultdict(list)
    found: list[tuple[int, int, float]] = []  # (metric, run, confidence) of every change point
    before: list[np.ndarray] = []
    after: list[np.ndarray] = []
    for metric_id, history in series.items():
        history.sort(key=lambda row: (row["run__started_at"], row["run_id"]))
        window_start[history[0]["run__started_at"]].append(metric_id)
        means = np.array([row["mean"] for row in history])
        bounds = (0, *stats.locate_shifts(means), means.size)
        for start, split, stop in zip(bounds, bounds[1:-1], bounds[2:]):
            found.append((metric_id, history[split]["run_id"], history[split]["metric__confidence_level"]))
            before.append(means[start:split])
            after.append(means[split:stop])

    stale = Q()
    for since, metrics in window_start.items():
        stale |= Q(metric_id__in=metrics, run__started_at__gte=since)
    if stale:
        ChangePoint.objects.filter(stale, on_branch, machine_id=machine_id).delete()
    return ChangePoint.objects.bulk_create(_sized(found, before, after, machine_id=machine_id))


def series_to_check(*, run_id: int) -> list[int]:
    """The metrics of a run whose comparison with history was not "no change": the series a new run may
    have shifted. The rest wait for the daily scan."""
    return list(
        Comparison.objects.filter(candidate__run_id=run_id, method=ComparisonMethod.HISTORY, verdict__in=FLAGGED)
        .order_by("candidate__metric_id").values_list("candidate__metric_id", flat=True)
    )


def detect_change_points_for_run(*, run_id: int) -> list[ChangePoint]:
    """Re-examine, after a run was compared, the default-branch histories on its machine of the metrics it
    flagged (:func:`series_to_check`)."""
    metric_ids = series_to_check(run_id=run_id)
    if not metric_ids:
        return []
    machine_id = Run.objects.values_list("machine_id", flat=True).get(pk=run_id)
    return detect_change_points(metric_ids=metric_ids, machine_id=machine_id)


def scan_change_points(*, chunk_size: int = CHUNK_SIZE) -> int:
    """Examine every default-branch series, `chunk_size` metrics of one machine at a time; return the number
    of change points stored.

    Each chunk is its own transaction: a failure keeps the chunks already done, and the next scan redoes
    the rest.
    """
    return sum(len(detect_change_points(metric_ids=metric_ids, machine_id=machine_id))
               for machine_id, metric_ids in series_chunks(chunk_size=chunk_size))


def series_chunks(*, chunk_size: int = CHUNK_SIZE) -> list[tuple[int, list[int]]]:
    """Every (machine, metrics) chunk of default-branch series, from two queries.

    The series are the metrics of each project on each machine that ran the project's default branch
    (outside pull requests), not a scan of all results: a metric a machine never measured only yields an
    empty history.
    """
    machines = (
        Run.objects.filter(status=RunStatus.COMPLETED, revision__branch=F("project__default_branch"))
        .exclude(kind__in=OUTSIDE_SERIES).order_by("machine_id", "project_id")
        .values_list("machine_id", "project_id").distinct()
    )
    metrics: dict[int, list[int]] = defaultdict(list)
    for project_id, metric_id in Metric.objects.order_by("id").values_list("benchmark__project_id", "id"):
        metrics[project_id].append(metric_id)
    by_machine: dict[int, list[int]] = defaultdict(list)
    for machine_id, project_id in machines:
        by_machine[machine_id].extend(metrics[project_id])
    return [(machine_id, metric_ids[i : i + chunk_size])
            for machine_id, metric_ids in by_machine.items() for i in range(0, len(metric_ids), chunk_size)]


def _sized(found: list[tuple[int, int, float]], before: list[np.ndarray], after: list[np.ndarray], *,
           machine_id: int) -> list[ChangePoint]:
    """Change points with the ratio after/before, its Fieller interval and Welch's p, sized in one call, each
    at its metric's confidence level."""
    if not found:
        return []
    (mean, variance, n), (base_mean, base_variance, base_n) = (
        np.array([[part.mean(), part.var(ddof=1), part.size] for part in parts]).T for parts in (after, before))
    result = stats.compare_summaries(mean, variance, n.astype(np.int64), base_mean, base_variance,
                                     base_n.astype(np.int64), confidence=np.array([level for _, _, level in found]))
    ratio, low, high, bounded, pvalue = np.broadcast_arrays(
        result.ratio, result.low, result.high, result.bounded, result.pvalue)
    return [
        ChangePoint(metric_id=metric_id, machine_id=machine_id, run_id=run_id, ratio=float(ratio[i]),
                    ci_low=float(low[i]) if bounded[i] else None, ci_high=float(high[i]) if bounded[i] else None,
                    pvalue=float(pvalue[i]))
        for i, (metric_id, run_id, _) in enumerate(found) if np.isfinite(ratio[i])
    ]
