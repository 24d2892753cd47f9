"""Change points of nightly histories: where a series of run means shifted, stored as decisions (spec §8).

A series is one metric on one machine over the completed runs of one branch (the project's default
branch unless told otherwise; pull-request runs and A/B confirmations are never part of a history). Its
units are the runs: each run contributes its mean, and run-to-run variation is the noise a shift must
stand out from (spec §8; Kalibera & Jones §8.4.2). A split is found and kept by a permutation-tested rank
scan (:func:`results.stats.rank_shifts`: robust to heavy tails and two-mode noise), sized by comparing the
segment after it with the segment before it (Welch's test and Fieller's ratio, spec §5–§6, the runs of a
segment as its units), and stored only when its size is at least the metric's threshold θ and, on the default
branch, once ``SETTLED_NIGHTS`` nights are since it (younger, it is the nightly shift test's to decide).

A stored change point is never deleted: a later scan that finds it again within ``MOVE_NIGHTS`` nights
moves it (and records the move); one that a scan with enough nights after it no longer finds is retracted
(kept, marked), and the window moving past a change point leaves it as it is.

Cost: a 500-night series takes about 25 ms. The per-run trigger examines only the series whose shift test
flagged a change (:func:`series_to_check`); a daily scan (:func:`results.alerts.scan_change_points`, which
also alerts the change points to act on) walks every series in chunks (:func:`series_chunks`).
"""

from bisect import bisect_right
from collections import defaultdict

import numpy as np
from django.db import transaction
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from . import decisions, stats
from .nightly_rows import SHIFT_RECENT
from .models import (
    Alert,
    ChangeKind,
    ChangePoint,
    Comparison,
    ComparisonMethod,
    Metric,
    Result,
    Run,
    Verdict,
    series_nights,
)

# Newest runs per series: a year and a half of nightlies, about 25 ms of rank scan per series.
HISTORY_LIMIT = 500
# Metrics per machine analysed in one transaction of the daily scan.
CHUNK_SIZE = 200
# Shift verdicts after which a run's series are re-examined: the changes the nightly detection flags.
FLAGGED = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.SUSPECTED_REGRESSION, Verdict.SUSPECTED_IMPROVEMENT)
MIN_SEGMENT = 5
"""Fewest runs in a segment: a working week, so one odd night cannot make a segment."""
MOVE_NIGHTS = MIN_SEGMENT
"""A change point found again within this many runs of a stored one moves it instead of adding one."""
SETTLED_NIGHTS = SHIFT_RECENT
"""A split of a default-branch series is stored (and so shown, and alerted where it should be acted on) only once
this many nights are since its first night, that night included: the nightly shift test's reach (it tries the
newest ``SHIFT_RECENT`` nights as first nights). Within that reach the nightly test, whose false alerts are counted
per night, decides, and a confirmed alert records its change point whatever its age (:func:`record_confirmed`).
The scan runs every night over nearly the same nights, and its permutation test holds its 1% for one look only:
where each night added moves a young split's statistic, flat series at 3% noise scanned every night from night 10
to 40 got a split in 7.0% / 6.4% of series, against 0.9% / 0.8% scanned once, and 1.0% / 2.2% counting only splits
14 nights old (benchmarks/repeated_scans.py, 1,000 series, seeds 14 / 3). Measured at a run-to-run sd of 3%
(benchmarks/nightly_detection.py, seed 14): alerting the scan's change points only from their 14th night took the
confirmed false alerts of change points from 9 to 2 and false alerts per series-night from 0.44% to 0.27%;
storing them only from then took the A/A series carrying one from 12 of 150 to 4, every alert figure unchanged;
on TCPD's annotated series (benchmarks/real_histories.py) precision / recall 0.555 / 0.885 -> 0.600 / 0.890. A step
the nightly test has not found by then sinks into the history it is compared with, and the scan of the whole
series is what still sees it."""
DRIFT_NIGHTS = 30
"""Nights on each side of a change point read to tell a step from a drift: the shift test's history."""
DRIFT_NIGHTS_SINCE = 10
"""Nights since a change point before it is read at all: a drift needs nights to show its slope (on TCPD's
annotated series, reading at 10 nights loses little against reading with every night after it,
``benchmarks/drift_reading.py``)."""

