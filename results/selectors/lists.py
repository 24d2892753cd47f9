"""Lists the pages filter and page through: runs, a run's results and comparisons, projects, benchmarks,
metrics, machines, alerts and incidents (querysets a view narrows)."""


from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    When,
)

from ..models import (
    Alert,
    Benchmark,
    ChangePoint,
    Comparison,
    ComparisonMethod,
    FailedResult,
    Incident,
    Machine,
    Metric,
    Project,
    Result,
    Run,
)
from .. import access, presentation


RESULT_FIELDS_FOR_TABLES = ("metric__benchmark",)


def runs(*, viewer, project: str | None = None, machine: str | None = None, branch: str | None = None,
         kind: str | None = None, commit: str | None = None, start: datetime | None = None,
         end: datetime | None = None) -> QuerySet[Run]:
    """The runs `viewer` may read, newest first, filtered by project slug, machine name, branch, kind, commit
    prefix and the time they started (``start <= started_at < end``)."""
    queryset = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer)
    queryset = _where(queryset, project__slug=project, machine__name=machine, revision__branch=branch, kind=kind,
                      revision__commit__istartswith=commit, started_at__gte=start, started_at__lt=end)
    return queryset.order_by("-started_at", "-id")


RUNS_PER_PAGE = 50
RUNS_PER_EXPORT = 10_000
"""The runs list's CSV and JSON hold a page this long (the newest ones; ``page`` pages further)."""


@dataclass(frozen=True)
class RunListEntry:
    """A run as the runs page lists it: its number of results and its decided changes (history
    comparisons for nightlies, pairwise for pull requests)."""

    run: Run
    results: int
    counts: dict[str, int]
    failed: int = 0


@dataclass(frozen=True)
class RunList:
    """One page of runs (:class:`RunListEntry` objects)."""

    page: Page


def run_list(*, viewer, page: str | int | None = None, per_page: int = RUNS_PER_PAGE, **filters) -> RunList:
    """One page of :func:`runs` (the same filters), each entry counted; five queries, whatever the page."""
    page = Paginator(runs(viewer=viewer, **filters), per_page).get_page(page)
    listed = list(page.object_list)
    ids = [run.pk for run in listed]
    results = dict(Result.objects.filter(run_id__in=ids).values("run_id").annotate(count=Count("id"))
                   .values_list("run_id", "count").order_by())
    failed = dict(FailedResult.objects.filter(run_id__in=ids).values("run_id").annotate(count=Count("id"))
                  .values_list("run_id", "count").order_by())
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for row in (Comparison.objects.filter(candidate__run_id__in=ids,
                                          method__in=[ComparisonMethod.HISTORY, ComparisonMethod.PAIRWISE])
                .values("candidate__run_id", "verdict").annotate(count=Count("id")).order_by()):
        counts[row["candidate__run_id"]][row["verdict"]] = row["count"]
    page.object_list = [RunListEntry(run=run, results=results.get(run.pk, 0), failed=failed.get(run.pk, 0),
                                     counts=presentation.in_verdict_order(counts.get(run.pk, {})))
                        for run in listed]
    return RunList(page=page)


def run_with_results(*, run_id: int, viewer) -> Run:
    """One run `viewer` may read with its results and failed results (and their metrics and benchmarks)
    loaded; raises Run.DoesNotExist."""
    results = Result.objects.select_related(*RESULT_FIELDS_FOR_TABLES).defer("samples").order_by(
        "metric__benchmark__name", "metric__name"
    )
    failures = FailedResult.objects.select_related("metric__benchmark").order_by("metric__benchmark__name",
                                                                                  "metric__name")
    return (
        access.visible(Run.objects.select_related("project", "machine", "revision"), viewer)
        .prefetch_related(Prefetch("results", queryset=results), Prefetch("failures", queryset=failures))
        .get(pk=run_id)
    )


def metric_series(*, metric_id: int, viewer, machine: str | None = None, branch: str | None = None,
                  limit: int = 500) -> tuple[Metric, list[dict]]:
    """A metric's results in time order (the newest ``limit``), as plain rows; raises Metric.DoesNotExist
    (also for a metric of a project `viewer` may not read)."""
    metric = access.visible(Metric.objects.select_related("benchmark__project"), viewer,
                            "benchmark__project").get(pk=metric_id)
    queryset = Result.objects.filter(metric=metric, run__status=Run.Status.COMPLETED)
    queryset = _where(queryset, run__machine__name=machine, run__revision__branch=branch)
    newest = list(queryset.order_by("-run__started_at", "-run_id").values(
        "run_id", "mean", "ci_low", "ci_high", "subsession_size", "variance", "n", started_at=F("run__started_at"),
        commit=F("run__revision__commit"), machine=F("run__machine__name"))[:limit])
    return metric, newest[::-1]


