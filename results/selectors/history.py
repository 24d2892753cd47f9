"""Charts pages: a metric's history, one run in detail."""


from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime


from django.core.paginator import Page, Paginator
from django.db.models import (
    Count,
    F,
    Max,
    OuterRef,
    Q,
    Subquery,
    Window,
)
from django.db.models.functions import RowNumber
from django.db.models.fields.json import KeyTransform

from ..models import (
    Alert,
    AlertStatus,
    ChangeKind,
    ChangePoint,
    Comparison,
    ComparisonMethod,
    FailedResult,
    Metric,
    Result,
    Run,
    series_nights,
)
from .. import access, nights, presentation
from ..decisions import worst_first
from ..extensions import culprits
from .compare import nightly_before
from .lists import RESULT_FIELDS_FOR_TABLES
from .table_rows import opened_alert, said_opened_alert, worst_first_keys


# Charts pages: a metric's history, one run in detail, the machines (results/views/history.py).
#
# The history reads its points with one ``values()`` query of the needed columns (plus one for the
# comparisons, one for the change points and one for the pickers): 500 points are a few ms.

HISTORY_LIMIT = 1000


@dataclass(frozen=True)
class MetricHistory:
    """A metric's run means over time, ready for ``results.charts.history_figure``.

    ``points`` are ``results.charts.HistoryPoint`` dicts, oldest first, each with the comparison
    it is shown with (history for nightlies, pairwise for pull requests) or None.
    """

    metric: Metric
    machines: list[str]
    selected_machines: list[str]
    branches: list[str]
    branch: str
    points: list[dict]
    change_points: list[dict]
    truncated: bool
    limit: int
    alerts: list[dict] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)

    @property
    def drifts(self) -> int:
        """How many of the change points shown read as drifts (:mod:`results.changepoints`)."""
        return sum(row["kind"] == ChangeKind.DRIFT for row in self.change_points)

    @property
    def scale(self) -> tuple[float, str]:
        """The series' one scale, on its chart, its table and its download."""
        return presentation.metric_scale(self.metric, self.points[0]["mean"] if self.points else None)