LIMIT_TOO_SMALL = "limit must be at least {minimum} runs (two segments of the shortest); got {limit}."


@transaction.atomic
def detect_change_points(*, metric_ids: list[int], machine_id: int, branch: str | None = None,
                         limit: int = HISTORY_LIMIT) -> list[ChangePoint]:
    """Find, size and store the change points of each metric's history on a machine; return those stored or
    moved.

    The history of a metric is its series' nights (:func:`results.models.series_nights`), or with `branch` its
    runs of that branch (a revision naming it), the newest `limit` of them, in time order. Every split
    :func:`results.stats.rank_shifts` keeps (seeded by the metric, so a scan is reproducible) is sized by
    :func:`results.stats.compare_summaries` on the run means of the segments either side of it (up to the
    neighbouring splits) at the metric's confidence level, and stored at the first run of its new segment
    when the ratio is at least θ away from 1 and, without `branch`, at least ``SETTLED_NIGHTS`` nights are since
    it. A shift away from a zero mean has no ratio and is not stored.
    """
    if limit < 2 * MIN_SEGMENT:
        raise ValueError(LIMIT_TOO_SMALL.format(minimum=2 * MIN_SEGMENT, limit=limit))
    # A named branch is its revisions' (the runs of no revision are the default branch's nights).
    on_branch = series_nights("run__") if branch is None else (
        series_nights("run__", branch=branch) & Q(run__revision__isnull=False))
    rows = (
        Result.objects.filter(on_branch, metric_id__in=metric_ids,
                              run__machine_id=machine_id)
        .alias(newness=Window(RowNumber(), partition_by=F("metric_id"),
                              order_by=[F("run__started_at").desc(), F("run_id").desc()]))
        .filter(newness__lte=limit)
        .order_by()  # sorted per series below; the models' default ordering would join four more tables
        .values("metric_id", "run_id", "run__started_at", "mean", "environment_offset", "metric__confidence_level",
                "metric__threshold")
    )
    series: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        series[row["metric_id"]].append(row)

    found: list[tuple[int, int, float, float]] = []  # (metric, run, confidence, permutation p) of every split
    before: list[np.ndarray] = []
    after: list[np.ndarray] = []
    thresholds: list[float] = []
    read: dict[int, np.ndarray] = {}
    young: dict[int, list[int]] = defaultdict(list)  # by metric, the positions of splits not yet SETTLED_NIGHTS old
    for metric_id, history in series.items():
        history.sort(key=lambda row: (row["run__started_at"], row["run_id"]))
        # Each night's machine environment divided out (results.environment), as the shift detection reads it;
        # nights alternating between two far-apart modes compared within their mode (results.stats.align_modes).
        means = read[metric_id] = stats.align_modes(np.array(
            [row["mean"] * stats.without_environment(row["environment_offset"]) for row in history])).values
        shifts = stats.rank_shifts(means, min_segment=MIN_SEGMENT, alpha=decisions.CHANGE_POINT_LEVEL,
                                     seed=metric_id)
        bounds = (0, *shifts.indices, means.size)
        for start, split, stop, pvalue in zip(bounds, bounds[1:-1], bounds[2:], shifts.pvalues):
            if branch is None and means.size - split < SETTLED_NIGHTS:
                young[metric_id].append(split)  # the nightly test's; it bounds the segment before it all the same
                continue
            found.append((metric_id, history[split]["run_id"], history[split]["metric__confidence_level"], pvalue))
            before.append(means[start:split])
            after.append(means[split:stop])
            thresholds.append(history[split]["metric__threshold"])
    sized = [point for point, threshold in zip(_sized(found, before, after, machine_id=machine_id), thresholds)
             if point is not None and abs(point.ratio - 1.0) >= threshold]
    position = {(metric_id, row["run_id"]): i for metric_id, history in series.items()
                for i, row in enumerate(history)}
    stored, shown = _store(sized, series, position, machine_id=machine_id, young=young)
    _read_kinds(shown, position, read)
    return stored


