"""The one comparison service. Every comparison the dashboard shows is computed here or in its pure part,
:mod:`results.pairwise_rows`, through :mod:`results.stats`, as :class:`results.rows.ComparisonRow` rows:

* a nightly against the last K runs of its branch, run-to-run variance included (spec §8), and beside
  it, naively, against the previous run alone;
* a pull request against its base run, with the hierarchical bootstrap where both kept samples;
* any two stored runs, on the fly (the compare page and ``manage.py compare RUN RUN``);
* two result files (``manage.py compare --files``: :func:`results.pairwise_rows.compare_series` alone, without Django).

:func:`compare_run` stores a run's rows as :class:`results.models.Comparison` rows (and opens its alerts);
:func:`results.stored_rows.stored_rows` reads stored comparisons back as rows, so stored and computed comparisons are
shown the same way. One confidence level per comparison, decided when it is computed (the candidate metric's),
is the level of its interval and of both sides' half-widths.
"""

import gc
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from operator import attrgetter
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from . import alerts, environment, machine_state, pairwise_rows, presentation, queue, stats
from .baselines import (
    RunNoise,
    SeriesBaseline,
    pull_request_bases,
    run_to_run_noise,
    series_baselines,
)
from .pairwise_rows import BOOTSTRAP_WITHIN_RUNS, Bootstrap, NothingToCompare, compare_series
from .models import (
    OUTSIDE_SERIES,
    SESSION_KINDS,
    Alert,
    Comparison,
    ComparisonChunk,
    ComparisonMethod,
    Result,
    Run,
    RunKind,
    RunStatus,
    Verdict,
)
from .decisions import ALPHA, final_verdicts
from .nightly_rows import (
    MIN_HISTORY,
    Carried,
    StoredNight,
    history_rows,
    night_series,
    shift_rows,
)
from .rows import ComparisonRow, Interval
from .series import Series
from .bulk import bulk_inserter, bulk_update_values

STORED_RESAMPLES = 2_000
"""Replicates of a stored pull-request bootstrap: computed for every series of a pull request."""
BOOTSTRAP_MAX_SERIES = 200


# --- Computing -------------------------------------------------------------------------------------------


# --- Comparing a stored run, and storing it --------------------------------------------------------------


def series_from_results(results: Iterable[Result], *, with_samples: bool) -> list[Series]:
    """Stored results as series, with their metric's threshold, direction and confidence level.

    ``with_samples=False`` leaves the raw samples untouched, so a queryset may defer them.
    """
    return [
        Series(
            benchmark=result.metric.benchmark.name, metric=result.metric.name, unit=result.metric.unit,
            direction=result.metric.direction, threshold=result.metric.threshold,
            confidence_level=result.metric.confidence_level,
            summary=stats.SampleSummary(
                mean=result.mean, subsession_size=result.subsession_size, variance=result.variance, n=result.n,
                sample_count=result.sample_count,
                autocorrelation=math.nan if result.autocorrelation is None else result.autocorrelation,
                independent=result.independent),
            samples=result.samples_array() if with_samples else None,
            metric_id=result.metric_id, result_id=result.pk, run_id=result.run_id,
            display_unit=result.metric.display_unit,
        )
        for result in results
    ]


def series_from_values(values: dict, samples: np.ndarray | None = None) -> Series:
    """A stored result read with ``values()`` (:data:`SUMMARY_FIELDS`) as a series."""
    return Series(
        benchmark=values["metric__benchmark__name"], metric=values["metric__name"], unit=values["metric__unit"],
        direction=values["metric__direction"], threshold=values["metric__threshold"],
        confidence_level=values["metric__confidence_level"],
        summary=stats.SampleSummary(
            mean=values["mean"], subsession_size=values["subsession_size"], variance=values["variance"],
            n=values["n"], sample_count=values["n"] * values["subsession_size"], autocorrelation=math.nan,
            independent=values["independent"]),
        samples=samples, metric_id=values["metric_id"], result_id=values["id"], run_id=values["run_id"],
        display_unit=values["metric__display_unit"])


