"""What the comparison tables of several pages share: the row limit, each series' sparkline of recent nightly
means (one windowed query), and a result's stored history comparison."""


from collections import defaultdict
from dataclasses import replace
from datetime import datetime


from django.db.models import (
    Case,
    F,
    OuterRef,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.functions import Abs, Coalesce, RowNumber

from ..models import (
    Alert,
    AlertStatus,
    Comparison,
    ComparisonMethod,
    Result,
    Run,
)
from .. import nights, presentation
from ..decisions import NOT_COMPARED, VERDICT_ORDER
from ..rows import ComparisonRow, Sparkline


# The results pages: nightly overview, any two runs compared, pull-request review.
#
# All three show the same table, one results.rows.ComparisonRow per series, read by the comparison
# service (results.stored_rows.stored_rows). Each selector below issues a fixed number of queries (the
# sparklines of every row come from two: the recent runs, picked by a window, then their results).

SPARKLINE_POINTS = 20


def worst_first_keys(comparison: str) -> tuple[Case, Coalesce]:
    """:func:`results.decisions.worst_first` in SQL, for the comparison at the path `comparison`: its verdict's
    rank (no comparison ranks as "not compared") and the size of its change, so that a database orders and cuts
    rows as the pages order them."""
    rank = Case(*[When(**{f"{comparison}__verdict": value}, then=Value(order))
                  for value, order in VERDICT_ORDER.items() if value != NOT_COMPARED],
                default=Value(VERDICT_ORDER[NOT_COMPARED]))
    return rank, Coalesce(Abs(F(f"{comparison}__ratio") - 1.0), Value(0.0))


def _sparklines(series: set[tuple[int, int]], *, projects: set[int], limit: int = SPARKLINE_POINTS,
                runs_per_point: int = 1, until: datetime | None = None) -> dict[tuple[int, int], Sparkline]:
    """The newest ``limit`` means of each (metric id, machine id) in the newest ``limit × runs_per_point``
    nightly runs of its project on that machine (several suites may post a run each per night), from two
    queries (the runs, picked by a window, then only their results, however long the history). ``until``: only
    runs started before it (a night picked in the past)."""
    if not series:
        return {}
    machine_ids = {machine for _, machine in series}
    recency = Window(RowNumber(), partition_by=[F("project_id"), F("machine_id")],
                     order_by=[F("started_at").desc(), F("id").desc()])
    nightly = Run.objects.filter(project_id__in=projects, machine_id__in=machine_ids, kind=Run.Kind.NIGHTLY,
                                 status=Run.Status.COMPLETED)
    if until is not None:
        nightly = nightly.filter(started_at__lt=until)
    # The runs are read first (with what the points need of them): as a subquery, PostgreSQL's planner could not
    # tell how few they are and read every result of the series instead (100,000 rows at 1M results: 100-260 ms
    # of the overview's 330-600). Their results are then read without a join, put in time order here.
    runs = {pk: (position, machine, presentation.said_night(nights.night_of(started)))
            for position, (pk, machine, started) in enumerate(
                nightly.annotate(recency=recency).filter(recency__lte=limit * runs_per_point)
                .order_by("started_at", "id").values_list("pk", "machine_id", "started_at"))}
    rows = sorted(Result.objects.filter(run_id__in=list(runs), metric_id__in={metric for metric, _ in series})
                  .order_by().values_list("metric_id", "run_id", "mean"), key=lambda row: runs[row[1]][0])
    means: dict[tuple[int, int], list[float]] = defaultdict(list)
    dates: dict[tuple[int, int], list[str]] = defaultdict(list)
    for metric, run, mean in rows:
        _, machine, day = runs[run]
        if (metric, machine) in series:
            means[metric, machine].append(mean)
            dates[metric, machine].append(day)
    return {key: Sparkline.of(values[-limit:], dates[key][-limit:]) for key, values in means.items()}


def opened_alert(result: str = "pk") -> dict[str, Subquery]:
    """Annotations of a result (at the path `result`) naming the alert one of its comparisons opened, the newest
    where it opened two: ``opened_alert_id`` and ``opened_alert_status``, read with the result (no query of their
    own). A night's rows show its comparison against its history; its nightly alert comes from the shift test of
    the nights since, so each row names it from here."""
    alert = Alert.objects.filter(comparison__candidate=OuterRef(result)).order_by("-pk")
    return {"opened_alert_id": Subquery(alert.values("pk")[:1]),
            "opened_alert_status": Subquery(alert.values("status")[:1])}


def said_opened_alert(alert_id: int | None, status: str | None) -> tuple[int, str] | None:
    """:func:`opened_alert`'s annotations as a row takes them: the alert's id and its status worded, or None."""
    return None if alert_id is None else (alert_id, AlertStatus(status).label)


ROW_LIMIT = 200
"""Rows shown per run unless asked for all: the most notable ones (worst first), so that a project
with thousands of series still answers "did tonight regress?" at a glance."""
_HISTORY_FIELDS = ("id", "ratio", "ci_low", "ci_high", "bounded", "statistic", "df", "pvalue", "qvalue", "verdict",
                   "threshold", "confidence_level", "inputs")


def _with_sparklines(rows: list[ComparisonRow], sparklines: dict[tuple[int, int], Sparkline], *,
                     machine_ids: dict[int, int]) -> list[ComparisonRow]:
    """The rows, each with its series' sparkline, worst first."""
    return sorted((replace(row, sparkline=sparklines.get((row.metric_id, machine_ids.get(row.run_id))))
                   for row in rows), key=lambda row: row.sort_key)


def _history_comparison(result: Result) -> Comparison | None:
    """The history comparison annotated onto a result (``history_<field>``), or None when there is none."""
    if result.history_id is None:
        return None
    return Comparison(candidate=result, method=ComparisonMethod.HISTORY,
                      **{name: getattr(result, f"history_{name}") for name in _HISTORY_FIELDS})
