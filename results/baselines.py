"""What each series is compared against (reads only): a nightly series' baseline nights and the nights its
accumulating detection pools (spec §8); a pull request's base result per series.

A series is one metric on one machine over the completed runs of the project's default branch (pull
requests and A/B confirmations are never nights). Its alerts and change points decide which nights count
as its level:

* a change confirmed by measurement, accepted by a person (fixed, won't fix), or settled by a change point
  at its first night (a tested decision, :mod:`results.changepoints`) starts a new level: the nights
  before it no longer count;
* a *suspected* change that nobody has triaged keeps its nights out of the baseline, so a shift the
  nightly comparison missed is never absorbed; each night, the nights since it are pooled against the
  nights before it (:func:`results.stats.shift_since`);
* a dismissed change (by measurement, or marked invalid) gives its nights back, and no shift starting
  at or before the last night it was judged on is tried again.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from .models import SERIES_KINDS, Alert, AlertState, AlertStatus, ChangePoint, Result, Run, RunKind, RunStatus

SHIFT_HISTORY = 30
"""K of the accumulating detection: nights before a start it is compared with (see results.stats.recent_shift)."""
SHIFT_RECENT = 10
"""The most recent nights tried as the first night of a shift. More starts find old shifts, fewer find new ones
sooner (the adjustment for the starts tried is smaller): at a run-to-run sd of 3%, 8 left 8% of 5% steps never
alerted, 10 leave 5%, 12 3% (benchmarks/nightly_detection.py); at 1.5%, 10 alert 95% by the third night, 12 a
night later."""
SHIFT_MIN_HISTORY = 10
"""The fewest nights of a level a shift is tested against. The test takes night means as normal; with 3 to 9
nights a series whose nights fall in one of two modes (bimodal noise) often has all of them in one mode, and
the first night in the other looks like a shift (3 alerts on 4 such series over 40 nights with 3)."""

MATCH_NIGHTS = 5
"""A change point this many nights or fewer from a suspected shift's first night is that shift, settled."""
UNTRIAGED = (AlertStatus.NEW, AlertStatus.ACKNOWLEDGED)
ACCEPTED = (AlertStatus.FIXED, AlertStatus.WONT_FIX)


@dataclass(frozen=True)
class Night:
    run_id: int
    started_at: datetime


@dataclass(frozen=True)
class SeriesBaseline:
    """One series' nights before tonight (oldest first) and how its alerts divide them.

    ``nights`` start at the level before the current one, so that a recent change can still be pooled
    against the nights before it; ``level_start`` is the index of the current level's first night.
    ``carried`` is the alert whose change tonight's shift test pools evidence for, from ``pooled_since``
    (an index in ``nights``): an untriaged suspected change, or a confirmed one that began within the
    last ``SHIFT_RECENT`` nights. ``suspected_since`` is where the nights kept out of the baseline begin;
    ``tried_after`` the index of the last night a dismissed change was judged on (starts after it only).
    """

    nights: tuple[Night, ...]
    level_start: int = 0
    carried: int | None = None
    pooled_since: int | None = None
    suspected_since: int | None = None
    tried_after: int | None = None

    @property
    def history_runs(self) -> list[int]:
        """The runs of the level before tonight (before a suspected change), newest first."""
        stop = len(self.nights) if self.suspected_since is None else self.suspected_since
        return [night.run_id for night in reversed(self.nights[self.level_start:stop])]

    def recent(self, *, limit: int = SHIFT_RECENT) -> int:
        """How many of the newest nights (tonight included) may be tried as a shift's first night."""
        first = self.level_start if self.tried_after is None else max(self.level_start, self.tried_after + 1)
        return max(0, min(limit, len(self.nights) - first + 1))