def _store(points: list[ChangePoint], series: dict[int, list[dict]], position: dict[tuple[int, int], int], *,
           machine_id: int, young: dict[int, list[int]]) -> tuple[list[ChangePoint], list[ChangePoint]]:
    """Insert the new change points; one found within MOVE_NIGHTS runs of a stored one updates it instead,
    recording the move (and taking back a retraction, unless it was retracted with its alert: that alert's decision
    stands). A stored one not found again is retracted when the scan had at least ``2 · MIN_SEGMENT`` runs after it
    (enough to know) and ``MIN_SEGMENT`` before it (where a split can be), and no split too young to store
    (`young`, by metric, positions) lies within MOVE_NIGHTS of it (the same change, placed later: it moves there
    once settled); one outside the scanned runs, or too close to either end of them, is left as it is.
    `position` is each scanned ``(metric, run)``'s index in its series. Returns those stored or moved, and every
    change point now shown within the scanned runs."""
    at_run: dict[tuple[int, int], ChangePoint] = {}
    stored: dict[int, list[ChangePoint]] = defaultdict(list)
    for point in ChangePoint.objects.filter(metric_id__in=list(series), machine_id=machine_id):
        at_run[point.metric_id, point.run_id] = point
        if (point.metric_id, point.run_id) in position:
            stored[point.metric_id].append(point)
    now = timezone.now()
    changed: list[ChangePoint] = []

    def update(old: ChangePoint, point: ChangePoint) -> None:
        stored[point.metric_id].remove(old)
        old.run_id, old.ratio, old.ci_low, old.ci_high, old.pvalue = (
            point.run_id, point.ratio, point.ci_low, point.ci_high, point.pvalue)
        if old.alert_id is None:
            old.retracted_at = None
        changed.append(old)

    # Found again at the same run first; then moves, only ever to runs no change point was at (so no two
    # rows ever share a run, whatever order the database updates them in).
    elsewhere = []
    for point in points:
        old = at_run.get((point.metric_id, point.run_id))
        if old is None:
            elsewhere.append(point)
        else:
            update(old, point)
    new = []
    for point in elsewhere:
        at = position[point.metric_id, point.run_id]
        near = [old for old in stored[point.metric_id]
                if abs(position[point.metric_id, old.run_id] - at) <= MOVE_NIGHTS]
        if not near:
            new.append(point)
            continue
        old = min(near, key=lambda old: (abs(position[point.metric_id, old.run_id] - at), old.pk))
        old.moves = [*old.moves, {"from_run": old.run_id, "to_run": point.run_id, "at": now.isoformat()}]
        update(old, point)
    # Only where the scan could have found it again: a segment's length from the window's start, and enough after.
    retracted = [old for metric_id, left in stored.items() for old in left
                 if old.retracted_at is None and old.alert_id is None
                 and MIN_SEGMENT <= position[metric_id, old.run_id] <= len(series[metric_id]) - 2 * MIN_SEGMENT
                 and all(abs(position[metric_id, old.run_id] - at) > MOVE_NIGHTS for at in young[metric_id])]
    for old in retracted:
        old.retracted_at = now
    if changed or retracted:
        ChangePoint.objects.bulk_update([*changed, *retracted],
                                        ["run", "ratio", "ci_low", "ci_high", "pvalue", "moves", "retracted_at"])
    created = ChangePoint.objects.bulk_create(new)
    shown = [point for point in [*at_run.values(), *created]
             if point.retracted_at is None and (point.metric_id, point.run_id) in position]
    return [*changed, *created], shown