def stored_series(*, run_id: int, with_samples: bool) -> list[Series]:
    """A stored run's results as series (their raw samples only when asked for)."""
    results = Result.objects.filter(run_id=run_id).select_related("metric__benchmark").order_by("id")
    if not with_samples:
        results = results.defer("samples")
    return series_from_results(results, with_samples=with_samples)


SUMMARY_FIELDS = ("id", "run_id", "metric_id", "mean", "variance", "n", "subsession_size", "independent",
                  "metric__name", "metric__unit", "metric__direction", "metric__threshold", "metric__confidence_level",
                  "metric__benchmark__name", "metric__display_unit")


def _stored_series(queryset) -> list[Series]:
    """Stored results as series (summaries only), with their ids, from one ``values()`` query."""
    return [series_from_values(values) for values in queryset.values(*SUMMARY_FIELDS).order_by("id")]


@contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector walks the live objects each time 700 more are allocated than freed; a comparison
    of 10,000 series keeps a million alive to its end, so collection took 30% of its time, and found nothing:
    its objects are freed by their reference counts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@_cycle_collection_paused()
@transaction.atomic
def compare_run(*, run_id: int) -> int:
    """Compare a stored run with its baseline, store the comparisons and open or carry its alerts.

    A nightly (or manual, imported) run is compared with the last K nights of its series' level on the
    default branch and the same machine, run-to-run variance included (spec §8); beside it, naively, with
    the previous run alone; and each series is tested for a shift at one of its recent nights, evidence
    pooled over nights (:mod:`results.baselines` says which nights count). A pull-request run is compared
    with its base revision's run. Comparing a run again replaces its earlier comparisons (and their alerts).
    Returns the number of comparisons stored.
    """
    run = Run.objects.select_related("project", "revision").get(pk=run_id)
    delete_comparisons(run)
    Run.objects.filter(pk=run.pk).update(compared_at=timezone.now())
    candidates = _stored_series(Result.objects.filter(run=run))
    # A confirmation settles its alert instead, a bisection's step decides in its session; a cancelled session's
    # partial runs are kept, never compared.
    if not candidates or run.kind in SESSION_KINDS or run.status != RunStatus.COMPLETED:
        return 0
    carried: dict[int, int] = {}
    if run.kind == RunKind.PR:
        metric_ids = [series.metric_id for series in candidates]
        bases = pull_request_bases(run, metric_ids)
        ids = {metric: base.result_id for metric, base in bases.items()}
        batches: Iterable[list[Entry]] = [
            _against_results(candidates, {series.metric_id: series for series in _stored_series(
                Result.objects.filter(pk__in=ids.values()))}, method=ComparisonMethod.PAIRWISE,
                fallbacks={metric for metric, base in bases.items() if base.fallback},
                noise=run_to_run_noise(run, metric_ids))
            + _bootstrap_against_results(run, ids)]
    else:
        environment.match_environment(run=run)
        carried, batches = _nightly_entries(run, candidates,
                                            selected=Result.objects.filter(run=run).values("metric_id"))
    stored = 0
    with bulk_inserter(Comparison) as insert:
        # A nightly's batches hold one method each (q-values are taken across a method's comparisons, so each
        # batch has its own), and on PostgreSQL the server stores one while the next is computed; a pull
        # request is one batch.
        for entries in batches:
            rows = [row for row, _, _ in entries]
            qvalues, verdicts = final_verdicts([(row.method, row.pvalue, row.ratio, row.threshold, row.direction,
                                                 row.verdict) for row in rows])
            insert(_stored_columns(entries, qvalues=qvalues, verdicts=verdicts), rows=len(rows))
            stored += len(rows)
    alerts.open_alerts(run, carried=carried)
    transaction.on_commit(lambda: _enqueue_change_points(run.pk))
    return stored


