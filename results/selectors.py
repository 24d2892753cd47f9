"""Reads. Each selector issues a fixed number of queries, whatever the number of rows."""

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FilteredRelation,
    Max,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Abs, Coalesce, RowNumber

from .baselines import pull_request_bases
from .comparisons import stored_rows
from .extensions import alert_additions
from .notifications import incident_line
from .models import (
    Alert,
    AlertStatus,
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
    Revision,
    Role,
    Run,
    Verdict,
    series_nights,
)
from . import access, machine_state, nights, presentation
from .presentation import NOT_COMPARED, VERDICT_ORDER
from .rows import ComparisonRow, Sparkline

RESULT_FIELDS_FOR_TABLES = ("metric__benchmark",)


def runs(*, viewer, project: str | None = None, machine: str | None = None, branch: str | None = None,
         kind: str | None = None, commit: str | None = None, start: datetime | None = None,
         end: datetime | None = None) -> QuerySet[Run]:
    """The runs `viewer` may read, newest first, filtered by project slug, machine name, branch, kind, commit
    prefix and the time they started (``start <= started_at < end``)."""
    queryset = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer)
    if project:
        queryset = queryset.filter(project__slug=project)
    if machine:
        queryset = queryset.filter(machine__name=machine)
    if branch:
        queryset = queryset.filter(revision__branch=branch)
    if kind:
        queryset = queryset.filter(kind=kind)
    if commit:
        queryset = queryset.filter(revision__commit__istartswith=commit)
    if start is not None:
        queryset = queryset.filter(started_at__gte=start)
    if end is not None:
        queryset = queryset.filter(started_at__lt=end)
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
    if machine:
        queryset = queryset.filter(run__machine__name=machine)
    if branch:
        queryset = queryset.filter(run__revision__branch=branch)
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
    if method:
        queryset = queryset.filter(method=method)
    return list(queryset)


def projects(*, viewer, search: str = "") -> QuerySet[Project]:
    """The projects `viewer` may read, by name, those whose name or slug contains `search` where given."""
    queryset = access.visible(Project.objects.all(), viewer, "pk")
    if search:
        queryset = queryset.filter(Q(name__icontains=search) | Q(slug__icontains=search))
    return queryset.order_by("name", "id")


def benchmarks(*, viewer, project: str | None = None) -> QuerySet[Benchmark]:
    """Benchmarks `viewer` may read with their project, by project and name, filtered by project slug."""
    queryset = access.visible(Benchmark.objects.select_related("project"), viewer)
    if project:
        queryset = queryset.filter(project__slug=project)
    return queryset.order_by("project__name", "name", "id")


def metrics(*, viewer, project: str | None = None, benchmark_id: int | None = None) -> QuerySet[Metric]:
    """Metrics `viewer` may read with their benchmark and project, by project, benchmark and name, filtered by
    project slug and benchmark id."""
    queryset = access.visible(Metric.objects.select_related("benchmark__project"), viewer, "benchmark__project")
    if project:
        queryset = queryset.filter(benchmark__project__slug=project)
    if benchmark_id is not None:
        queryset = queryset.filter(benchmark_id=benchmark_id)
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
    if search:
        queryset = queryset.filter(name__icontains=search)
    return queryset.order_by("name", "id")


def alerts(*, viewer, status: str | None = None, project: str | None = None,
           assignee: AbstractBaseUser | None = None) -> QuerySet[Alert]:
    """The alerts `viewer` may read, newest group first, filtered by status, project slug and the user they are
    assigned to."""
    queryset = access.visible(Alert.objects, viewer, "group__run__project").select_related(
        "group__run__project", "group__run__machine", "group__run__revision", "updated_by", "assignee",
        "comparison__candidate__metric__benchmark", "first_run__revision", "evidence__candidate__metric__benchmark",
    ).prefetch_related("events__user", "group__deliveries")
    if status:
        queryset = queryset.filter(status=status)
    if project:
        queryset = queryset.filter(group__run__project__slug=project)
    if assignee is not None:
        queryset = queryset.filter(assignee=assignee)
    return queryset.order_by("-group__created_at", "id")


