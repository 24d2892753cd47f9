"""Comparisons of stored runs (writes): nightly against history, pull requests against their base,
false-discovery control across a run, and the alerts regressions open.

Every comparison is computed by the numerical core (:mod:`results.stats`) over all series of a
run at once, from a constant number of queries, and stored with the numbers that fed it.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from scipy.stats import false_discovery_control

from . import stats
from .models import (
    Alert,
    AlertEvent,
    AlertGroup,
    AlertStatus,
    Comparison,
    ComparisonMethod,
    Result,
    Run,
    RunKind,
    RunStatus,
    Verdict,
)
from .services import bulk_insert
from .signals import alerts_opened

MIN_HISTORY = 3
SUMMARY_FIELDS = ("id", "run_id", "metric_id", "mean", "variance", "n")


@dataclass(frozen=True)
class Candidate:
    """The candidate side of a run's comparisons, one entry per series (result)."""

    ids: np.ndarray
    metric_ids: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    n: np.ndarray
    threshold: np.ndarray
    direction: np.ndarray
    confidence: np.ndarray


def _candidate(run: Run) -> Candidate:
    rows = list(Result.objects.filter(run=run).values(
        *SUMMARY_FIELDS, "metric__threshold", "metric__direction", "metric__confidence_level").order_by("id"))
    return Candidate(
        ids=np.array([row["id"] for row in rows], dtype=np.int64),
        metric_ids=np.array([row["metric_id"] for row in rows], dtype=np.int64),
        mean=np.array([row["mean"] for row in rows], dtype=float),
        variance=np.array([row["variance"] for row in rows], dtype=float),
        n=np.array([row["n"] for row in rows], dtype=np.int64),
        threshold=np.array([row["metric__threshold"] for row in rows], dtype=float),
        direction=np.array([row["metric__direction"] for row in rows], dtype=object),
        confidence=np.array([row["metric__confidence_level"] for row in rows], dtype=float),
    )


def history_runs(run: Run) -> list[int]:
    """The last K completed runs of the project's default branch on the run's machine, newest first."""
    return list(
        Run.objects.filter(project_id=run.project_id, machine_id=run.machine_id, status=RunStatus.COMPLETED,
                           revision__branch=run.project.default_branch, started_at__lt=run.started_at)
        .exclude(kind=RunKind.PR).exclude(pk=run.pk)
        .order_by("-started_at", "-id").values_list("pk", flat=True)[: run.project.history_size]
    )


@transaction.atomic
def compare_run(*, run_id: int) -> list[Comparison]:
    """Compare a stored run with its baseline, store the comparisons and open alerts.

    A nightly (or manual, imported) run is compared with the last K runs of the default branch
    on the same machine, run-to-run variance included (spec §8), and, beside it, naively with
    the previous run alone. A pull-request run is compared with its base revision's run.
    Comparing a run again replaces its earlier comparisons (and their alerts).
    """
    run = Run.objects.select_related("project", "revision").get(pk=run_id)
    Comparison.objects.filter(candidate__run=run).delete()
    Run.objects.filter(pk=run.pk).update(compared_at=timezone.now())
    candidate = _candidate(run)
    if candidate.ids.size == 0:
        return []
    if run.kind == RunKind.PR:
        baseline = pull_request_baseline(run)
        comparisons = [] if baseline is None else _pairwise(candidate, baseline) + _bootstrap(run, baseline)
    else:
        history = history_runs(run)
        comparisons = _against_history(candidate, history)
        if history:
            comparisons += _pairwise(candidate, history[0], naive=True)
    _add_qvalues(comparisons)
    bulk_insert(comparisons)
    _open_alerts(run)
    transaction.on_commit(lambda: _enqueue_change_points(run.pk))
    return comparisons


def _enqueue_change_points(run_id: int) -> None:
    from .tasks import detect_change_points_for_run, enqueue

    enqueue(detect_change_points_for_run, run_id)


def pending_runs(*, older_than: timedelta = timedelta(minutes=2)) -> list[int]:
    """Completed runs not compared yet (their enqueue was lost), oldest first."""
    return list(
        Run.objects.filter(status=RunStatus.COMPLETED, compared_at__isnull=True,
                           created_at__lt=timezone.now() - older_than)
        .order_by("started_at").values_list("pk", flat=True)
    )