def metric_history(*, metric_id: int, viewer, machines: list[str] | None = None, branch: str | None = None,
                   start: datetime | None = None, end: datetime | None = None,
                   limit: int = HISTORY_LIMIT) -> MetricHistory:
    """A metric's completed results in time order (the newest `limit`), and the runs where it failed since the
    first of them (newest first); six queries.

    `machines` empty: every machine that measured the metric. `branch` None: the project's default
    branch, and runs without a revision (imported runs); ``""``: every branch. `start` and `end`
    bound ``started_at`` (``start <= t < end``). Raises Metric.DoesNotExist (also for a metric of a project
    `viewer` may not read).
    """
    metric = access.visible(Metric.objects.select_related("benchmark__project"), viewer,
                            "benchmark__project").get(pk=metric_id)
    series = Result.objects.filter(metric=metric, run__status=Run.Status.COMPLETED)
    pairs = set(series.values_list("run__machine__name", "run__revision__branch").distinct().order_by())
    known_machines = sorted({machine for machine, _ in pairs})
    branches = sorted({name for _, name in pairs if name})
    chosen = [name for name in machines or () if name in known_machines] or known_machines
    branch = metric.benchmark.project.default_branch if branch is None else branch
    points = series.filter(run__machine__name__in=chosen)
    # The default branch shows the nights the comparisons read; another branch, its runs.
    only = (series_nights("run__", branch=branch) if branch == metric.benchmark.project.default_branch
            else Q(run__revision__branch=branch))
    if branch:
        points = points.filter(only)
    if start is not None:
        points = points.filter(run__started_at__gte=start)
    if end is not None:
        points = points.filter(run__started_at__lt=end)
    rows = list(points.order_by("-run__started_at", "-run_id").values(
        "id", "run_id", "mean", "ci_low", "ci_high", "n", started_at=F("run__started_at"),
        machine=F("run__machine__name"), commit=F("run__revision__commit"), branch=F("run__revision__branch"),
        kind=F("run__kind"), **opened_alert())[:limit + 1])
    truncated = len(rows) > limit
    rows = rows[:limit][::-1]
    shown: dict[int, dict] = {}
    preference = {ComparisonMethod.HISTORY: 0, ComparisonMethod.PAIRWISE: 1}
    for comparison in Comparison.objects.filter(
            candidate_id__in=[row["id"] for row in rows], method__in=list(preference)).values(
            "candidate_id", "method", "ratio", "ci_low", "ci_high", "pvalue", "qvalue", "verdict",
            "confidence_level", band=KeyTransform("band", "inputs")):
        current = shown.get(comparison["candidate_id"])
        if current is None or preference[comparison["method"]] < preference[current["method"]]:
            shown[comparison["candidate_id"]] = comparison
    means = {(row["run_id"], row["machine"]): row["mean"] for row in rows}
    # The alert a night opened is named on its point, by whichever comparison opened it (a nightly's shift test,
    # not the history comparison shown).
    for row in rows:
        row["comparison"] = shown.get(row["id"])
        opened = said_opened_alert(row.pop("opened_alert_id"), row.pop("opened_alert_status"))
        if row["comparison"] is not None and opened is not None:
            row["comparison"]["alert_id"], row["comparison"]["alert_status"] = opened
    change_points = []
    if rows:
        found = ChangePoint.objects.filter(metric=metric, machine__name__in=chosen, retracted_at__isnull=True,
                                           run__started_at__gte=rows[0]["started_at"],
                                           run__started_at__lte=rows[-1]["started_at"])
        for row in found.order_by("run__started_at").values(
                "run_id", "ratio", "ci_low", "ci_high", "pvalue", "kind", "drift_per_night", "machine__name",
                started_at=F("run__started_at")):
            row["machine"] = row.pop("machine__name")
            row["mean"] = means.get((row["run_id"], row["machine"]))
            change_points.append(row)
    series_alerts = []
    if rows:
        found = Alert.objects.filter(comparison__candidate__metric=metric, first_run__machine__name__in=chosen,
                                     first_run__started_at__gte=rows[0]["started_at"],
                                     first_run__started_at__lte=rows[-1]["started_at"])
        for row in found.order_by("first_run__started_at", "pk").values(
                "pk", "state", "status", "state_note", "first_run_id", verdict=F("comparison__verdict"),
                machine=F("first_run__machine__name"), started_at=F("first_run__started_at"),
                opened_run=F("comparison__candidate__run_id"), ratio=F("evidence__ratio"), low=F("evidence__ci_low"),
                high=F("evidence__ci_high"), pvalue=F("evidence__pvalue"), qvalue=F("evidence__qvalue"),
                pooled=KeyTransform("pooled_runs", "evidence__inputs"), own_ratio=F("comparison__ratio"),
                own_low=F("comparison__ci_low"), own_high=F("comparison__ci_high"),
                own_pvalue=F("comparison__pvalue"), own_qvalue=F("comparison__qvalue")):
            if row["ratio"] is None:  # no pooled evidence (a pull request's, or stored before it was kept)
                row.update(ratio=row["own_ratio"], low=row["own_low"], high=row["own_high"], pvalue=row["own_pvalue"],
                           qvalue=row["own_qvalue"])
            row["mean"] = means.get((row["first_run_id"], row["machine"]))
            row["nights"] = len(row.pop("pooled") or []) or None
            series_alerts.append(row)
        named = culprits({row["first_run_id"] for row in series_alerts})
        for row in series_alerts:
            row["culprit"] = named.get(row["first_run_id"])
            row["status"] = AlertStatus(row["status"]).label
            row["night"] = nights.night_of(row["started_at"])
    failed = FailedResult.objects.filter(metric=metric, run__machine__name__in=chosen,
                                         run__status=Run.Status.COMPLETED)
    if branch:
        failed = failed.filter(only)
    if rows or start is not None:
        failed = failed.filter(run__started_at__gte=rows[0]["started_at"] if rows else start)
    if end is not None:
        failed = failed.filter(run__started_at__lt=end)
    failures = list(failed.order_by("-run__started_at", "-run_id").values(
        "run_id", "error", started_at=F("run__started_at"), machine=F("run__machine__name"),
        commit=F("run__revision__commit"))[:limit])
    return MetricHistory(metric=metric, machines=known_machines, selected_machines=chosen, branches=branches,
                         branch=branch, points=rows, change_points=change_points, truncated=truncated, limit=limit,
                         alerts=series_alerts, failures=failures)