def incidents(*, viewer, project: str | None = None) -> QuerySet[Incident]:
    """The incidents of the projects `viewer` may read, newest night first, filtered by project slug."""
    queryset = access.visible(Incident.objects.select_related("project", "machine", "first_run__revision"), viewer)
    if project:
        queryset = queryset.filter(project__slug=project)
    return queryset.order_by("-night", "-id")


@dataclass(frozen=True)
class CommitRange:
    """What changed between an alert's last good run and its first bad one: for a nightly change the newest
    run of its series (the project's default branch on the machine) before its first night, for a pull
    request the base run its series was compared with. A commit is empty where its run has no revision."""

    last_good_run: int | None
    last_good_commit: str
    first_bad_run: int
    first_bad_commit: str


@dataclass(frozen=True)
class AlertEntry:
    """An alert as its list shows it: the comparison row that opened it, its newest pooled evidence (the
    nights since its first night against those before), what other apps add (HTML), and its commit range."""

    alert: Alert
    row: ComparisonRow
    additions: list
    evidence: ComparisonRow | None = None
    commits: CommitRange | None = None


@dataclass(frozen=True)
class ShiftAlert:
    """An alert of a shift listed in another section (another night, page or filter)."""

    alert_id: int
    machine: str
    status: str
    on_page: bool


@dataclass(frozen=True)
class AlertShift:
    """One change of one metric, seen on one machine or several: the section's alerts of it (one per
    machine), every machine any alert of the shift is on, and the shift's alerts listed elsewhere."""

    entries: list[AlertEntry]
    machines: list[str]
    elsewhere: list[ShiftAlert]


@dataclass(frozen=True)
class IncidentEntry:
    """An incident as the alerts page shows it: in one line (:func:`results.notifications.incident_line`), with
    whether the viewer may triage it (once, for all its alerts)."""

    incident: Incident
    line: str
    alerts: int
    triageable: bool


@dataclass(frozen=True)
class AlertSection:
    """The alerts raised in one project's night (or by one pull request's commit), on every machine, with
    the runs that raised them and the incidents among them; ``key`` is the section's anchor."""

    key: str
    project: Project
    runs: list[Run]
    shifts: list[AlertShift]
    night: date | None = None
    pull_request: Revision | None = None
    incidents: list[IncidentEntry] = field(default_factory=list)


@dataclass(frozen=True)
class AlertPage:
    """One page of alerts (``page.object_list``: the alerts), shown in :class:`AlertSection` objects, the alerts
    the viewer may triage (by id), and the users an alert can be assigned to."""

    page: Page
    sections: list[AlertSection]
    assignees: list[AbstractBaseUser]
    triageable: set[int] = field(default_factory=set)


ALERTS_PER_PAGE = 100
SAME_SHIFT = timedelta(hours=36)
"""Alerts of one metric whose first nights lie within this of the shift's first are one change seen on several
machines ("a day or so"): suites start hours apart on different machines, and one machine's shift test may
place the first night a night later than another's."""