def _read_kinds(shown: list[ChangePoint], position: dict[tuple[int, int], int], means: dict[int, np.ndarray]
                ) -> None:
    """The shown change points of the scanned series read as steps or drifts (:func:`results.stats.read_drifts` at
    the levels of :data:`results.decisions.DRIFT_STEP_LEVEL`), on the night means the scan read (`means`, by
    metric; `position`, a point's index in them): up to ``DRIFT_NIGHTS`` nights on each side, bounded by the
    neighbouring steps. Re-read at every scan, as nights arrive and neighbours move; one not read (fewer than
    ``DRIFT_NIGHTS_SINCE`` nights since it, or too close to a neighbour) keeps what it was read as."""
    by_series: dict[int, list[tuple[int, ChangePoint]]] = defaultdict(list)
    for point in shown:
        at = position[point.metric_id, point.run_id]
        if at:  # the window's first night splits nothing the window holds
            by_series[point.metric_id].append((at, point))
    changed = []
    for metric_id, points in by_series.items():
        values = means[metric_id]
        if np.any(values <= 0):  # no ratio, no line on the logarithm
            continue
        points.sort(key=lambda pair: pair[0])
        reading = stats.read_drifts(values, [at for at, _ in points], step_level=decisions.DRIFT_STEP_LEVEL,
                                    slope_level=decisions.DRIFT_SLOPE_LEVEL, nights=DRIFT_NIGHTS,
                                    nights_since=DRIFT_NIGHTS_SINCE)
        for (_, point), fit, drift in zip(points, reading.fits, reading.drift):
            if fit is None:
                continue
            kind, slope = (ChangeKind.DRIFT, fit.slope) if drift else (ChangeKind.STEP, None)
            if (point.kind, point.drift_per_night) != (kind, slope):
                point.kind, point.drift_per_night = kind, slope
                changed.append(point)
    ChangePoint.objects.bulk_update(changed, ["kind", "drift_per_night"])