def _nightly_entries(run: Run, candidates: list[Series], *,
                     selected: QuerySet | None = None) -> tuple[dict[int, int], Iterator[list["Entry"]]]:
    """The alerts a nightly's series carry (metric id → alert id), and its rows, computed one method at a time:
    against its history, its shifts, and against its previous night. ``selected`` is a query of the
    candidates' metric ids, for the queries to filter on (a subquery instead of ten thousand parameters).
    Every query is made before this returns; the rows are computed as they are iterated, without one."""
    metric_ids = [series.metric_id for series in candidates]
    selected = metric_ids if selected is None else selected
    found = series_baselines(run, metric_ids, history_size=run.project.history_size)
    offsets = dict(Result.objects.filter(run=run, metric_id__in=selected, environment_offset__isnull=False)
                   .values_list("pk", "environment_offset"))
    nights = _series_nights(candidates, found, selected, history_size=run.project.history_size, offsets=offsets)
    carried = {metric: baseline.carried for metric, baseline in found.items() if baseline.carried is not None}
    return carried, _nightly_batches(candidates, nights)


# --- A large nightly compared in chunks, by several analysis workers -------------------------------------


def begin_comparison(*, run_id: int, chunk_series: int | None = None) -> list[int]:
    """Compare a stored run whole (:func:`compare_run`) and return []; or, for a completed nightly of more
    than ``chunk_series`` series (``PILOTWEB_COMPARISON_CHUNK_SERIES``), forget its earlier comparisons, split
    its series into chunks for the analysis workers to compare at once (:func:`compare_chunk`) and return the
    chunks' ids."""
    chunk_series = chunk_series or settings.PILOTWEB_COMPARISON_CHUNK_SERIES
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        metric_ids = list(Result.objects.filter(run=run).order_by("metric_id").values_list("metric_id", flat=True))
        if (len(metric_ids) <= chunk_series or run.status != RunStatus.COMPLETED
                or run.kind in OUTSIDE_SERIES):
            chunked = False
        else:
            chunked = True
            delete_comparisons(run)
            # Every chunk divides out the same environment: recognised once, for the whole run.
            environment.match_environment(run=run)
            # compared_at is set by the chunk that completes the comparison; the catch-up leaves a run alone
            # while its chunks are pending (pending_runs).
            Run.objects.filter(pk=run.pk).update(compared_at=None)
            chunks = ComparisonChunk.objects.bulk_create([
                ComparisonChunk(run=run, index=index, metric_ids=metric_ids[start:start + chunk_series])
                for index, start in enumerate(range(0, len(metric_ids), chunk_series))])
    if not chunked:
        compare_run(run_id=run_id)
        return []
    return [chunk.pk for chunk in chunks]


@_cycle_collection_paused()
def compare_chunk(*, chunk_id: int, worker: str = "") -> bool:
    """Compare one chunk's series as :func:`compare_run` does and store their rows, their q-values left for the
    end; the chunk that finds itself the last of its run to finish completes the run's comparison
    (:func:`_complete_chunked`) and returns True. A chunk already done, or replaced by a new comparison of its
    run, is skipped."""
    with transaction.atomic():
        chunk = (ComparisonChunk.objects.select_for_update().select_related("run__project")
                 .filter(pk=chunk_id, finished_at__isnull=True).first())
        if chunk is None:
            return False
        run = chunk.run
        candidates = _stored_series(Result.objects.filter(run=run, metric_id__in=chunk.metric_ids))
        carried, batches = _nightly_entries(run, candidates)
        with bulk_inserter(Comparison) as insert:
            for entries in batches:
                insert(_stored_columns(entries, qvalues=[None] * len(entries),
                                       verdicts=[row.verdict for row, _, _ in entries]), rows=len(entries))
        chunk.carried, chunk.worker, chunk.finished_at = carried, worker[:200], timezone.now()
        chunk.save(update_fields=["carried", "worker", "finished_at"])
    with transaction.atomic():
        if ComparisonChunk.objects.filter(run=run, finished_at__isnull=True).exists():
            return False
        # Two chunks finishing at once may both see none left: the run's row decides which completes it.
        if not Run.objects.filter(pk=run.pk, compared_at__isnull=True).update(compared_at=timezone.now()):
            return False
        _complete_chunked(run)
    return True


