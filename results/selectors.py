"""Reads. Each selector issues a fixed number of queries, whatever the number of rows."""

from dataclasses import dataclass

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery

from .models import Alert, Comparison, Metric, Project, Result, Run, Verdict

RESULT_FIELDS_FOR_TABLES = ("metric__benchmark",)


def runs(*, project: str | None = None, machine: str | None = None, branch: str | None = None,
         kind: str | None = None) -> QuerySet[Run]:
    """Runs, newest first, filtered by project slug, machine name, branch and kind."""
    queryset = Run.objects.select_related("project", "machine", "revision")
    if project:
        queryset = queryset.filter(project__slug=project)
    if machine:
        queryset = queryset.filter(machine__name=machine)
    if branch:
        queryset = queryset.filter(revision__branch=branch)
    if kind:
        queryset = queryset.filter(kind=kind)
    return queryset.order_by("-started_at", "-id")


def run_with_results(*, run_id: int) -> Run:
    """One run with its results (and their metrics and benchmarks) loaded; raises Run.DoesNotExist."""
    results = Result.objects.select_related(*RESULT_FIELDS_FOR_TABLES).defer("samples").order_by(
        "metric__benchmark__name", "metric__name"
    )
    return (
        Run.objects.select_related("project", "machine", "revision")
        .prefetch_related(Prefetch("results", queryset=results))
        .get(pk=run_id)
    )


def metric_series(*, metric_id: int, machine: str | None = None, branch: str | None = None,
                  limit: int = 500) -> tuple[Metric, list[Result]]:
    """A metric's results in time order (the newest ``limit``); raises Metric.DoesNotExist."""
    metric = Metric.objects.select_related("benchmark__project").get(pk=metric_id)
    queryset = (
        Result.objects.filter(metric=metric, run__status=Run.Status.COMPLETED)
        .select_related("run__machine", "run__revision")
        .defer("samples")
    )
    if machine:
        queryset = queryset.filter(run__machine__name=machine)
    if branch:
        queryset = queryset.filter(run__revision__branch=branch)
    newest = list(queryset.order_by("-run__started_at", "-run_id")[:limit])
    return metric, newest[::-1]


@dataclass(frozen=True)
class ProjectLatestRun:
    project: Project
    run: Run | None


def latest_run_per_project() -> list[ProjectLatestRun]:
    """Every project with its most recent completed run and that run's results."""
    latest = Run.objects.filter(project=OuterRef("pk"), status=Run.Status.COMPLETED).order_by("-started_at", "-id")
    projects = list(Project.objects.annotate(latest_run_id=Subquery(latest.values("pk")[:1])))
    run_ids = [project.latest_run_id for project in projects if project.latest_run_id is not None]
    results = Result.objects.select_related(*RESULT_FIELDS_FOR_TABLES).defer("samples").order_by(
        "metric__benchmark__name", "metric__name"
    )
    loaded = {
        run.pk: run
        for run in Run.objects.filter(pk__in=run_ids)
        .select_related("machine", "revision")
        .prefetch_related(Prefetch("results", queryset=results))
    }
    return [ProjectLatestRun(project=project, run=loaded.get(project.latest_run_id)) for project in projects]


def run_comparisons(*, run_id: int, method: str | None = None) -> list[Comparison]:
    """A run's stored comparisons with their series, worst first (regressions, then by size)."""
    queryset = Comparison.objects.filter(candidate__run_id=run_id).select_related(
        "candidate__metric__benchmark", "baseline__run")
    if method:
        queryset = queryset.filter(method=method)
    order = {Verdict.REGRESSION: 0, Verdict.INCONCLUSIVE: 1, Verdict.IMPROVEMENT: 2,
             Verdict.INSUFFICIENT_HISTORY: 3, Verdict.NO_CHANGE: 4}
    return sorted(queryset, key=lambda c: (order[c.verdict], -abs((c.ratio or 1.0) - 1.0)))


def alerts(*, status: str | None = None, project: str | None = None) -> QuerySet[Alert]:
    queryset = Alert.objects.select_related(
        "group__run__project", "group__run__machine", "group__run__revision", "comparison__candidate__metric__benchmark",
        "updated_by").prefetch_related("events__user", "confirmations")
    if status:
        queryset = queryset.filter(status=status)
    if project:
        queryset = queryset.filter(group__run__project__slug=project)
    return queryset.order_by("-group__created_at", "id")