def alert_page(*, viewer, status: str | None = None, project: str | None = None,
               assignee: AbstractBaseUser | None = None, page: str | int | None = None) -> AlertPage:
    """One page of :func:`alerts`, each entry with its comparison row and commit range, in sections per
    project and night (or pull-request commit), each alert grouped with the same shift on other machines; a
    fixed number of queries."""
    queryset = alerts(viewer=viewer, status=status, project=project, assignee=assignee).annotate(
        base_run=F("comparison__baseline__run_id"), base_commit=F("comparison__baseline__run__revision__commit"))
    page = Paginator(queryset, ALERTS_PER_PAGE).get_page(page)
    listed = list(page.object_list)
    _with_last_good_runs(listed)
    rows = stored_rows([(alert.comparison.candidate, alert.comparison) for alert in listed])
    pooled = [alert for alert in listed if alert.evidence is not None]
    evidence = dict(zip((alert.pk for alert in pooled),
                        stored_rows([(alert.evidence.candidate, alert.evidence) for alert in pooled])))
    additions = alert_additions(listed)
    entries = [AlertEntry(alert, row, additions.get(alert.pk, []), evidence.get(alert.pk), _commit_range(alert))
               for alert, row in zip(listed, rows)]
    triaged_by = access.projects_with_role(viewer, Role.MAINTAINER)
    triageable = {alert.pk for alert in listed if triaged_by is None or alert.group.run.project_id in triaged_by}
    # Who may follow an alert of the page up: staff, and the maintainers of its projects.
    users = get_user_model().objects.none()
    if triageable:
        users = get_user_model().objects.filter(
            Q(is_staff=True) | Q(memberships__role=Role.MAINTAINER,
                                 memberships__project_id__in={alert.group.run.project_id for alert in listed}),
            is_active=True).distinct().order_by(get_user_model().USERNAME_FIELD)
    incidents = {incident.pk: IncidentEntry(incident=incident, line=incident_line(incident).text,
                                            alerts=incident.alerts.count(),
                                            triageable=triaged_by is None or incident.project_id in triaged_by)
                 for incident in Incident.objects.filter(pk__in={alert.incident_id for alert in listed})
                 .select_related("machine", "first_run__revision")}
    return AlertPage(page=page, sections=_alert_sections(entries, incidents), assignees=list(users),
                     triageable=triageable)


def _with_last_good_runs(listed: list[Alert]) -> None:
    """Set each listed alert's series' last good night (``last_good_run``, ``last_good_commit``): the newest run
    of it before the first bad one (not another suite's run). In one query of the listed alerts alone: computed
    in the page's query, the databases evaluated it for every alert of the list before paginating (1.2 s for
    1,073 alerts on 1M results)."""
    series_before = Run.objects.filter(
        series_nights(branch=OuterRef("first_run__project__default_branch")),
        project_id=OuterRef("first_run__project_id"), machine_id=OuterRef("first_run__machine_id"),
        started_at__lt=OuterRef("first_run__started_at"),
        results__metric_id=OuterRef("comparison__candidate__metric_id"),
    ).order_by("-started_at", "-id")
    found = {pk: (run, commit) for pk, run, commit in Alert.objects.filter(pk__in=[alert.pk for alert in listed])
             .annotate(run=Subquery(series_before.values("pk")[:1]),
                       commit=Subquery(series_before.values("revision__commit")[:1]))
             .values_list("pk", "run", "commit")} if listed else {}
    for alert in listed:
        alert.last_good_run, alert.last_good_commit = found.get(alert.pk, (None, None))


def _commit_range(alert: Alert) -> CommitRange | None:
    first = alert.first_run
    if first is None:
        return None
    pull_request = first.kind == Run.Kind.PR
    return CommitRange(
        last_good_run=alert.base_run if pull_request else alert.last_good_run,
        last_good_commit=(alert.base_commit if pull_request else alert.last_good_commit) or "",
        first_bad_run=first.pk, first_bad_commit=first.revision.commit if first.revision else "")