def _complete_chunked(run: Run) -> None:
    """The end of a chunked comparison: q-values across all the run's comparisons of each method, the
    suspected verdicts they decide (as :func:`compare_run` computes them), the alerts."""
    stored = list(Comparison.objects.filter(candidate__run=run, pvalue__isnull=False).values_list(
        "pk", "method", "pvalue", "ratio", "threshold", "verdict", "candidate__metric__direction"))
    qvalues, verdicts = final_verdicts([(method, pvalue, ratio, threshold, direction, verdict)
                                        for _, method, pvalue, ratio, threshold, verdict, direction in stored])
    bulk_update_values(Comparison, ["qvalue", "verdict"], [
        (entry[0], qvalue, verdict) for entry, qvalue, verdict in zip(stored, qvalues, verdicts)])
    carried = {int(metric): alert for chunk in run.comparison_chunks.all() for metric, alert in chunk.carried.items()}
    alerts.open_alerts(run, carried=carried)
    transaction.on_commit(lambda: _enqueue_change_points(run.pk))


def pending_chunks(*, older_than: timedelta = timedelta(minutes=30)) -> list[int]:
    """Chunks of a comparison not finished long after they were planned (their worker was lost)."""
    return list(ComparisonChunk.objects.filter(finished_at__isnull=True, created_at__lt=timezone.now() - older_than)
                .order_by("pk").values_list("pk", flat=True))


# A computed row with the ids of the stored results it compares (candidate, baseline or None).
Entry = tuple[ComparisonRow, int, int | None]


def delete_comparisons(run: Run) -> None:
    """Delete a run's stored comparisons: their alerts first (through the ORM, which deletes their events and
    unlinks confirmation sessions), other alerts' evidence among them unset, then the comparisons, as nothing
    else refers to them; a few queries per ``DELETE_BATCH`` comparisons. The ORM's own delete would load every
    comparison to collect what refers to it. The chunks of an earlier comparison in chunks go too."""
    ComparisonChunk.objects.filter(run=run).delete()
    # Ids read first, then used as lists: "id IN (a subquery of a join)" was planned as nested loops over whole
    # tables when their statistics were stale (minutes a run, seen on PostgreSQL, twice).
    results = list(Result.objects.filter(run=run).values_list("pk", flat=True))
    for start in range(0, len(results), DELETE_BATCH):
        # Unordered: Comparison's default order joins five tables.
        stored = Comparison.objects.filter(candidate_id__in=results[start:start + DELETE_BATCH]).order_by()
        ids = list(stored.values_list("pk", flat=True))
        for first in range(0, len(ids), DELETE_BATCH):
            batch = ids[first:first + DELETE_BATCH]
            Alert.objects.filter(comparison_id__in=batch).delete()
            Alert.objects.filter(evidence_id__in=batch).update(evidence=None)
        stored._raw_delete(stored.db)


DELETE_BATCH = 5_000
"""Ids per query of :func:`delete_comparisons`: within every database's limit of parameters."""


def _enqueue_change_points(run_id: int) -> None:
    queue.enqueue(queue.DETECT_CHANGE_POINTS, run_id)


def pending_runs(*, older_than: timedelta = timedelta(minutes=2)) -> list[int]:
    """Completed runs not compared yet (their enqueue was lost), oldest first; not those whose chunks are
    being compared."""
    return list(
        Run.objects.filter(status=RunStatus.COMPLETED, compared_at__isnull=True,
                           created_at__lt=timezone.now() - older_than)
        .exclude(pk__in=ComparisonChunk.objects.filter(finished_at__isnull=True).values("run_id"))
        .order_by("started_at").values_list("pk", flat=True)
    )


class SeriesNights(NamedTuple):
    """What a nightly's rows are computed from, per candidate (in their order): its history (newest first, at most
    K nights), the nights of its newest segment a new shift is tested on (oldest first), how many of the newest
    nights a shift may start at, the change whose evidence tonight adds to (or None), and its newest earlier night
    as a series (metric id → series), for the naive comparison; and each candidate as its shift is tested
    (tonight's machine environment divided out)."""

    histories: list[list[StoredNight]]
    segments: list[list[StoredNight]]
    earlier_segments: list[list[StoredNight]]
    recent: list[int]
    carried: list[Carried | None]
    previous: dict[int, Series]
    tested: list[Series]


