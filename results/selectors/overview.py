"""The nightly overview: every series of a night, per project and machine, worst first."""


from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime


from django.core.paginator import Page, Paginator
from django.db.models import (
    Count,
    F,
    FilteredRelation,
    Max,
    Min,
    Q,
    Window,
)
from django.db.models.functions import RowNumber

from ..stored_rows import stored_rows
from ..notifications import incident_line
from ..models import (
    Comparison,
    ComparisonMethod,
    FailedResult,
    Incident,
    IncidentKind,
    Machine,
    Project,
    Result,
    Run,
    Verdict,
)
from .. import access, nights, presentation
from ..rows import ComparisonRow
from .table_rows import (
    _HISTORY_FIELDS,
    ROW_LIMIT,
    SPARKLINE_POINTS,
    _history_comparison,
    _sparklines,
    _with_sparklines,
    opened_alert,
    said_opened_alert,
    worst_first_keys,
)


@dataclass(frozen=True)
class OverviewGroup:
    """One project's night on one machine: each series' newest nightly result of that night (from however
    many runs the suites posted), and its rows (the most notable ``limit``)."""

    machine: Machine
    night: date
    runs: list[Run]
    rows: list[ComparisonRow]
    counts: dict[str, int]
    insufficient: list[ComparisonRow]
    total: int
    failures: list[FailedResult] = field(default_factory=list)
    incidents: list[tuple[Incident, str]] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.total > len(self.rows)

    @property
    def pending(self) -> list[Run]:
        """The night's runs whose comparisons have not been computed yet."""
        return [run for run in self.runs if run.compared_at is None]


@dataclass(frozen=True)
class ProjectOverview:
    project: Project
    groups: list[OverviewGroup]


@dataclass(frozen=True)
class NightlyOverview:
    """The overview of one night, or of each project and machine's newest night.

    ``earlier`` and ``later`` are the nearest nights before and after the shown ones that have a nightly
    run (under the same project and machine filters), for the page's previous/next links. ``without_night``
    names the first of the projects shown none (``without_night_count`` of them in all): a page lists at most
    :data:`WITHOUT_NIGHT_NAMED` of them, however many projects there are. The projects with a night come
    :data:`PROJECTS_PER_PAGE` a page (``page``), by name."""

    projects: list[ProjectOverview]
    night: date | None = None
    without_night: list[Project] = field(default_factory=list)
    without_night_count: int = 0
    page: Page | None = None
    earlier: date | None = None
    later: date | None = None


def _replaced_results(night_runs: list[Run]) -> list[int]:
    """The results of `night_runs` a later run of the same night replaced (the same metric on the same
    machine); one query of (id, metric, run) triples of the runs of a project and machine that posted several,
    none when no project and machine did (a metric belongs to one project)."""
    posted = Counter((run.project_id, run.machine_id) for run in night_runs)
    several = [run for run in night_runs if posted[run.project_id, run.machine_id] > 1]
    if not several:
        return []
    order = {run.pk: (run.started_at, run.pk) for run in several}
    machine = {run.pk: run.machine_id for run in several}
    newest: dict[tuple[int, int], tuple[int, int]] = {}
    replaced = []
    for pk, metric, run in Result.objects.filter(run_id__in=list(order)).order_by().values_list("pk", "metric_id",
                                                                                               "run_id"):
        key = (metric, machine[run])
        kept = newest.get(key)
        if kept is None:
            newest[key] = (pk, run)
        elif order[run] > order[kept[1]]:
            replaced.append(kept[0])
            newest[key] = (pk, run)
        else:
            replaced.append(pk)
    return replaced


def _night_incidents(runs_by_group: dict[tuple[int, int], list[Run]]) -> dict[tuple[int, int], list]:
    """The machine-wide incidents of each shown (project, machine) night, worded once; one query, and two per
    incident (there are few)."""
    wanted = {(project, machine, nights.night_of(runs[0].started_at)) for (project, machine), runs
              in runs_by_group.items()}
    if not wanted:
        return {}
    found = Incident.objects.filter(
        kind=IncidentKind.MACHINE, project_id__in={key[0] for key in wanted}, machine_id__in={key[1] for key in wanted},
        night__in={key[2] for key in wanted}).select_related("machine", "first_run__revision")
    shown: dict[tuple[int, int], list] = defaultdict(list)
    for incident in found:
        if (incident.project_id, incident.machine_id, incident.night) in wanted:
            shown[incident.project_id, incident.machine_id].append((incident, incident_line(incident).text))
    return shown


