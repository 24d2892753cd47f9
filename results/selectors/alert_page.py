"""The alerts page: alerts grouped by project, machine and night, with their commit ranges, shifts and incidents."""


from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from django.core.paginator import Page, Paginator
from django.db.models import (
    F,
    OuterRef,
    Q,
    Subquery,
)

from ..stored_rows import stored_rows
from ..extensions import alert_additions
from ..notifications import incident_line
from ..models import (
    Alert,
    AlertStatus,
    Incident,
    Project,
    Revision,
    Role,
    Run,
    series_nights,
)
from .. import access, nights, presentation
from ..rows import ComparisonRow
from .lists import alerts


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
    shown_above: bool = False
    """Already shown, with its form, in a section above (its alerts were opened on several nights): said here in
    a line linking to it."""


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
    triaged_by = access.projects_with_role(viewer, Role.MAINTAINER)
    triageable = {alert.pk for alert in listed if triaged_by is None or alert.group.run.project_id in triaged_by}
    additions = alert_additions(listed, triageable=triageable)
    entries = [AlertEntry(alert, row, additions.get(alert.pk, []), evidence.get(alert.pk), _commit_range(alert))
               for alert, row in zip(listed, rows)]
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
                 .select_related("machine", "first_run__revision", "assignee")}
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
    told: set[int] = set()
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
        found = [replace(entry, shown_above=entry.incident.pk in told) for entry in sorted(
            section.pop("incidents", {}).values(), key=lambda entry: entry.incident.pk)]
        told.update(entry.incident.pk for entry in found)
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