def series_baselines(run: Run, metric_ids: list[int], *, history_size: int,
                     selected: list[int] | QuerySet | None = None) -> dict[int, SeriesBaseline]:
    """The baseline of each metric's series at ``run`` (a nightly, manual or imported run).

    Reads the series' alerts, then the runs that can matter: the last ``max(history_size, SHIFT_HISTORY +
    SHIFT_RECENT)`` nights, every night since the oldest untriaged suspected change and ``SHIFT_HISTORY``
    nights before it. Three to four queries, whatever the number of series. ``selected``, the same metric ids
    as ``metric_ids`` as a list or a query, is what the alerts and change points are read by (a query is a
    subquery instead of ten thousand parameters).
    """
    series_runs = Run.objects.filter(
        project_id=run.project_id, machine_id=run.machine_id, status=RunStatus.COMPLETED,
        revision__branch=run.project.default_branch, started_at__lt=run.started_at,
    ).filter(kind__in=SERIES_KINDS).exclude(pk=run.pk).order_by("-started_at", "-id")
    states = series_alerts(run, metric_ids if selected is None else selected)
    window = max(history_size, SHIFT_HISTORY + SHIFT_RECENT)
    nights = {pk: started for pk, started in series_runs.values_list("pk", "started_at")[:window]}
    oldest = min((state.suspected_first for state in states.values() if state.suspected is not None), default=None)
    if oldest is not None:
        nights.update(series_runs.filter(started_at__gte=oldest).values_list("pk", "started_at"))
        nights.update(series_runs.filter(started_at__lt=oldest).values_list("pk", "started_at")[:window])
    ordered = sorted((Night(pk, started) for pk, started in nights.items()),
                     key=lambda night: (night.started_at, night.run_id))
    return {metric_id: states.get(metric_id, SeriesAlerts()).baseline(ordered) for metric_id in metric_ids}


@dataclass(frozen=True)
class SeriesAlerts:
    """What a series' alerts and change points say of its nights (times are first nights' and judged nights'
    starts, and change points' runs')."""

    level_since: datetime | None = None
    previous_level_since: datetime | None = None
    change: int | None = None
    suspected: int | None = None
    suspected_first: datetime | None = None
    judged_through: datetime | None = None
    change_points: tuple[datetime, ...] = ()

    def baseline(self, nights: list[Night]) -> SeriesBaseline:
        def index(since: datetime) -> int:
            return next((i for i, night in enumerate(nights) if night.started_at >= since), len(nights))

        boundaries = {0, *(index(since) for since in (self.level_since, self.previous_level_since)
                           if since is not None)}
        carry = None if self.change is None else (self.change, index(self.level_since))
        suspected = self.suspected
        if suspected is not None:
            first = index(self.suspected_first)
            # A change point at a suspected shift's first night settles it: the level moved (spec §8). One
            # elsewhere moves no level by itself: nobody was alerted of it.
            settling = [point for point in map(index, self.change_points) if abs(point - first) <= MATCH_NIGHTS]
            if settling:
                nearest = min(settling, key=lambda point: abs(point - first))
                carry, suspected = (suspected, nearest), None
                boundaries.add(nearest)
        bounds = sorted(boundaries)
        level, previous = bounds[-1], bounds[-2] if len(bounds) > 1 else 0
        kept = tuple(nights[previous:])
        tried = None
        if self.judged_through is not None:
            judged = [i for i, night in enumerate(kept) if night.started_at <= self.judged_through]
            tried = judged[-1] if judged else None
        if suspected is not None:
            since = max(index(self.suspected_first), level) - previous
            return SeriesBaseline(nights=kept, level_start=level - previous, carried=suspected, pooled_since=since,
                                  suspected_since=since, tried_after=tried)
        if carry is not None and carry[1] == level and len(nights) - level + 1 <= SHIFT_RECENT:
            return SeriesBaseline(nights=kept, level_start=level - previous, carried=carry[0],
                                  pooled_since=level - previous, tried_after=tried)
        return SeriesBaseline(nights=kept, level_start=level - previous, tried_after=tried)