def _series_nights(candidates: list[Series], baselines: dict[int, SeriesBaseline], selected: list[int] | QuerySet,
                   *, history_size: int, offsets: dict[int, float | None]) -> SeriesNights:
    """Each candidate's earlier nights read (one query; ``selected`` holds the candidates' metric ids, as a list
    or a query) and divided as its baseline says; ``offsets``: each candidate's environment offset by result id."""
    by_metric = _earlier_nights(baselines, selected)
    nights = SeriesNights([], [], [], [], [], {}, [])
    for series in candidates:
        baseline = baselines[series.metric_id]
        stored = by_metric.get(series.metric_id, {})

        def present(first: int, baseline=baseline, stored=stored) -> list[StoredNight]:
            # A shift is tested on the nights' means with their machine environment divided out.
            return [stored[night.run_id].without_environment() for night in baseline.nights[first:]
                    if night.run_id in stored]

        nights.segments.append(present(baseline.segment_start))
        nights.earlier_segments.append(
            present(baseline.previous_start)[:-len(nights.segments[-1]) or None] if baseline.segment_start else [])
        nights.histories.append([stored[run_id] for run_id in baseline.history_runs if run_id in stored]
                                [:history_size])
        nights.recent.append(baseline.recent())
        carried = None
        if baseline.carried is not None:
            earlier = present(baseline.carried_from)
            since = len(earlier) - len(nights.segments[-1])
            worse_is_up = series.direction == "lower_is_better"
            # The newest of this series' nights up to the one its alert was opened on.
            by_then = {night.run_id for night in baseline.nights[:(baseline.carried_opened or 0) + 1]}
            latest = max((j for j, night in enumerate(earlier) if night.run_id in by_then), default=since)
            carried = Carried(alert=baseline.carried, nights=earlier, since=since,
                              sign=1 if baseline.carried_worse == worse_is_up else -1, latest=latest)
        nights.carried.append(carried)
        nights.tested.append(_without_environment(series, offsets.get(series.result_id)))
        newest = next((stored[night.run_id] for night in reversed(baseline.nights) if night.run_id in stored), None)
        if newest is not None:
            nights.previous[series.metric_id] = night_series(series, newest)
    return nights


def _nightly_batches(candidates: list[Series], nights: SeriesNights) -> Iterator[list[Entry]]:
    """Each candidate against the last K nights of its level, then tested for a recent shift, then against its
    previous night: three batches of rows, each computed when the one before has been taken."""
    rows = history_rows(candidates, nights.histories)
    yield [(row if row.verdict != Verdict.INSUFFICIENT_HISTORY else replace(
        row, inputs={"history_runs": [s.run_id for s in found], "needed": MIN_HISTORY}), series.result_id, None)
        for row, found, series in zip(rows, nights.histories, candidates)]
    shifts = shift_rows(nights.tested, nights.segments, recent=nights.recent, carried=nights.carried,
                        previous=nights.earlier_segments)
    yield [(row, series.result_id, None) for row, series in zip(shifts, candidates)]
    yield _against_results(candidates, nights.previous, method=ComparisonMethod.PREVIOUS)


