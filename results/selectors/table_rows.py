"""What the comparison tables of several pages share: the row limit, each series' sparkline of recent nightly
means (one windowed query), and a result's stored history comparison."""


from collections import defaultdict
from dataclasses import replace
from datetime import datetime


from django.db.models import (
    F,
    Window,
)
from django.db.models.functions import RowNumber

from ..models import (
    Comparison,
    ComparisonMethod,
    Result,
    Run,
)
from .. import nights
from ..rows import ComparisonRow, Sparkline


# The results pages: nightly overview, any two runs compared, pull-request review.
#
# All three show the same table, one results.rows.ComparisonRow per series, read by the comparison
# service (results.stored_rows.stored_rows). Each selector below issues a fixed number of queries (the
# sparklines of every row come from one windowed query).

SPARKLINE_POINTS = 20


def _sparklines(series: set[tuple[int, int]], *, projects: set[int], limit: int = SPARKLINE_POINTS,
                runs_per_point: int = 1, until: datetime | None = None) -> dict[tuple[int, int], Sparkline]:
    """The newest ``limit`` means of each (metric id, machine id) in the newest ``limit × runs_per_point``
    nightly runs of its project on that machine (several suites may post a run each per night), from one
    query (the runs are picked by a window in a subquery, so only their results are read, however long
    the history). ``until``: only runs started before it (a night picked in the past)."""
    if not series:
        return {}
    machine_ids = {machine for _, machine in series}
    recency = Window(RowNumber(), partition_by=[F("project_id"), F("machine_id")],
                     order_by=[F("started_at").desc(), F("id").desc()])
    nightly = Run.objects.filter(project_id__in=projects, machine_id__in=machine_ids, kind=Run.Kind.NIGHTLY,
                                 status=Run.Status.COMPLETED)
    if until is not None:
        nightly = nightly.filter(started_at__lt=until)
    recent_runs = (
        nightly.annotate(recency=recency).filter(recency__lte=limit * runs_per_point).values("pk")
    )
    rows = (
        Result.objects.filter(run_id__in=recent_runs, metric_id__in={metric for metric, _ in series})
        .order_by("run__started_at", "run_id").values_list("metric_id", "run__machine_id", "mean", "run__started_at")
    )
    means: dict[tuple[int, int], list[float]] = defaultdict(list)
    dates: dict[tuple[int, int], list[str]] = defaultdict(list)
    days: dict[datetime, str] = {}  # one per run, not per point
    for metric, machine, mean, started in rows:
        if (metric, machine) in series:
            means[metric, machine].append(mean)
            day = days.get(started)
            if day is None:
                day = days[started] = f"night of {nights.night_of(started).isoformat()}"
            dates[metric, machine].append(day)
    return {key: Sparkline.of(values[-limit:], dates[key][-limit:]) for key, values in means.items()}


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