RUN_PAGED_ABOVE = 200
"""A run with more series than this shows them a page at a time, worst first (its series ordered by their worst
comparison, as every comparison table orders rows), and loads each series' detail section when it is opened."""
RUN_SERIES_PER_PAGE = 50
"""Series on a page of such a run: fifty series' results and comparisons (a nightly run compares each three ways)
fill a screen many times over, and build in about a tenth of a second at 2,000 series and 1M results."""


@dataclass(frozen=True)
class RunDetail:
    """One run with what its page shows of it: its results (with samples) and its stored comparisons, each with
    its candidate (one of the results) and, annotated, its baseline's run and commit (``baseline_run``,
    ``baseline_commit``) and its alert's id and status (``alert_pk``, ``alert_status``); for a run of more than
    :data:`RUN_PAGED_ABOVE` series asked for a page, that page (``page``: ids of results) of its series, worst
    first, without their samples, and their comparisons, worst first."""

    run: Run
    results: list[Result]
    comparisons: list[Comparison]
    failures: list[FailedResult]
    nightly_baseline: int | None = None
    page: Page | None = None


def run_page_version(*, run_id: int, viewer) -> str:
    """What a run's page depends on that can change after the run is stored: when it was (re)compared
    and when one of its alerts was last triaged; one query. Raises Run.DoesNotExist (also for a run `viewer`
    may not read)."""
    found = (access.visible(Run.objects.filter(pk=run_id), viewer)
             .annotate(alerts_changed=Max("results__comparisons__alert__updated_at"))
             .values_list("created_at", "status", "compared_at", "alerts_changed").first())
    if found is None:
        raise Run.DoesNotExist(f"No run {run_id}.")
    created, status, compared, alerts = found
    return "-".join(str(value.timestamp()) if hasattr(value, "timestamp") else str(value)
                    for value in (created, status, compared, alerts))