def pull_request_baseline(run: Run) -> int | None:
    """The run a pull request is compared with: its base commit's newest run on the same machine,
    else the newest default-branch run before it."""
    runs = Run.objects.filter(project_id=run.project_id, machine_id=run.machine_id, status=RunStatus.COMPLETED) \
        .exclude(pk=run.pk).order_by("-started_at", "-id")
    base_commit = run.revision.base_commit if run.revision else ""
    if base_commit:
        found = runs.filter(revision__commit=base_commit).values_list("pk", flat=True).first()
        if found is not None:
            return found
    return runs.filter(revision__branch=run.project.default_branch, started_at__lte=run.started_at) \
        .exclude(kind=RunKind.PR).values_list("pk", flat=True).first()


def _baseline_rows(run_ids: list[int], metric_ids: np.ndarray) -> dict[int, list[dict]]:
    """History results per metric, in the order of `run_ids`."""
    wanted = set(metric_ids.tolist())
    order = {run_id: index for index, run_id in enumerate(run_ids)}
    by_metric: dict[int, list[dict]] = defaultdict(list)
    for row in Result.objects.filter(run_id__in=run_ids).values(*SUMMARY_FIELDS):
        if row["metric_id"] in wanted:
            by_metric[row["metric_id"]].append(row)
    for rows in by_metric.values():
        rows.sort(key=lambda row: order[row["run_id"]])
    return by_metric


def _against_history(candidate: Candidate, history: list[int]) -> list[Comparison]:
    by_metric = _baseline_rows(history, candidate.metric_ids)
    sizes = np.array([len(by_metric.get(metric, ())) for metric in candidate.metric_ids.tolist()])
    comparisons: list[Comparison | None] = [None] * candidate.ids.size
    for index in np.flatnonzero(sizes < MIN_HISTORY):
        comparisons[index] = Comparison(
            candidate_id=int(candidate.ids[index]), method=ComparisonMethod.HISTORY,
            verdict=Verdict.INSUFFICIENT_HISTORY, threshold=float(candidate.threshold[index]),
            confidence_level=float(candidate.confidence[index]),
            inputs={"history_runs": [row["run_id"] for row in by_metric.get(int(candidate.metric_ids[index]), [])],
                    "needed": MIN_HISTORY},
        )
    # Series with the same number of history results are compared in one vectorized call.
    for size in np.unique(sizes[sizes >= MIN_HISTORY]):
        chosen = np.flatnonzero(sizes == size)
        rows = [by_metric[int(candidate.metric_ids[i])] for i in chosen]
        history_mean = np.array([[row["mean"] for row in series] for series in rows])
        history_variance = np.array([[row["variance"] for row in series] for series in rows])
        history_n = np.array([[row["n"] for row in series] for series in rows])
        for confidence in np.unique(candidate.confidence[chosen]):
            part = candidate.confidence[chosen] == confidence
            picked = chosen[part]
            result = stats.compare_with_history(
                candidate.mean[picked], candidate.variance[picked], candidate.n[picked], history_mean[part],
                history_variance[part], history_n[part], confidence=float(confidence))
            verdicts = np.atleast_1d(stats.verdict(np.atleast_1d(result.low), np.atleast_1d(result.high),
                                                   threshold=candidate.threshold[picked],
                                                   direction=candidate.direction[picked]))
            numbers = _numbers(result)
            for j, (i, series) in enumerate(zip(picked, [rows[k] for k in np.flatnonzero(part)])):
                comparisons[i] = _stored(
                    candidate, i, ComparisonMethod.HISTORY, numbers[j], str(verdicts[j]),
                    inputs={"history_runs": [row["run_id"] for row in series],
                            "history": [[row["mean"], row["variance"], row["n"]] for row in series],
                            "between_variance": float(np.atleast_1d(result.between_variance)[j]),
                            "baseline": float(np.atleast_1d(result.baseline)[j]),
                            "band": [float(np.atleast_1d(result.prediction_low)[j]),
                                     float(np.atleast_1d(result.prediction_high)[j])]},
                )
    return comparisons