def series_alerts(run: Run, metric_ids: list[int] | QuerySet) -> dict[int, SeriesAlerts]:
    """Per metric (its id among ``metric_ids``, a list or a query of them), what the alerts of its series (on
    ``run``'s machine and project, outside pull requests, opened before ``run``) and its change points before
    ``run`` say; two queries."""
    rows = (
        Alert.objects.filter(comparison__candidate__metric_id__in=metric_ids, first_run__machine_id=run.machine_id,
                             first_run__project_id=run.project_id, first_run__started_at__lt=run.started_at)
        .filter(first_run__kind__in=SERIES_KINDS)
        .filter(~Q(comparison__candidate__run_id=run.pk))
        .order_by("first_run__started_at", "pk")
        .values_list("pk", "comparison__candidate__metric_id", "state", "status", "first_run__started_at",
                     "comparison__candidate__run__started_at", "evidence__candidate__run__started_at")
    )
    found: dict[int, dict] = defaultdict(dict)
    for pk, metric_id, state, status, first, opened, judged in rows:
        current = found[metric_id]
        if status in ACCEPTED or (status in UNTRIAGED and state == AlertState.CONFIRMED):
            current.update(previous_level_since=current.get("level_since"), level_since=first, change=pk,
                           suspected=None, suspected_first=None, judged_through=None)
        elif status == AlertStatus.INVALID or state == AlertState.DISMISSED:
            through = max(filter(None, (opened, judged)))
            current["judged_through"] = max(through, current.get("judged_through") or through)
        else:
            current.update(suspected=pk, suspected_first=first)
    points = (ChangePoint.objects.filter(metric_id__in=metric_ids, machine_id=run.machine_id, retracted_at__isnull=True,
                                         run__project_id=run.project_id, run__started_at__lt=run.started_at)
              .order_by("run__started_at").values_list("metric_id", "run__started_at"))
    for metric_id, started in points:
        found[metric_id]["change_points"] = (*found[metric_id].get("change_points", ()), started)
    return {metric_id: SeriesAlerts(**values) for metric_id, values in found.items()}


@dataclass(frozen=True)
class PullRequestBase:
    """The result a pull request's series is compared with, and whether it is of the requested base commit
    (``fallback``: no result of that series on the base commit on this machine, so the newest default-branch
    one before the pull request)."""

    result_id: int
    run_id: int
    fallback: bool


def pull_request_bases(run: Run, metric_ids: list[int]) -> dict[int, PullRequestBase]:
    """Per series (metric on the run's machine), what a pull-request run is compared with; two queries.

    The newest completed result of the series on the base commit (``revision.base_commit``), whatever run
    holds it: the base commit's runs may each hold other benchmarks (several suites, a later import). A
    series without one falls back to its newest default-branch result started no later than the pull
    request, never another pull request's or a confirmation's; a series without either has no base.
    """
    results = Result.objects.filter(metric_id__in=metric_ids, run__project_id=run.project_id,
                                    run__machine_id=run.machine_id, run__status=RunStatus.COMPLETED,
                                    ).exclude(run_id=run.pk)
    base_commit = run.revision.base_commit if run.revision else ""
    found: dict[int, PullRequestBase] = {}
    if base_commit:
        for metric, result, run_id in _newest_per_metric(results.filter(run__revision__commit=base_commit)
                                                          .exclude(run__kind=RunKind.CONFIRMATION)):
            found[metric] = PullRequestBase(result_id=result, run_id=run_id, fallback=False)
    missing = [metric for metric in metric_ids if metric not in found]
    if missing:
        fallback = (results.filter(metric_id__in=missing, run__revision__branch=run.project.default_branch,
                                   run__started_at__lte=run.started_at).filter(run__kind__in=SERIES_KINDS))
        for metric, result, run_id in _newest_per_metric(fallback):
            found[metric] = PullRequestBase(result_id=result, run_id=run_id, fallback=bool(base_commit))
    return found


def _newest_per_metric(results) -> list[tuple[int, int, int]]:
    """(metric id, result id, run id) of each metric's newest result in `results`."""
    newest = results.annotate(recency=Window(RowNumber(), partition_by=[F("metric_id")],
                                             order_by=[F("run__started_at").desc(), F("run_id").desc()]))
    return list(newest.filter(recency=1).values_list("metric_id", "pk", "run_id"))