def record_confirmed(alerts: list[Alert]) -> list[ChangePoint]:
    """A confirmed alert is a change point (spec §8), one: store one at each alert's first run, sized by its newest
    evidence, unless its series has one within ``MOVE_NIGHTS`` runs of it already (the same change, found by a
    scan: the alert takes the nearest that is no other alert's as its own, where it has none). An alert whose
    first night has moved farther than that from its own change point (its first night is re-estimated nightly)
    moves that change point along, the move recorded, rather than leave it behind and store a second (measured: 2
    of 4 annotated real series, `benchmarks/real_histories.py`, had an alert with two). Two reads, whatever the
    number of alerts (the start times of their series' nights, and their change points), and the writes."""
    recorded, moved, adopted, released = [], [], [], []
    now = timezone.now()
    alerts = [alert for alert in alerts if alert.first_run is not None
              and (alert.evidence or alert.comparison).ratio is not None]
    if not alerts:
        return []

    def key(alert):  # (project, machine, metric) of an alert's series
        return alert.first_run.project_id, alert.first_run.machine_id, alert.comparison.candidate.metric_id

    keys = {key(alert) for alert in alerts}
    starts: dict[tuple[int, int, int], list] = defaultdict(list)
    for project_id, machine_id, metric_id, started in Result.objects.filter(
            series_nights("run__"), _any_of(Q(run__project_id=project, run__machine_id=machine, metric_id=metric)
                                            for project, machine, metric in keys)).values_list(
            "run__project_id", "run__machine_id", "metric_id", "run__started_at"):
        starts[project_id, machine_id, metric_id].append(started)
    for times in starts.values():
        times.sort()
    points: dict[tuple[int, int], list[ChangePoint]] = defaultdict(list)
    for point in ChangePoint.objects.filter(_any_of(Q(metric_id=metric, machine_id=machine)
                                                    for _, machine, metric in keys)).select_related("run"):
        points[point.metric_id, point.machine_id].append(point)
    occupied = {(point.metric_id, point.machine_id, point.run_id) for series in points.values() for point in series}
    for alert in alerts:
        evidence, first = alert.evidence or alert.comparison, alert.first_run
        times = starts[key(alert)]
        metric_id, machine_id = alert.comparison.candidate.metric_id, first.machine_id

        def runs_between(one, other):  # the series' runs started after the earlier, up to the later
            return bisect_right(times, max(one, other)) - bisect_right(times, min(one, other))

        stored = [point for point in points[metric_id, machine_id] if point.retracted_at is None]
        own = next((point for point in stored if point.alert_id == alert.pk), None)
        apart = {point.pk: runs_between(point.run.started_at, first.started_at) for point in stored}
        near = sorted((point for point in stored if apart[point.pk] <= MOVE_NIGHTS),
                      key=lambda point: (apart[point.pk], point.pk))
        if near:
            free = [point for point in near if point.alert_id is None]
            if free and own not in near:
                # The scan found this change first: the alert takes that change point as its own, so that a later
                # scan no longer finding it cannot retract a confirmed alert's change (measured on TCPD's annotated
                # series, benchmarks/real_histories.py: unemployment_nl's confirmed alerts at 55 and 172 were left
                # without one, recall 0.92 -> 0.66, once the scan's young change points were no longer alerted).
                # A change point of its own left far from the night it names now is retracted: one each.
                if own is not None:
                    own.retracted_at = now
                    released.append(own)
                free[0].alert = alert
                adopted.append(free[0])
            continue
        if own is not None:
            moved += _moved_to(own, first, evidence, now, occupied=occupied)
            continue
        point = ChangePoint(metric_id=metric_id, machine_id=machine_id, run=first, ratio=evidence.ratio,
                            ci_low=evidence.ci_low, ci_high=evidence.ci_high, pvalue=evidence.pvalue, alert=alert)
        recorded.append(point)
        points[metric_id, machine_id].append(point)  # another alert of the series in this call finds it near
        occupied.add((metric_id, machine_id, first.pk))
    ChangePoint.objects.bulk_update(moved, ["run", "ratio", "ci_low", "ci_high", "pvalue", "moves"])
    ChangePoint.objects.bulk_update(adopted, ["alert"])
    ChangePoint.objects.bulk_update(released, ["retracted_at"])
    return [*moved, *adopted, *ChangePoint.objects.bulk_create(recorded, ignore_conflicts=True)]


def _any_of(conditions) -> Q:
    """The disjunction of `conditions` (Q objects); matches nothing where there are none."""
    combined = Q(pk__in=[])
    for condition in conditions:
        combined |= condition
    return combined


def retract_for_alerts(*, alerts: QuerySet[Alert] | list[Alert]) -> None:
    """The change points of `alerts` (dismissed, marked invalid, or moved off the night they named) retracted:
    kept, marked, as a re-scan retracts one."""
    ChangePoint.objects.filter(alert__in=alerts, retracted_at__isnull=True).update(retracted_at=timezone.now())


def follow_first_nights(alerts: list[Alert]) -> list[ChangePoint]:
    """Each alert's own change point moved to the alert's first run (the move recorded), where it is elsewhere:
    an alert re-placed at a later night keeps its one change point, at the night it names now."""
    now = timezone.now()
    points = list(ChangePoint.objects.filter(alert__in=alerts, retracted_at__isnull=True).select_related(
        "alert__first_run", "alert__evidence", "alert__comparison"))
    series = _any_of(Q(metric_id=point.metric_id, machine_id=point.machine_id) for point in points)
    occupied = set(ChangePoint.objects.filter(series).values_list("metric_id", "machine_id", "run_id"))
    moved = []
    for point in points:
        alert = point.alert
        if alert.first_run is not None and point.run_id != alert.first_run_id:
            moved += _moved_to(point, alert.first_run, alert.evidence or alert.comparison, now, occupied=occupied)
    ChangePoint.objects.bulk_update(moved, ["run", "ratio", "ci_low", "ci_high", "pvalue", "moves"])
    return moved