def _earlier_nights(baselines: dict[int, SeriesBaseline],
                    selected: list[int] | QuerySet) -> dict[int, dict[int, StoredNight]]:
    """The stored results of the series' earlier nights (their metric ids ``selected``), by metric id and run
    id, from one query."""
    runs = {night.run_id for baseline in baselines.values() for night in baseline.nights}
    if not runs:
        return {}
    # Unordered: the model's default ordering would join four tables and sort 100,000 rows on disk.
    found = Result.objects.filter(run_id__in=runs, metric_id__in=selected).order_by().values_list(
        "metric_id", "run_id", "id", "mean", "variance", "n", "subsession_size", "independent", "environment_offset")
    # Read by the cursor: the ORM's per-row converters took half the time of 100,000 rows.
    by_metric: dict[int, dict[int, StoredNight]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(*found.query.sql_with_params())
        for metric, run, pk, mean, variance, n, size, independent, offset in cursor.fetchall():
            by_metric[metric][run] = StoredNight(pk, run, mean, variance, n, size, bool(independent), offset or 0.0)
    return by_metric


def _without_environment(series: Series, offset: float | None) -> Series:
    """Tonight's series with the night's machine environment divided out (:mod:`results.environment`)."""
    if not offset:
        return series
    factor = stats.without_environment(offset)
    summary = series.summary
    return replace(series, samples=None, summary=replace(summary, mean=summary.mean * factor,
                                                          variance=summary.variance * factor * factor))


def _against_results(candidates: list[Series], found: dict[int, Series], *, method: str,
                     fallbacks: set[int] = frozenset(), noise: dict[int, RunNoise] | None = None) -> list[Entry]:
    """Each candidate against one stored result of its series (``found``: metric id → its series), two runs,
    with the run-to-run noise its nightly history measured where ``noise`` is given (metric id → it; a series
    without claims no change; None: the naive comparison with the previous night, shown beside the history's);
    a series in `fallbacks` is compared with a result that is not of the base commit asked for."""
    pairs = [(found[series.metric_id], series) for series in candidates
             if series.metric_id in found and found[series.metric_id].summary.n >= 2 and series.summary.n >= 2]

    def inputs(base: Series, cand: Series) -> dict:
        numbers = {"baseline_run": base.run_id, "baseline": [
            base.summary.mean, base.summary.variance, base.summary.n, base.summary.subsession_size,
            base.summary.independent]}
        if noise and cand.metric_id in noise:
            numbers["run_noise_from"] = noise[cand.metric_id].run_id
        return {"inputs": {**numbers, "base_fallback": True} if cand.metric_id in fallbacks else numbers}

    measured = None if noise is None else [noise.get(cand.metric_id) for _, cand in pairs]
    rows = pairwise_rows.pairwise_rows(pairs, method=method, context=inputs, run_noise=None if measured is None else [
        None if found is None else (found.variance, found.df) for found in measured])
    return [(row, cand.result_id, base.result_id) for row, (base, cand) in zip(rows, pairs)]



def _bootstrap_against_results(run: Run, baselines: dict[int, int]) -> list[Entry]:
    """The hierarchical bootstrap ratio where both sides kept raw samples (spec §6), seeded by the run id so a
    recomputation gives the same interval. Its cost grows with the samples: computed for pull requests (a
    few series, a decision to make), for at most ``BOOTSTRAP_MAX_SERIES`` series. ``baselines``: metric id →
    the result it is compared with. It resamples the two runs' readings only, so its interval has no run-to-run
    variance in it (spec §8, a pull request is one run against one run): it is shown, and decides nothing (the
    pairwise row, which carries that variance, is the pull request's verdict)."""
    with_samples = Result.objects.filter(samples__isnull=False).select_related("metric__benchmark")
    candidates = {r.metric_id: r for r in with_samples.filter(run=run, metric_id__in=list(baselines))
                  [:BOOTSTRAP_MAX_SERIES]}
    baselines = {r.metric_id: r for r in with_samples.filter(pk__in=[baselines[m] for m in candidates])}
    options = Bootstrap(resamples=STORED_RESAMPLES, seed=run.pk)
    entries = []
    for metric, result in candidates.items():
        if metric not in baselines:
            continue
        base, cand = series_from_results([baselines[metric], result], with_samples=True)
        shapes = [list(cand.samples.shape), list(base.samples.shape)]
        resampled = pairwise_rows.bootstrap_ratio(base, cand, confidence=cand.confidence_level, options=options)
        inputs: dict = {"baseline_run": baselines[metric].run_id, "shapes": shapes}
        if resampled is None:
            inputs["skipped"] = ("not resampled: a side has fewer than 2 units at a level (shapes "
                                 + " and ".join(map(str, shapes)) + "), so a bootstrap cannot vary them")
            interval = Interval(ratio=cand.summary.mean / base.summary.mean if base.summary.mean else None,
                                low=None, high=None, bounded=False)
            verdict = Verdict.INCONCLUSIVE
        else:
            inputs.update(resamples=STORED_RESAMPLES, seed=run.pk,
                          within_runs=str(stats.verdict(resampled.low, resampled.high, threshold=cand.threshold,
                                                        direction=cand.direction)))
            interval = pairwise_rows.interval_of(resampled)
            verdict = Verdict.INCONCLUSIVE
        row = ComparisonRow(
            **pairwise_rows.identity(cand), method=ComparisonMethod.BOOTSTRAP,
            baseline=pairwise_rows.side_of(base, None),
            candidate=pairwise_rows.side_of(cand, None), ratio=interval.ratio, low=interval.low, high=interval.high,
            bounded=interval.bounded, statistic=None, df=None, pvalue=None, qvalue=None, verdict=str(verdict),
            threshold=cand.threshold, confidence_level=cand.confidence_level, bootstrap=interval,
            verdict_from="bootstrap", inputs=inputs, note=BOOTSTRAP_WITHIN_RUNS)
        entries.append((row, result.pk, baselines[metric].pk))
    return entries


_STORED_FIELDS = {"method": "method", "ratio": "ratio", "ci_low": "low", "ci_high": "high", "bounded": "bounded",
                  "statistic": "statistic", "df": "df", "pvalue": "pvalue", "threshold": "threshold",
                  "confidence_level": "confidence_level"}
"""The stored comparison's fields that are a computed row's attributes (field → attribute)."""


def _stored_columns(entries: Sequence[Entry], *, qvalues: Sequence[float | None],
                    verdicts: Sequence[str]) -> dict[str, Sequence]:
    """Computed rows as the columns of their stored comparisons of two results, with the numbers that fed each;
    their q-values and final verdicts are decided across the run (spec §7)."""
    rows = [row for row, _, _ in entries]
    return {"candidate_id": [candidate for _, candidate, _ in entries],
            "baseline_id": [baseline for _, _, baseline in entries],
            **{field: list(map(attrgetter(name), rows)) for field, name in _STORED_FIELDS.items()},
            "qvalue": qvalues, "verdict": verdicts,
            "inputs": [{"candidate": [row.candidate.mean, row.candidate.variance, row.candidate.n], **row.inputs}
                       for row in rows]}


# --- Two stored runs, on the fly -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunComparison:
    """Two runs compared on the fly, series by series (nothing is stored)."""

    baseline: Run
    candidate: Run
    rows: list[ComparisonRow]
    counts: dict[str, int]
    only_baseline: list[str]
    only_candidate: list[str]
    not_compared: list[str]
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.rows)

    @property
    def state_differences(self) -> list[str]:
        """How the machine's state differed between the two runs, enough to move their numbers."""
        return machine_state.state_differences(self.baseline.environment, self.candidate.environment,
                                               names=("the baseline", "the candidate"))