def _alert_sections(entries: list[AlertEntry], incidents: dict[int, IncidentEntry]) -> list[AlertSection]:
    """The entries in sections (in the order they come), each section's alerts in shifts, each incident in the
    section of its alerts; one query."""
    shift_of, members = _shifts([entry.alert for entry in entries])
    on_page = {entry.alert.pk for entry in entries}
    sections: dict[str, dict] = {}
    for entry in entries:
        run = entry.alert.group.run
        if run.kind == Run.Kind.PR and run.revision is not None:
            key = f"{run.project.slug}-pr-{presentation.short_commit(run.revision.commit)}"
            section = sections.setdefault(key, {"project": run.project, "pull_request": run.revision})
        else:
            night = nights.night_of(run.started_at)
            key = f"{run.project.slug}-{night.isoformat()}"
            section = sections.setdefault(key, {"project": run.project, "night": night})
        section.setdefault("runs", {})[run.pk] = run
        section.setdefault("shifts", defaultdict(list))[shift_of[entry.alert.pk]].append(entry)
        if entry.alert.incident_id is not None:
            section.setdefault("incidents", {})[entry.alert.incident_id] = incidents[entry.alert.incident_id]
    shown = []
    for key, section in sections.items():
        shifts = []
        for shift, shift_entries in section.pop("shifts").items():
            listed = {entry.alert.pk for entry in shift_entries}
            shift_entries.sort(key=lambda entry: entry.alert.group.run.machine.name)
            shifts.append(AlertShift(
                entries=shift_entries, machines=sorted({member["machine"] for member in members[shift]}),
                elsewhere=[ShiftAlert(alert_id=member["pk"], machine=member["machine"],
                                      status=AlertStatus(member["status"]).label, on_page=member["pk"] in on_page)
                           for member in members[shift] if member["pk"] not in listed]))
        shifts.sort(key=lambda shift: (shift.entries[0].row.benchmark, shift.entries[0].row.metric))
        runs = sorted(section.pop("runs").values(), key=lambda run: (run.machine.name, run.started_at))
        found = sorted(section.pop("incidents", {}).values(), key=lambda entry: entry.incident.pk)
        shown.append(AlertSection(key=key, runs=runs, shifts=shifts, incidents=found, **section))
    return shown


def _shifts(listed: list[Alert]) -> tuple[dict[int, tuple], dict[tuple, list[dict]]]:
    """Each listed alert's shift, and each shift's alerts (listed or not: on another page, filtered out); one
    query. A shift is the alerts of one metric (of one pull-request commit, for pull requests' alerts) whose
    first nights lie within :data:`SAME_SHIFT` of the earliest."""
    dated = [alert for alert in listed if alert.first_run is not None]
    members: dict[tuple, list[dict]] = defaultdict(list)
    shift_of: dict[int, tuple] = {}
    if dated:
        times = [alert.first_run.started_at for alert in dated]
        found = Alert.objects.filter(
            comparison__candidate__metric_id__in={alert.comparison.candidate.metric_id for alert in dated},
            first_run__started_at__gte=min(times) - SAME_SHIFT, first_run__started_at__lte=max(times) + SAME_SHIFT,
        ).order_by("first_run__started_at", "pk").values(
            "pk", "status", metric=F("comparison__candidate__metric_id"), machine=F("first_run__machine__name"),
            started=F("first_run__started_at"), kind=F("first_run__kind"), commit=F("first_run__revision__commit"))
        earliest: dict[tuple, datetime] = {}
        for member in found:
            series = (member["metric"], member["commit"] if member["kind"] == Run.Kind.PR else "")
            if series not in earliest or member["started"] - earliest[series] > SAME_SHIFT:
                earliest[series] = member["started"]
            shift = (*series, earliest[series])
            members[shift].append(member)
            shift_of[member["pk"]] = shift
    for alert in listed:
        if alert.pk not in shift_of:  # no first night recorded: a shift of its own
            shift_of[alert.pk] = ("alert", alert.pk)
            members[shift_of[alert.pk]] = [{"pk": alert.pk, "status": alert.status,
                                            "machine": alert.group.run.machine.name}]
    return shift_of, members