def _pairwise(candidate: Candidate, baseline_run: int, *, naive: bool = False) -> list[Comparison]:
    rows = {row["metric_id"]: row for row in Result.objects.filter(run_id=baseline_run).values(*SUMMARY_FIELDS)}
    method = ComparisonMethod.PREVIOUS if naive else ComparisonMethod.PAIRWISE
    chosen = np.array([i for i, metric in enumerate(candidate.metric_ids.tolist())
                       if metric in rows and rows[metric]["n"] >= 2 and candidate.n[i] >= 2], dtype=np.int64)
    if chosen.size == 0:
        return []
    base = [rows[int(candidate.metric_ids[i])] for i in chosen]
    result = stats.compare_summaries(
        candidate.mean[chosen], candidate.variance[chosen], candidate.n[chosen],
        np.array([row["mean"] for row in base]), np.array([row["variance"] for row in base]),
        np.array([row["n"] for row in base]), threshold=candidate.threshold[chosen],
        direction=candidate.direction[chosen], confidence=candidate.confidence[chosen])
    numbers, verdicts = _numbers(result), np.atleast_1d(result.verdict)
    return [
        _stored(candidate, i, method, numbers[j], str(verdicts[j]), baseline_id=row["id"],
                inputs={"baseline_run": baseline_run, "baseline": [row["mean"], row["variance"], row["n"]]})
        for j, (i, row) in enumerate(zip(chosen, base))
    ]


BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_MAX_SERIES = 200


def _bootstrap(run: Run, baseline_run: int) -> list[Comparison]:
    """The hierarchical bootstrap ratio (spec §6, RRR) where both sides kept raw samples.

    Seeded by the run id, so recomputing gives the same interval. It resamples every level, so
    its cost grows with the samples: it is computed for pull requests (a few series, a decision
    to make), not for every nightly series, and for at most ``BOOTSTRAP_MAX_SERIES`` series.
    """
    with_samples = Result.objects.filter(samples__isnull=False).select_related("metric")
    candidates = {r.metric_id: r for r in with_samples.filter(run=run)[:BOOTSTRAP_MAX_SERIES]}
    baselines = {r.metric_id: r for r in with_samples.filter(run_id=baseline_run, metric_id__in=list(candidates))}
    rng = np.random.default_rng(run.pk)
    comparisons = []
    for metric_id, result in candidates.items():
        base = baselines.get(metric_id)
        if base is None or result.samples_array().ndim != base.samples_array().ndim:
            continue
        metric = result.metric
        shapes = [list(result.samples_array().shape), list(base.samples_array().shape)]
        too_small = [side for side, shape in zip(("candidate", "baseline"), shapes) if min(shape) < 2]
        if too_small:
            comparisons.append(Comparison(
                candidate=result, baseline=base, method=ComparisonMethod.BOOTSTRAP, ratio=result.mean / base.mean
                if base.mean else None, bounded=False, verdict=Verdict.INCONCLUSIVE, threshold=metric.threshold,
                confidence_level=metric.confidence_level,
                inputs={"baseline_run": baseline_run, "shapes": shapes, "skipped": (
                    f"not resampled: the {' and the '.join(too_small)} samples have fewer than 2 units at a level "
                    "(shapes " + " and ".join(map(str, shapes)) + "), so a bootstrap cannot vary them")},
            ))
            continue
        ratio = stats.ratio_bootstrap(result.samples_array(), base.samples_array(),
                                      confidence=metric.confidence_level, n_resamples=BOOTSTRAP_RESAMPLES, rng=rng)
        verdict = stats.verdict(ratio.low, ratio.high, threshold=metric.threshold, direction=metric.direction)
        comparisons.append(Comparison(
            candidate=result, baseline=base, method=ComparisonMethod.BOOTSTRAP, ratio=ratio.ratio,
            ci_low=ratio.low if ratio.bounded else None, ci_high=ratio.high if ratio.bounded else None,
            bounded=bool(ratio.bounded), verdict=str(verdict), threshold=metric.threshold,
            confidence_level=metric.confidence_level,
            inputs={"baseline_run": baseline_run, "resamples": BOOTSTRAP_RESAMPLES, "seed": run.pk, "shapes": shapes},
        ))
    return comparisons