def _moved_to(point: ChangePoint, run: Run, evidence, now, *, occupied: set[tuple[int, int, int]]
              ) -> list[ChangePoint]:
    """`point` moved to `run` and sized by `evidence` (a comparison), the move recorded and `run` added to
    `occupied`, the ``(metric, machine, run)`` of every change point, retracted or not; none where one holds that
    run already (one change point a run)."""
    if (point.metric_id, point.machine_id, run.pk) in occupied:
        return []
    occupied.add((point.metric_id, point.machine_id, run.pk))
    point.moves = [*point.moves, {"from_run": point.run_id, "to_run": run.pk, "at": now.isoformat()}]
    point.run = run  # the instance, not its id: a later alert of the series in the same call reads its start time
    if evidence.ratio is not None:
        point.ratio, point.ci_low, point.ci_high, point.pvalue = (
            evidence.ratio, evidence.ci_low, evidence.ci_high, evidence.pvalue)
    return [point]


def series_to_check(*, run_id: int) -> list[int]:
    """The metrics of a run whose comparison with history was not "no change": the series a new run may
    have shifted. The rest wait for the daily scan."""
    return list(
        Comparison.objects.filter(candidate__run_id=run_id, method=ComparisonMethod.SHIFT, verdict__in=FLAGGED)
        .order_by("candidate__metric_id").values_list("candidate__metric_id", flat=True)
    )


def detect_change_points_for_run(*, run_id: int) -> list[ChangePoint]:
    """Re-examine, after a run was compared, the default-branch histories on its machine of the metrics it
    flagged (:func:`series_to_check`): their settled change points found again, moved, sized and read anew (the
    young change the run flagged is its alert's, :data:`SETTLED_NIGHTS`)."""
    metric_ids = series_to_check(run_id=run_id)
    if not metric_ids:
        return []
    machine_id = Run.objects.values_list("machine_id", flat=True).get(pk=run_id)
    return detect_change_points(metric_ids=metric_ids, machine_id=machine_id)


def series_chunks(*, chunk_size: int = CHUNK_SIZE) -> list[tuple[int, list[int]]]:
    """Every (machine, metrics) chunk of default-branch series, from two queries.

    The series are the metrics of each project on each machine that ran the project's default branch
    (outside pull requests), not a scan of all results: a metric a machine never measured only yields an
    empty history.
    """
    machines = (
        Run.objects.filter(series_nights()).order_by("machine_id", "project_id")
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


def _sized(found: list[tuple[int, int, float, float]], before: list[np.ndarray], after: list[np.ndarray], *,
           machine_id: int) -> list[ChangePoint | None]:
    """Each split as a change point with the ratio after/before and its Fieller interval, sized in one call at
    its metric's confidence level (None where the ratio is not finite), its p-value the permutation test's."""
    if not found:
        return []
    (mean, variance, n), (base_mean, base_variance, base_n) = (
        np.array([[part.mean(), part.var(ddof=1), part.size] for part in parts]).T for parts in (after, before))
    result = stats.compare_summaries(mean, variance, n.astype(np.int64), base_mean, base_variance,
                                     base_n.astype(np.int64), confidence=np.array([level for _, _, level, _ in found]))
    ratio, low, high, bounded = np.broadcast_arrays(result.ratio, result.low, result.high, result.bounded)
    return [
        ChangePoint(metric_id=metric_id, machine_id=machine_id, run_id=run_id, ratio=float(ratio[i]),
                    ci_low=float(low[i]) if bounded[i] else None, ci_high=float(high[i]) if bounded[i] else None,
                    pvalue=float(pvalue)) if np.isfinite(ratio[i]) else None
        for i, (metric_id, run_id, _, pvalue) in enumerate(found)
    ]
