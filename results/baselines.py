"""What each series is compared against (reads only): a nightly series' baseline nights, the nights its
detection scans for a new shift and the nights an open alert's evidence pools (spec §8); a pull request's base
result per series, and the run-to-run noise its nightly history measured.

A series is one metric on one machine over its nights (:func:`results.models.series_nights`: the
completed runs of the project's default branch or of no revision; pull requests and A/B confirmations are never
nights). It is a sequence of segments: every change it is known or
suspected to have made starts one, at the change's first night. The changes are its alerts that no
measurement or person dismissed, and its change points (:mod:`results.changepoints`, stored once
:data:`results.changepoints.SETTLED_NIGHTS` nights are since them), which settle the alert
they fall near or are a change of their own:

* a new shift is looked for among the nights of the newest segment only, against the nights of that segment
  before it: a later shift is never pooled into an earlier change, whatever the state of its alert, and a
  step inside an alert's nights is found as a change of its own (spec §8, revised 2026-11-26);
* the newest segment's alert, while it is suspected (or confirmed within ``SHIFT_RECENT`` nights), gathers
  evidence each night: the nights since its first night pooled against the segment before it
  (:func:`results.stats.shift_since`);
* the nightly comparison's baseline is the nights of the newest *level*: since the newest change confirmed by
  measurement, accepted by a person or settled by a change point, and before any suspected one, so that an
  unconfirmed change never becomes the baseline it is judged against;
* a dismissed change (by measurement, or marked invalid) is no boundary, and no shift starting at or before its
  first night is tried again (the same false alarm is not raised twice; a real shift that began the night after
  it still can be).
"""

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from .models import (
    SESSION_KINDS,
    Alert,
    AlertState,
    AlertStatus,
    ChangePoint,
    Comparison,
    ComparisonMethod,
    Result,
    Run,
    RunStatus,
    Verdict,
    nights_before,
    series_nights,
)
from .nightly_rows import SHIFT_HISTORY, SHIFT_RECENT

MATCH_NIGHTS = 5
"""A change point this many nights or fewer from a suspected shift's first night (and not after the night its
alert was opened) is that shift, settled."""
UNTRIAGED = (AlertStatus.NEW, AlertStatus.ACKNOWLEDGED)
ACCEPTED = (AlertStatus.FIXED, AlertStatus.WONT_FIX)


def is_change(state: str, status: str) -> bool:
    """Whether an alert stands as a change of its series: not marked invalid, and not dismissed unless a person
    accepted it (fixed, won't fix)."""
    return status != AlertStatus.INVALID and (state != AlertState.DISMISSED or status in ACCEPTED)


@dataclass(frozen=True)
class Night:
    run_id: int
    started_at: datetime


@dataclass(frozen=True)
class SeriesBaseline:
    """One series' nights before tonight (oldest first) and how its changes divide them.

    ``nights`` start at the segment before the newest one (``previous_start``), so that the newest change can still
    be pooled against the nights before it, and their spread lends the newest segment's tests its precision.
    ``segment_start`` is the index of the newest segment's first night: a new shift is tested on the nights from
    there on. ``level_start`` is where the newest level begins, ``suspected_since``
    where the nights of a suspected change begin (the baseline stops before it). ``carried`` is the alert whose
    change tonight's evidence is for, at ``segment_start``, pooled against the nights from ``carried_from``
    (the segment before it); ``carried_worse`` says whether that change was for the worse (which way its first
    night may be re-estimated), ``carried_opened`` the index of the night its alert was opened on (the latest
    its first night may be re-estimated to: the shift was there that night). ``tried_after`` is the index of the
    newest first night of a dismissed change (starts after it only).
    """

    nights: tuple[Night, ...]
    level_start: int = 0
    segment_start: int = 0
    previous_start: int = 0
    suspected_since: int | None = None
    carried: int | None = None
    carried_from: int | None = None
    carried_worse: bool = True
    carried_opened: int | None = None
    tried_after: int | None = None

    @property
    def history_runs(self) -> list[int]:
        """The runs of the level before tonight (before a suspected change), newest first."""
        stop = len(self.nights) if self.suspected_since is None else self.suspected_since
        return [night.run_id for night in reversed(self.nights[self.level_start:stop])]

    def recent(self, *, limit: int = SHIFT_RECENT) -> int:
        """How many of the newest nights (tonight included) may be tried as a new shift's first night."""
        first = self.segment_start if self.tried_after is None else max(self.segment_start, self.tried_after + 1)
        return max(0, min(limit, len(self.nights) - first + 1))