def _numbers(result) -> list[dict]:
    """One dict of plain numbers per series of a vectorized result."""
    shape = np.shape(np.atleast_1d(result.ratio))
    columns = {name: np.broadcast_to(getattr(result, name), shape).tolist()
               for name in ("ratio", "low", "high", "bounded", "statistic", "pvalue", "df")}
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def _stored(candidate: Candidate, i: int, method: str, numbers: dict, verdict: str, *, inputs: dict,
            baseline_id: int | None = None) -> Comparison:
    bounded = numbers["bounded"]
    return Comparison(
        candidate_id=int(candidate.ids[i]), baseline_id=baseline_id, method=method,
        ratio=numbers["ratio"] if np.isfinite(numbers["ratio"]) else None,
        ci_low=numbers["low"] if bounded else None, ci_high=numbers["high"] if bounded else None,
        bounded=bounded, statistic=numbers["statistic"] if np.isfinite(numbers["statistic"]) else None,
        df=numbers["df"], pvalue=numbers["pvalue"], verdict=verdict, threshold=float(candidate.threshold[i]),
        confidence_level=float(candidate.confidence[i]),
        inputs={"candidate": [float(candidate.mean[i]), float(candidate.variance[i]), int(candidate.n[i])],
                **inputs},
    )


def _add_qvalues(comparisons: list[Comparison]) -> None:
    """Benjamini–Hochberg q-values across one run's comparisons of each method.

    A run touches hundreds of series; at α = 5% per series, some would be "significant" by
    chance alone. The q-value controls the false discovery rate across them, and it is the
    q-value, not the p-value, that the dashboard uses to flag significance.
    """
    by_method: dict[str, list[Comparison]] = defaultdict(list)
    for comparison in comparisons:
        if comparison.pvalue is not None:
            by_method[comparison.method].append(comparison)
    for group in by_method.values():
        qvalues = false_discovery_control([comparison.pvalue for comparison in group], method="bh")
        for comparison, qvalue in zip(group, np.atleast_1d(qvalues)):
            comparison.qvalue = float(min(qvalue, 1.0))


def _open_alerts(run: Run) -> None:
    """A regression by the run's decisive method (history for nightlies, pairwise for pull requests)
    opens an alert; one group per run, notified once after commit."""
    decisive = ComparisonMethod.PAIRWISE if run.kind == RunKind.PR else ComparisonMethod.HISTORY
    regressions = list(Comparison.objects.filter(candidate__run=run, method=decisive, verdict=Verdict.REGRESSION)
                       .order_by("candidate__metric__benchmark__name", "candidate__metric__name")
                       .values_list("pk", flat=True))
    if not regressions:
        return
    group, _ = AlertGroup.objects.get_or_create(run=run)
    Alert.objects.bulk_create([Alert(group=group, comparison_id=comparison) for comparison in regressions])
    alert_ids = list(Alert.objects.filter(group=group).values_list("pk", flat=True))
    transaction.on_commit(lambda: _announce_alerts(group.pk, alert_ids))


def _announce_alerts(group_id: int, alert_ids: list[int]) -> None:
    """After commit: notify the project, and tell the apps built on results (the runner confirms)."""
    from .tasks import enqueue, notify_alert_group

    enqueue(notify_alert_group, group_id)
    alerts_opened.send(sender=AlertGroup, group_id=group_id, alert_ids=alert_ids)


@transaction.atomic
def set_alert_status(*, alert: Alert, status: str, note: str = "", user) -> Alert:
    """Triage an alert (new, acknowledged, invalid, fixed, won't fix), recording who, when and why."""
    if not user.is_authenticated:
        raise PermissionDenied("Log in to triage alerts.")
    if status not in AlertStatus.values:
        raise ValidationError({"status": f"Choose one of {', '.join(AlertStatus.values)}."})
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    if alert.status != status or note:
        AlertEvent.objects.create(alert=alert, old_status=alert.status, new_status=status, note=note, user=user)
        alert.status, alert.updated_by = status, user
        alert.save(update_fields=["status", "updated_by", "updated_at"])
    return alert