def _night_failures(night_runs: list[Run]) -> dict[tuple[int, int], list[FailedResult]]:
    """The night's failed results by (project, machine), but those a later run of the night measured; two
    queries."""
    order = {run.pk: (run.started_at, run.pk) for run in night_runs}
    runs_by_id = {run.pk: run for run in night_runs}
    failures = list(FailedResult.objects.filter(run_id__in=list(order)).select_related("metric__benchmark")
                    .order_by("metric__benchmark__name", "metric__name"))
    measured: dict[tuple[int, int], tuple] = {}
    for metric, run in Result.objects.filter(run_id__in=list(order), metric_id__in={f.metric_id for f in failures}) \
            .order_by().values_list("metric_id", "run_id"):
        key = (metric, runs_by_id[run].machine_id)
        measured[key] = max(measured.get(key, order[run]), order[run])
    found: dict[tuple[int, int], list[FailedResult]] = defaultdict(list)
    for failure in failures:
        run = runs_by_id[failure.run_id]
        later = measured.get((failure.metric_id, run.machine_id))
        if later is None or later < order[run.pk]:
            failure.run = run
            found[run.project_id, run.machine_id].append(failure)
    return found


WITHOUT_NIGHT_NAMED = 20
PROJECTS_PER_PAGE = 10


