"""Reads. Each selector issues a fixed number of queries, whatever the number of rows."""

from dataclasses import dataclass

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery

from .models import Metric, Project, Result, Run

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