def compare_stored_runs(*, baseline_id: int, candidate_id: int, limit: int | None = None,
                        bootstrap: Bootstrap | None = None, alpha: float = ALPHA, threshold: float | None = None,
                        empty_ok: bool = True) -> RunComparison:
    """Any two stored runs, series by series (matched by benchmark and metric name, so runs of different
    projects can be compared); q-values across the compared series. ``limit`` keeps the most notable rows
    (worst first), every series still counted; ``threshold`` replaces the metrics' own. With ``empty_ok``
    false, :class:`NothingToCompare` is raised instead of returning no rows.

    Raises Run.DoesNotExist, its ``missing`` the ids that name no run."""
    runs = {run.pk: run for run in Run.objects.select_related("project", "machine", "revision")
            .filter(pk__in=[baseline_id, candidate_id])}
    missing = [run_id for run_id in dict.fromkeys((baseline_id, candidate_id)) if run_id not in runs]
    if missing:
        error = Run.DoesNotExist(f"No run{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}.")
        error.missing = missing
        raise error
    baseline, candidate = (stored_series(run_id=run_id, with_samples=bootstrap is not None)
                           for run_id in (baseline_id, candidate_id))
    try:
        compared = compare_series(baseline, candidate, alpha=alpha, threshold=threshold, bootstrap=bootstrap)
    except NothingToCompare as error:
        if not empty_ok:
            raise
        compared = error.comparison
    machine = runs[candidate_id].machine.name
    rows = [replace(row, machine=machine, run_id=candidate_id) for row in compared.rows]
    return RunComparison(
        baseline=runs[baseline_id], candidate=runs[candidate_id], rows=rows if limit is None else rows[:limit],
        counts=presentation.verdict_counts(rows), only_baseline=compared.only_baseline,
        only_candidate=compared.only_candidate, not_compared=compared.not_compared, total=len(rows))