def series_baselines(run: Run, metric_ids: list[int], *, history_size: int) -> dict[int, SeriesBaseline]:
    """The baseline of each metric's series at ``run`` (a nightly, manual or imported run).

    Reads the series' alerts, then the runs that can matter: the last ``max(history_size, SHIFT_HISTORY +
    SHIFT_RECENT)`` nights, every night since the oldest first night of a change whose evidence is still pooled,
    and ``SHIFT_HISTORY`` nights before it. Five to six queries, whatever the number of series.
    """
    series_runs = nights_before(run)
    states = series_alerts(run, metric_ids)
    window = max(history_size, SHIFT_HISTORY + SHIFT_RECENT)
    nights = {pk: started for pk, started in series_runs.values_list("pk", "started_at")[:window]}
    oldest = min((state.pooled_first for state in states.values() if state.pooled_first is not None), default=None)
    if oldest is not None:
        nights.update(series_runs.filter(started_at__gte=oldest).values_list("pk", "started_at"))
        nights.update(series_runs.filter(started_at__lt=oldest).values_list("pk", "started_at")[:window])
    ordered = sorted((Night(pk, started) for pk, started in nights.items()),
                     key=lambda night: (night.started_at, night.run_id))
    return {metric_id: states.get(metric_id, SeriesAlerts()).baseline(ordered) for metric_id in metric_ids}


@dataclass(frozen=True)
class Change:
    """A change of a series that divides its nights: an alert's (``alert``), or a change point's (None).
    ``level``: confirmed, accepted or settled, so the baseline moves to it; else suspected. ``opened``: the night
    its alert was opened on (its first night is never placed later)."""

    first: datetime
    alert: int | None
    level: bool
    opened: datetime | None = None


@dataclass(frozen=True)
class SeriesAlerts:
    """What a series' alerts and change points say of its nights: its changes in time order, the first night of
    the newest one whose evidence is still pooled, and the newest first night of a dismissed change."""

    changes: tuple[Change, ...] = ()
    dismissed_through: datetime | None = None
    change_points: tuple[datetime, ...] = ()
    carried_alert: int | None = None
    carried_worse: bool = True
    pooled_first: datetime | None = None

    def baseline(self, nights: list[Night]) -> SeriesBaseline:
        def index(since: datetime) -> int:
            return next((i for i, night in enumerate(nights) if night.started_at >= since), len(nights))

        changes = list(self.changes)
        points = [index(point) for point in self.change_points]
        # A change point near a suspected change's first night settles it: the level moved (spec §8). The alert
        # keeps its own first night: the scan's night can lie a few nights off (a scan's segments are 5 nights at
        # least), and moving the change there would split it, its own step found again inside its nights.
        for position, change in enumerate(changes):
            if change.level or change.alert is None:
                continue
            at = index(change.first)
            latest = len(nights) if change.opened is None else index(change.opened)
            if any(abs(point - at) <= MATCH_NIGHTS and point <= latest for point in points):
                changes[position] = replace(change, level=True)
        # A change point far from every alert moves no level by itself: nobody was alerted of it, and a shift that
        # is still to be alerted must not become the level it is tested against.
        bounds = sorted({(index(change.first), change.level, change.alert) for change in changes},
                        key=lambda bound: (bound[0], bound[2] or 0))
        starts = [at for at, _, _ in bounds]
        segment = starts[-1] if starts else 0
        previous = starts[-2] if len(starts) > 1 else 0
        levels = [at for at, level, _ in bounds if level]
        level = levels[-1] if levels else 0
        suspected = next((at for at, is_level, _ in bounds if not is_level and at >= level), None)
        carried = bounds[-1][2] if bounds and bounds[-1][2] == self.carried_alert else None
        if carried is not None and bounds[-1][1] and len(nights) - segment + 1 > SHIFT_RECENT:
            carried = None  # a confirmed change is carried for its first SHIFT_RECENT nights only
        opened = next((change.opened for change in self.changes if carried and change.alert == carried), None)
        # The nights kept start at the segment before the newest one (the carried change's history, and the
        # spread the newest segment's tests borrow), or at the newest level (the baseline) if it is earlier.
        first = min(previous, level)
        kept = tuple(nights[first:])
        tried = None
        if self.dismissed_through is not None:
            dismissed = [i for i, night in enumerate(kept) if night.started_at <= self.dismissed_through]
            tried = dismissed[-1] if dismissed else None
        return SeriesBaseline(
            nights=kept, level_start=level - first, segment_start=segment - first, previous_start=previous - first,
            suspected_since=None if suspected is None else suspected - first, carried=carried,
            carried_from=None if carried is None else previous - first, carried_worse=self.carried_worse,
            carried_opened=None if opened is None else index(opened) - first, tried_after=tried)