# The results pages: nightly overview, any two runs compared, pull-request review.
#
# All three show the same table, one results.rows.ComparisonRow per series, read by the comparison
# service (results.comparisons.stored_rows). Each selector below issues a fixed number of queries (the
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
    machine); one query of (id, metric, run) triples."""
    order = {run.pk: (run.started_at, run.pk) for run in night_runs}
    machine = {run.pk: run.machine_id for run in night_runs}
    newest: dict[tuple[int, int], tuple[int, int]] = {}
    replaced = []
    for pk, metric, run in Result.objects.filter(run_id__in=list(order)).values_list("pk", "metric_id", "run_id"):
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
    found = Incident.objects.filter(project_id__in={key[0] for key in wanted}, machine_id__in={key[1] for key in wanted},
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
            .values_list("metric_id", "run_id"):
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
    rows.
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
    results = matching.select_related("metric__benchmark").defer("samples")
    if limit is not None:
        rank = Case(*[When(history_comparison__verdict=value, then=Value(order))
                      for value, order in VERDICT_ORDER.items() if value != NOT_COMPARED],
                    default=Value(VERDICT_ORDER[NOT_COMPARED]))
        size = Coalesce(Abs(F("history_comparison__ratio") - 1.0), Value(0.0))
        results = results.annotate(notability=Window(
            RowNumber(), partition_by=[F(name) for name in group_fields],
            order_by=[rank.asc(), size.desc(), F("metric__benchmark__name").asc(), F("metric__name").asc()],
        )).filter(notability__lte=limit)
    # The history comparison's fields come with the result (no second query, no prefetch).
    results = list(results.annotate(**{f"history_{name}": F(f"history_comparison__{name}")
                                       for name in _HISTORY_FIELDS}))
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
                    machines={run.pk: run.machine.name for run in night_runs}),
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


RECENT_RUNS = 200


def recent_runs(*, viewer, search: str = "", include: Sequence[int] = (), limit: int = RECENT_RUNS) -> list[dict]:
    """The newest ``limit`` runs `viewer` may read, for the compare page's pickers, by project then newest first:
    those whose commit starts with `search` or whose branch contains it (case-insensitive; empty: every run),
    and the runs `include` names whatever they are (the ones chosen). One query of plain rows."""
    queryset = access.visible(Run.objects.all(), viewer)
    if search:
        queryset = queryset.filter(Q(revision__commit__istartswith=search) | Q(revision__branch__icontains=search)
                                   | Q(pk__in=include))
    newest = ["-started_at", "-id"]
    if include:
        queryset = queryset.annotate(chosen=Case(When(pk__in=include, then=Value(0)), default=Value(1)))
        newest.insert(0, "chosen")
    rows = list(queryset.order_by(*newest).values(
        "pk", "kind", "started_at", project_name=F("project__name"), machine_name=F("machine__name"),
        commit=F("revision__commit"), branch=F("revision__branch"))[:limit])
    rows.sort(key=lambda row: (row["started_at"], row["pk"]), reverse=True)
    rows.sort(key=lambda row: row["project_name"])
    return rows


COMPARE_SHORTCUTS = {"nightly": "against tonight's baseline", "base": "against its base"}
"""The compare page's shortcuts: a run against the newest nightly before it, a pull request against its base."""