def run_detail(*, run_id: int, viewer, page: int | str | None = None) -> RunDetail:
    """A run, its results (with samples), its failed results, its stored comparisons and tonight's baseline
    (:func:`nightly_before`); five queries. Raises Run.DoesNotExist (also for a run `viewer` may not read).

    With `page` (a number; out of range: the nearest page), a run of more than :data:`RUN_PAGED_ABOVE` series
    gives that page (:data:`RUN_SERIES_PER_PAGE` of them) of its series, worst first, without their samples
    (one query more: the page's series in order); a smaller run gives every series, as without it."""
    series = Result.objects.filter(run=OuterRef("pk")).order_by().values("run_id").annotate(count=Count("pk"))
    run = (access.visible(Run.objects.select_related("project", "machine", "revision"), viewer)
           .annotate(series=Subquery(series.values("count")[:1])).get(pk=run_id))
    failures = list(FailedResult.objects.filter(run=run).select_related("metric__benchmark")
                    .order_by("metric__benchmark__name", "metric__name"))
    # The comparisons' candidates are the results read here; of the baseline and the alert, the page shows a few
    # columns (a row of seven models each made the comparisons of a page of series cost as much as the rest).
    comparisons = Comparison.objects.annotate(
        baseline_run=F("baseline__run_id"), baseline_commit=F("baseline__run__revision__commit"),
        alert_pk=F("alert__id"), alert_status=F("alert__status"))
    if page is None or (run.series or 0) <= RUN_PAGED_ABOVE:
        results = list(Result.objects.filter(run=run).select_related(*RESULT_FIELDS_FOR_TABLES)
                       .order_by("metric__benchmark__name", "metric__name"))
        return RunDetail(run=run, results=results, failures=failures, nightly_baseline=nightly_before(run),
                         comparisons=_with_candidates(comparisons.filter(candidate__run=run).order_by(
                             "candidate__metric__benchmark__name", "candidate__metric__name", "method"), results))
    shown = Paginator(_WorstFirst(run, run.series), RUN_SERIES_PER_PAGE).get_page(page)
    found = {result.pk: result for result in Result.objects.filter(run=run, pk__in=shown.object_list)
             .select_related(*RESULT_FIELDS_FOR_TABLES).defer("samples").order_by()}
    results = [found[pk] for pk in shown.object_list]
    page_comparisons = _with_candidates(comparisons.filter(candidate_id__in=shown.object_list).order_by(), results)
    page_comparisons.sort(key=lambda comparison: (*worst_first(
        comparison.verdict, comparison.ratio, comparison.candidate.metric.benchmark.name,
        comparison.candidate.metric.name), comparison.method))
    return RunDetail(run=run, results=results, comparisons=page_comparisons, failures=failures,
                     nightly_baseline=nightly_before(run), page=shown)


def _with_candidates(comparisons, results: list[Result]) -> list[Comparison]:
    """The comparisons, each with its candidate among `results`."""
    by_id = {result.pk: result for result in results}
    found = list(comparisons)
    for comparison in found:
        comparison.candidate = by_id[comparison.candidate_id]
    return found


def run_result(*, run_id: int, metric_id: int, viewer) -> Result:
    """A run's result of one metric, with its samples, its metric and benchmark, and its run (with project,
    machine and revision): one series' detail section of the run's page; one query. Raises Result.DoesNotExist
    (also for a run `viewer` may not read)."""
    return (access.visible(Result.objects.select_related("run__project", "run__machine", "run__revision",
                                                         *RESULT_FIELDS_FOR_TABLES), viewer, "run__project")
            .get(run_id=run_id, metric_id=metric_id))


def run_page_of(*, run_id: int, metric_id: int, viewer) -> int | None:
    """The page of a run's page that shows its series of `metric_id` (None: the run shows every series on one page,
    or has no such series); two queries. Raises Run.DoesNotExist (also for a run `viewer` may not read)."""
    run = (access.visible(Run.objects.filter(pk=run_id), viewer)
           .annotate(series=Count("results")).only("pk").get())
    if run.series <= RUN_PAGED_ABOVE:
        return None
    order = list(_WorstFirst(run, run.series, field="metric_id").series)
    return order.index(metric_id) // RUN_SERIES_PER_PAGE + 1 if metric_id in order else None


class _WorstFirst(Sequence):
    """A run's result ids (or another `field` of its results), worst first: by the worst of each one's comparisons
    (a result without any is "not compared"), as :func:`results.decisions.worst_first` orders rows; `count` of
    them, for a paginator to slice (a slice is one query: a window picks each result's worst comparison, the
    database orders and cuts)."""

    def __init__(self, run: Run, count: int, *, field: str = "pk") -> None:
        rank, size = worst_first_keys("comparisons")
        self.count = count
        # Not named `ordered`: the paginator reads that attribute as a queryset's (and would fetch them all).
        self.series = (Result.objects.filter(run=run)
                        .annotate(rank=rank, size=size, worst=Window(RowNumber(), partition_by=[F("pk")],
                                                                      order_by=[rank.asc(), size.desc()]))
                        .filter(worst=1)
                        .order_by("rank", "-size", "metric__benchmark__name", "metric__name", "pk")
                        .values_list(field, flat=True))

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: slice) -> list[int]:
        return list(self.series[index])