def run_comparisons(*, run_id: int, viewer, method: str | None = None) -> list[Comparison]:
    """A run's stored comparisons with their candidate result and its metric; one query. Raises
    Run.DoesNotExist for a run `viewer` may not read (or none)."""
    if not access.visible(Run.objects.filter(pk=run_id), viewer).exists():
        raise Run.DoesNotExist(f"No run {run_id}.")
    queryset = Comparison.objects.filter(candidate__run_id=run_id).select_related(
        "candidate__metric__benchmark").defer("candidate__samples")
    return list(_where(queryset, method=method))


def projects(*, viewer, search: str = "") -> QuerySet[Project]:
    """The projects `viewer` may read, by name, those whose name or slug contains `search` where given."""
    queryset = access.visible(Project.objects.all(), viewer, "pk")
    if search:
        queryset = queryset.filter(Q(name__icontains=search) | Q(slug__icontains=search))
    return queryset.order_by("name", "id")


def benchmarks(*, viewer, project: str | None = None) -> QuerySet[Benchmark]:
    """Benchmarks `viewer` may read with their project, by project and name, filtered by project slug."""
    queryset = access.visible(Benchmark.objects.select_related("project"), viewer)
    return _where(queryset, project__slug=project).order_by("project__name", "name", "id")


def metrics(*, viewer, project: str | None = None, benchmark_id: int | None = None) -> QuerySet[Metric]:
    """Metrics `viewer` may read with their benchmark and project, by project, benchmark and name, filtered by
    project slug and benchmark id."""
    queryset = access.visible(Metric.objects.select_related("benchmark__project"), viewer, "benchmark__project")
    queryset = _where(queryset, benchmark__project__slug=project, benchmark_id=benchmark_id)
    return queryset.order_by("benchmark__project__name", "benchmark__name", "name", "id")


def machines(*, viewer, search: str = "") -> QuerySet[Machine]:
    """The machines `viewer` may see, by name: those with a run of a project they may read, and those with no run
    yet (registered, waiting for their first session); every machine, for staff. Those whose name contains
    `search` where given."""
    queryset = Machine.objects.all()
    readable = access.readable_projects(viewer)
    if readable is not None:
        queryset = queryset.filter(Exists(Run.objects.filter(machine=OuterRef("pk"), project__in=readable))
                                   | ~Exists(Run.objects.filter(machine=OuterRef("pk"))))
    return _where(queryset, name__icontains=search).order_by("name", "id")


def alerts(*, viewer, status: str | None = None, project: str | None = None,
           assignee: AbstractBaseUser | None = None) -> QuerySet[Alert]:
    """The alerts `viewer` may read, the newest night's first (the night their run measured, not when they were
    opened: nights imported late sort where they belong), filtered by status, project slug and the user they are
    assigned to."""
    queryset = access.visible(Alert.objects, viewer, "group__run__project").select_related(
        "group__run__project", "group__run__machine", "group__run__revision", "updated_by", "assignee",
        "comparison__candidate__metric__benchmark", "first_run__revision", "evidence__candidate__metric__benchmark",
    ).prefetch_related("events__user", "group__deliveries")
    queryset = _where(queryset, status=status, group__run__project__slug=project, assignee=assignee)
    # Its change point read as a drift (results.changepoints): the line's change per night, else None. Its own where
    # it has one (a step: None), else the scan's at its first night (a confirmed alert records none of its own where
    # the scan's had settled it); never another alert's that begins the same night.
    own = ChangePoint.objects.filter(alert=OuterRef("pk"), retracted_at__isnull=True).order_by("pk")
    scans = ChangePoint.objects.filter(
        run=OuterRef("first_run"), metric=OuterRef("comparison__candidate__metric"),
        machine=OuterRef("first_run__machine"), alert__isnull=True, retracted_at__isnull=True).order_by("pk")
    drift = Case(When(Exists(own), then=Subquery(own.values("drift_per_night")[:1])),
                 default=Subquery(scans.values("drift_per_night")[:1]))
    return queryset.annotate(drift_per_night=drift).order_by(
        "-group__run__started_at", "-group__created_at", "id")


def incidents(*, viewer, project: str | None = None) -> QuerySet[Incident]:
    """The incidents of the projects `viewer` may read, newest night first, filtered by project slug."""
    queryset = access.visible(
        Incident.objects.select_related("project", "machine", "first_run__revision", "assignee"), viewer)
    return _where(queryset, project__slug=project).order_by("-night", "-id")


def _where(queryset: QuerySet, **lookups) -> QuerySet:
    """`queryset` filtered by each of the lookups given a value (None and "" are filters left out)."""
    return queryset.filter(**{lookup: value for lookup, value in lookups.items() if value is not None and value != ""})