def shortcut_baseline(*, candidate_id: int, against: str, viewer) -> int:
    """The run a compare shortcut (:data:`COMPARE_SHORTCUTS`) takes as the baseline of run `candidate_id`.

    ``nightly``: the newest completed nightly run of the project's default branch on the same machine
    started before it that measured one of its series (several suites may post a run each night). ``base``:
    for a pull-request run, the newest run of the base results its own comparison takes, series by series
    (:func:`results.baselines.pull_request_bases`, leaving out the series that fell back to the default
    branch). A few queries. Raises Run.DoesNotExist, saying which run is
    missing; ValueError for ``base`` of a run without a base commit, or an unknown shortcut.
    """
    if against not in COMPARE_SHORTCUTS:
        raise ValueError(f"Unknown shortcut {against!r}: choose {' or '.join(COMPARE_SHORTCUTS)}.")
    run = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer).filter(
        pk=candidate_id).first()
    if run is None:
        raise Run.DoesNotExist(f"No run {candidate_id}.")
    if against == "nightly":
        found = nightly_before(run)
        if found is None:
            raise Run.DoesNotExist(no_nightly_before(run))
        return found
    base_commit = run.revision.base_commit if run.kind == Run.Kind.PR and run.revision else ""
    if not base_commit:
        raise ValueError(f"Run #{run.pk} is not a pull request's with a base commit: it has no base to compare with.")
    # The base the pull request's own comparison took, series by series: the newest run holding one of them.
    bases = pull_request_bases(run, list(Result.objects.filter(run=run).values_list("metric_id", flat=True)))
    found = (Run.objects.filter(pk__in=[base.run_id for base in bases.values() if not base.fallback])
             .order_by("-started_at", "-id").values_list("pk", flat=True).first())
    if found is None:
        raise Run.DoesNotExist(f"No run of the base commit {presentation.short_commit(base_commit)} on "
                               f"{run.machine.name}.")
    return found


def nightly_before(run: Run) -> int | None:
    """The newest completed nightly run of the project's default branch on `run`'s machine, started before it,
    that measured one of its series (several suites may post a run each night): tonight's baseline; one
    query."""
    return (Run.objects.filter(
        series_nights(branch=run.project.default_branch), project_id=run.project_id, machine_id=run.machine_id,
        kind=Run.Kind.NIGHTLY, started_at__lt=run.started_at,
        pk__in=Result.objects.filter(metric_id__in=Result.objects.filter(run=run).values("metric_id"))
        .values("run_id"),
    ).exclude(pk=run.pk).order_by("-started_at", "-id").values_list("pk", flat=True).first())


def no_nightly_before(run: Run) -> str:
    """Why a run has no nightly baseline, saying what was looked for."""
    return (f"No nightly run of {run.project.default_branch} on {run.machine.name} started before run #{run.pk} "
            "measured any of its benchmarks (runs of other kinds, branches or machines are not its baseline).")


@dataclass(frozen=True)
class PullRequestReview:
    """A pull-request run against its base: the stored pairwise comparisons, and the runs their base
    results came from (each series is compared with its own newest base-commit result, so a base
    measured by several suites has several runs); ``fallbacks`` counts the series compared with a
    default-branch result because the base commit has none of them on this machine."""

    run: Run
    base_runs: list[Run]
    rows: list[ComparisonRow]
    counts: dict[str, int]
    fallbacks: int = 0
    failures: list[FailedResult] = field(default_factory=list)
    nightly_baseline: int | None = None

    @property
    def compared(self) -> bool:
        return self.run.compared_at is not None

    @property
    def state_differences(self) -> list[str]:
        """How the machine's state differed between the base run and the head, enough to move their numbers
        (:func:`results.machine_state.state_differences`)."""
        base = self.base_run
        return [] if base is None else machine_state.state_differences(base.environment, self.run.environment)

    @property
    def base_run(self) -> Run | None:
        """The newest base run (the Compare page's baseline)."""
        return self.base_runs[-1] if self.base_runs else None