def series_alerts(run: Run, metric_ids: list[int]) -> dict[int, SeriesAlerts]:
    """Per metric (its id among ``metric_ids``), what the alerts of its series (on
    ``run``'s machine and project, outside pull requests, opened before ``run``) and its change points before
    ``run`` say; three queries.

    An alert that is neither dismissed nor marked invalid is a change; the newest one's evidence is carried
    (pooled tonight) while it is untriaged and suspected, or confirmed within its first ``SHIFT_RECENT`` nights
    (decided where its nights are known, :meth:`SeriesAlerts.baseline`)."""
    # The machine's alerts first, then their comparisons by id (unordered: Comparison's default order joins five
    # tables): no join from the alerts to every result of the series, and the metrics matched here rather than
    # by a subquery. On PostgreSQL with stale statistics either was planned as nested loops over whole tables,
    # a minute a night.
    wanted = set(metric_ids)
    alerts = list(
        Alert.objects.filter(first_run__machine_id=run.machine_id, first_run__project_id=run.project_id,
                             first_run__started_at__lt=run.started_at)
        .filter(series_nights("first_run__", branch=run.project.default_branch))
        .order_by("first_run__started_at", "pk")
        .values_list("pk", "comparison_id", "state", "status", "first_run__started_at"))
    compared = {pk: (metric_id, verdict, candidate_run, opened) for pk, metric_id, verdict, candidate_run, opened in
                Comparison.objects.filter(pk__in=[alert[1] for alert in alerts]).order_by().values_list(
                    "pk", "candidate__metric_id", "verdict", "candidate__run_id", "candidate__run__started_at")}
    rows = [(pk, metric_id, state, status, first, verdict, opened)
            for pk, comparison_id, state, status, first in alerts
            for metric_id, verdict, candidate_run, opened in [compared[comparison_id]]
            if metric_id in wanted and candidate_run != run.pk]
    found: dict[int, dict] = defaultdict(lambda: {"changes": []})
    for pk, metric_id, state, status, first, verdict, opened in rows:
        current = found[metric_id]
        if not is_change(state, status):
            current["dismissed_through"] = max(first, current.get("dismissed_through") or first)
            continue
        level = status in ACCEPTED or state == AlertState.CONFIRMED
        current["changes"].append(Change(first=first, alert=pk, level=level, opened=opened))
        # Evidence is pooled for the newest change while its alert is untriaged: suspected, or confirmed within
        # its first SHIFT_RECENT nights (decided where its nights are known); the nights of a suspected one are
        # read however many they are.
        current.update(carried_alert=pk if status in UNTRIAGED else None, carried_worse="regression" in verdict,
                       pooled_first=first if status in UNTRIAGED and not level else None)
    # The change points a scan found: an alert's own (a confirmed alert is a change point) is its change already.
    points = (ChangePoint.objects.filter(machine_id=run.machine_id, retracted_at__isnull=True,
                                         run__project_id=run.project_id, run__started_at__lt=run.started_at,
                                         alert__isnull=True)
              .order_by("run__started_at").values_list("metric_id", "run__started_at"))
    for metric_id, started in points:
        if metric_id not in wanted:
            continue
        found[metric_id]["change_points"] = (*found[metric_id].get("change_points", ()), started)
    return {metric_id: SeriesAlerts(changes=tuple(values.pop("changes")), **values)
            for metric_id, values in found.items()}


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
                                                          .exclude(run__kind__in=SESSION_KINDS)):
            found[metric] = PullRequestBase(result_id=result, run_id=run_id, fallback=False)
    missing = [metric for metric in metric_ids if metric not in found]
    if missing:
        fallback = results.filter(series_nights("run__", branch=run.project.default_branch), metric_id__in=missing,
                                  run__started_at__lte=run.started_at)
        for metric, result, run_id in _newest_per_metric(fallback):
            found[metric] = PullRequestBase(result_id=result, run_id=run_id, fallback=bool(base_commit))
    return found


@dataclass(frozen=True)
class RunNoise:
    """A series' run-to-run variance component as its newest nightly comparison with its history estimated it
    (:func:`results.stats.compare_with_history`): ``variance`` (squared units of the mean), its degrees of
    freedom ``df`` (the nights it came from, less one) and the run whose comparison measured it."""

    variance: float
    df: float
    run_id: int


def run_to_run_noise(run: Run, metric_ids: list[int]) -> dict[int, RunNoise]:
    """Per series (metric on ``run``'s machine), the run-to-run noise its nightly history measured: the newest
    comparison of a default-branch night with its history (started no later than ``run``) that had the nights
    to estimate it; one query. A pull request is one run against one run, so its interval carries this
    component (spec §8, revision 2026-11-26); a series without such a night is absent."""
    measured = (Comparison.objects.filter(
        series_nights("candidate__run__", branch=run.project.default_branch),
        method=ComparisonMethod.HISTORY, candidate__metric_id__in=metric_ids,
        candidate__run__project_id=run.project_id, candidate__run__machine_id=run.machine_id,
        candidate__run__started_at__lte=run.started_at,
    ).exclude(verdict=Verdict.INSUFFICIENT_HISTORY).exclude(candidate__run_id=run.pk)
        .annotate(recency=Window(RowNumber(), partition_by=[F("candidate__metric_id")],
                                 order_by=[F("candidate__run__started_at").desc(), F("candidate__run_id").desc()])))
    found = {}
    for metric_id, variance, df, run_id in measured.filter(recency=1).values_list(
            "candidate__metric_id", "inputs__between_variance", "df", "candidate__run_id"):
        if variance is not None and df:
            found[metric_id] = RunNoise(variance=float(variance), df=float(df), run_id=run_id)
    return found


def _newest_per_metric(results) -> list[tuple[int, int, int]]:
    """(metric id, result id, run id) of each metric's newest result in `results`."""
    newest = results.annotate(recency=Window(RowNumber(), partition_by=[F("metric_id")],
                                             order_by=[F("run__started_at").desc(), F("run_id").desc()]))
    return list(newest.filter(recency=1).values_list("metric_id", "pk", "run_id"))