def nightly_overview(*, viewer, project: str | None = None, machine: str | None = None,
                     benchmark: str | None = None, verdict: str | None = None, night: date | None = None,
                     limit: int | None = ROW_LIMIT, page: str | int | None = None) -> NightlyOverview:
    """Each series' newest completed nightly result of a night against its history, per project and machine.

    The night is `night` where given (projects and machines without a nightly run that night are left
    out), else each project and machine's newest night (:mod:`results.nights`): every suite that posted a
    run that night is shown, not only the last one. Filters: project slug, machine name, benchmark name
    (substring, case-insensitive) and the history comparison's verdict. Each group shows its ``limit``
    most notable series (by verdict, then size of change; None: all); its counts are those of all its
    series, its total that of the filtered series. Only the projects `viewer` may read are shown, a page of
    them at a time (`page`). A fixed number of queries, whatever the number of projects, machines, runs and
    rows (one fewer on a night when no project and machine has several runs: no result was replaced).
    """
    nightly = access.visible(Run.objects.filter(kind=Run.Kind.NIGHTLY, status=Run.Status.COMPLETED), viewer)
    if project:
        nightly = nightly.filter(project__slug=project)
    if machine:
        nightly = nightly.filter(machine__name=machine)
    with_night = nightly if night is None else nightly.filter(started_at__gte=nights.night_bounds(night)[0],
                                                               started_at__lt=nights.night_bounds(night)[1])
    paged = Paginator(Project.objects.filter(pk__in=with_night.values("project_id")).order_by("name", "id"),
                      PROJECTS_PER_PAGE).get_page(page)
    newest = nightly.filter(project_id__in=[shown.pk for shown in paged.object_list])
    if night is not None:
        newest = newest.filter(started_at__lt=nights.night_bounds(night)[1])
    windows: dict[tuple[int, int], tuple[datetime, datetime]] = {}
    for row in newest.values("project_id", "machine_id").annotate(newest=Max("started_at")).order_by():
        shown_night = nights.night_of(row["newest"])
        if night is None or shown_night == night:
            windows[row["project_id"], row["machine_id"]] = nights.night_bounds(shown_night)
    within = Q(pk__in=[])
    for (project_id, machine_id), (start, end) in windows.items():
        within |= Q(project_id=project_id, machine_id=machine_id, started_at__gte=start, started_at__lt=end)
    night_runs = list(newest.filter(within).select_related("project", "machine", "revision")
                      .order_by("started_at", "id"))
    run_ids = [run.pk for run in night_runs]

    # Each series' newest result of its night: a re-run of a suite replaces its earlier run's numbers. The
    # ones replaced are found here from the night's (metric, run) pairs: a window or an anti-join in SQL made
    # PostgreSQL's planner loop over every run of the machine (80-130 ms at 1M results).
    replaced = _replaced_results(night_runs)
    newest_results = Result.objects.filter(run_id__in=run_ids)
    if replaced:
        newest_results = newest_results.exclude(pk__in=replaced)
    matching = newest_results.annotate(history_comparison=FilteredRelation(
        "comparisons", condition=Q(comparisons__method=ComparisonMethod.HISTORY)))
    if benchmark:
        matching = matching.filter(metric__benchmark__name__icontains=benchmark)
    if verdict:
        matching = matching.filter(history_comparison__verdict=verdict)
    group_fields = ("run__project_id", "run__machine_id")
    totals = {(row["run__project_id"], row["run__machine_id"]): row["count"]
              for row in matching.values(*group_fields).annotate(count=Count("id")).order_by()}
    results = matching.select_related("metric__benchmark").defer("samples", "samples_shape", "metadata")
    if limit is not None:
        rank, size = worst_first_keys("history_comparison")
        results = results.annotate(notability=Window(
            RowNumber(), partition_by=[F(name) for name in group_fields],
            order_by=[rank.asc(), size.desc(), F("metric__benchmark__name").asc(), F("metric__name").asc()],
        )).filter(notability__lte=limit)
    # The history comparison's fields come with the result (no second query, no prefetch). Unordered: the rows are
    # put worst first below (Result's default order joined the run, metric, benchmark and project to sort them).
    results = list(results.annotate(**{f"history_{name}": F(f"history_comparison__{name}")
                                       for name in _HISTORY_FIELDS}, **opened_alert()).order_by())
    counts: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    for row in (Comparison.objects.filter(candidate__run_id__in=run_ids, method=ComparisonMethod.HISTORY)
                .exclude(candidate_id__in=replaced)
                .values("candidate__run__project_id", "candidate__run__machine_id", "verdict")
                .annotate(count=Count("id")).order_by()):
        counts[row["candidate__run__project_id"], row["candidate__run__machine_id"]][row["verdict"]] = row["count"]

    runs_by_id = {run.pk: run for run in night_runs}
    for result in results:
        result.run = runs_by_id[result.run_id]
    runs_per_night = max(Counter((run.project_id, run.machine_id) for run in night_runs).values(), default=1)
    sparklines = _sparklines({(result.metric_id, result.run.machine_id) for result in results},
                             projects={run.project_id for run in night_runs}, limit=SPARKLINE_POINTS,
                             runs_per_point=runs_per_night,
                             until=None if night is None else nights.night_bounds(night)[1])
    rows = _with_sparklines(
        stored_rows([(result, _history_comparison(result)) for result in results],
                    machines={run.pk: run.machine.name for run in night_runs},
                    alerts_by_comparison={result.history_id: said_opened_alert(result.opened_alert_id,
                                                                               result.opened_alert_status)
                                          for result in results
                                          if result.history_id is not None and result.opened_alert_id is not None}),
        sparklines, machine_ids={run.pk: run.machine_id for run in night_runs})
    rows_by_group: dict[tuple[int, int], list[ComparisonRow]] = defaultdict(list)
    for row in rows:
        run = runs_by_id[row.run_id]
        rows_by_group[run.project_id, run.machine_id].append(row)
    runs_by_group: dict[tuple[int, int], list[Run]] = defaultdict(list)
    for run in night_runs:
        runs_by_group[run.project_id, run.machine_id].append(run)
    failures = _night_failures(night_runs)
    shifted = _night_incidents(runs_by_group)
    groups_by_project: dict[int, list[OverviewGroup]] = defaultdict(list)
    for key, group_runs in sorted(runs_by_group.items(), key=lambda item: item[1][0].machine.name):
        group_rows = rows_by_group.get(key, [])
        groups_by_project[key[0]].append(OverviewGroup(
            machine=group_runs[0].machine, night=nights.night_of(group_runs[0].started_at), runs=group_runs,
            rows=group_rows, counts=presentation.in_verdict_order(counts.get(key, {})),
            insufficient=[row for row in group_rows if row.verdict == Verdict.INSUFFICIENT_HISTORY],
            total=totals.get(key, 0), failures=failures.get(key, []), incidents=shifted.get(key, [])))
    earlier = later = None
    if windows or night is not None:
        # Without a night asked for, the groups' nights may differ (a machine that stopped posting): the
        # earlier link goes to the night before the newest of them, so no night in between is skipped.
        starts = [start for start, _ in windows.values()]
        first = (max(starts) if night is None else min(starts, default=None)) or nights.night_bounds(night)[0]
        last = max((end for _, end in windows.values()), default=None) or nights.night_bounds(night)[1]
        before = nightly.filter(started_at__lt=first).aggregate(at=Max("started_at"))["at"]
        after = nightly.filter(started_at__gte=last).aggregate(at=Min("started_at"))["at"]
        earlier = None if before is None else nights.night_of(before)
        later = None if after is None else nights.night_of(after)
    without = access.visible(Project.objects.exclude(pk__in=with_night.values("project_id")), viewer, "pk")
    if project:
        without = without.filter(slug=project)
    return NightlyOverview(
        projects=[ProjectOverview(project=p, groups=groups_by_project[p.pk]) for p in paged.object_list
                  if p.pk in groups_by_project],
        night=night, earlier=earlier, later=later, page=paged,
        without_night=list(without.order_by("name", "id")[:WITHOUT_NIGHT_NAMED]), without_night_count=without.count())