def pr_review(*, run_id: int, viewer) -> PullRequestReview:
    """A pull-request run with its stored pairwise comparisons, worst first; a fixed number of queries.

    Raises Run.DoesNotExist when there is no pull-request run with that id that `viewer` may read.
    """
    run = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer).get(
        pk=run_id, kind=Run.Kind.PR)
    both = list(Comparison.objects.filter(candidate__run_id=run_id,
                                          method__in=[ComparisonMethod.PAIRWISE, ComparisonMethod.BOOTSTRAP])
                .select_related("candidate__metric__benchmark", "baseline__run__revision", "baseline__run__machine")
                .defer("candidate__samples", "baseline__samples"))
    stored = [c for c in both if c.method == ComparisonMethod.PAIRWISE]
    bootstrapped = {row.metric_id: row.bootstrap for row in stored_rows(
        [(c.candidate, c) for c in both if c.method == ComparisonMethod.BOOTSTRAP])}
    base_runs = sorted({c.baseline.run.pk: c.baseline.run for c in stored if c.baseline is not None}.values(),
                       key=lambda base: (base.started_at, base.pk))
    sparklines = _sparklines({(c.candidate.metric_id, run.machine_id) for c in stored}, projects={run.project_id})
    rows = [replace(row, bootstrap=bootstrapped.get(row.metric_id))
            for row in stored_rows([(c.candidate, c) for c in stored], machines={run.pk: run.machine.name})]
    rows = _with_sparklines(rows, sparklines, machine_ids={run.pk: run.machine_id})
    failures = list(FailedResult.objects.filter(run=run).select_related("metric__benchmark")
                    .order_by("metric__benchmark__name", "metric__name"))
    return PullRequestReview(run=run, base_runs=base_runs, rows=rows, counts=presentation.verdict_counts(rows),
                             fallbacks=sum(1 for c in stored if (c.inputs or {}).get("base_fallback")),
                             failures=failures, nightly_baseline=nightly_before(run))


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
        kind=F("run__kind"))[:limit + 1])
    truncated = len(rows) > limit
    rows = rows[:limit][::-1]
    shown: dict[int, dict] = {}
    preference = {ComparisonMethod.HISTORY: 0, ComparisonMethod.PAIRWISE: 1}
    for comparison in Comparison.objects.filter(
            candidate_id__in=[row["id"] for row in rows], method__in=list(preference)).values(
            "candidate_id", "method", "ratio", "ci_low", "ci_high", "pvalue", "qvalue", "verdict",
            "confidence_level", band=KeyTransform("band", "inputs"), alert_id=F("alert__id"),
            alert_status=F("alert__status")):
        current = shown.get(comparison["candidate_id"])
        if current is None or preference[comparison["method"]] < preference[current["method"]]:
            shown[comparison["candidate_id"]] = comparison
    means = {(row["run_id"], row["machine"]): row["mean"] for row in rows}
    for row in rows:
        row["comparison"] = shown.get(row["id"])
    change_points = []
    if rows:
        found = ChangePoint.objects.filter(metric=metric, machine__name__in=chosen, retracted_at__isnull=True,
                                           run__started_at__gte=rows[0]["started_at"],
                                           run__started_at__lte=rows[-1]["started_at"])
        for row in found.order_by("run__started_at").values(
                "run_id", "ratio", "ci_low", "ci_high", "pvalue", "machine__name", started_at=F("run__started_at")):
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


@dataclass(frozen=True)
class RunDetail:
    """One run with what its page shows of it: its results (with samples) and its stored comparisons."""

    run: Run
    results: list[Result]
    comparisons: list[Comparison]
    failures: list[FailedResult]
    nightly_baseline: int | None = None


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


def run_detail(*, run_id: int, viewer) -> RunDetail:
    """A run, its results (with samples), its failed results, its stored comparisons and tonight's baseline
    (:func:`nightly_before`); five queries. Raises
    Run.DoesNotExist (also for a run `viewer` may not read)."""
    run = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer).get(pk=run_id)
    results = list(Result.objects.filter(run=run).select_related(*RESULT_FIELDS_FOR_TABLES)
                   .order_by("metric__benchmark__name", "metric__name"))
    comparisons = list(
        Comparison.objects.filter(candidate__run=run)
        .select_related("candidate__metric__benchmark", "baseline__run__revision", "alert")
        .defer("candidate__samples", "baseline__samples")
        .order_by("candidate__metric__benchmark__name", "candidate__metric__name", "method"))
    failures = list(FailedResult.objects.filter(run=run).select_related("metric__benchmark")
                    .order_by("metric__benchmark__name", "metric__name"))
    return RunDetail(run=run, results=results, comparisons=comparisons, failures=failures,
                     nightly_baseline=nightly_before(run))


