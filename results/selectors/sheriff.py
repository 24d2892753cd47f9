"""The numbers a project's sheriffs are judged by, week by week: the nightly alerts and the incidents opened, the
share later found false (:func:`results.decisions.is_false_alert`: the false alerts users see), regressions
confirmed, the time from a change's first bad night to its alert, and from the alert to its first triage, and the
bisections that ended, the culprits they named and the machine time they took (from the apps that bisect:
:func:`results.extensions.bisections_ended`). Three queries and the providers', whatever the number of alerts."""

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import NamedTuple

from django.db.models import Min, Q
from django.utils import timezone

from .. import access
from ..decisions import CHANGE_SIDES, is_false_alert
from ..extensions import BisectionEnd, bisections_ended
from ..models import Alert, AlertState, AlertStatus, Incident, Project, RunKind

SHERIFF_WEEKS = 26
"""Weeks shown by default: half a year."""
SHERIFF_MAX_WEEKS = 260
"""The most weeks one request may ask for: five years."""


class _SheriffAlert(NamedTuple):
    """What the numbers read of one alert: when it was opened, its first bad night, its status, state and
    verdict, its first triage (None where none was) and when its first night's run was stored."""

    opened: datetime
    first: datetime | None
    status: str
    state: str
    verdict: str
    triaged: datetime | None
    stored: datetime | None


@dataclass(frozen=True)
class SheriffWeek:
    """One week's numbers (its alerts and incidents are those opened in it).

    ``false_alerts``: of its alerts, those later marked invalid or dismissed by measurement. The hours are
    medians: from a change's first bad night to its alert, and from the alert to its first change of status
    (None where none was). ``bisections``: those that ended in the week, ``culprits`` those of them that named
    one, ``bisection_hours`` the machine time they took together."""

    start: date
    alerts: int
    incidents: int
    false_alerts: int
    regressions_confirmed: int
    hours_to_alert: float | None
    hours_to_triage: float | None
    bisections: int = 0
    culprits: int = 0
    bisection_hours: float = 0.0

    @property
    def false_share(self) -> float | None:
        return self.false_alerts / self.alerts if self.alerts else None


@dataclass(frozen=True)
class SheriffNumbers:
    """A project's sheriff numbers over ``weeks`` (oldest first) and in total; ``untriaged``: alerts of the period
    still new."""

    project: Project
    weeks: list[SheriffWeek]
    total: SheriffWeek
    untriaged: int


def sheriff_numbers(*, viewer, project: str, weeks: int = SHERIFF_WEEKS, now: datetime | None = None
                    ) -> SheriffNumbers:
    """The sheriff numbers of the project `project` (a slug) that `viewer` may read, over the last `weeks` weeks
    (Monday to Sunday, the current one included). Raises Project.DoesNotExist."""
    found = access.visible(Project.objects.all(), viewer, "pk").get(slug=project)
    today = timezone.localdate(now or timezone.now())
    first = today - timedelta(days=today.weekday() + 7 * (weeks - 1))
    since = timezone.make_aware(datetime.combine(first, datetime.min.time()))
    # Nightly alerts: a pull request's are its review's, not the sheriffs'.
    alerts = (Alert.objects.filter(group__run__project=found, created_at__gte=since)
              .exclude(group__run__kind=RunKind.PR)
              .annotate(triaged_at=Min("events__created_at", filter=Q(events__old_status=AlertStatus.NEW)))
              .values_list("created_at", "first_run__started_at", "status", "state", "comparison__verdict",
                           "triaged_at", "first_run__created_at"))
    opened_incidents = Incident.objects.filter(project=found, created_at__gte=since).values_list("created_at",
                                                                                               flat=True)
    by_week: dict[date, list[_SheriffAlert]] = defaultdict(list)
    for entry in map(_SheriffAlert._make, alerts):
        by_week[_week(entry.opened)].append(entry)
    incidents_by_week: dict[date, int] = defaultdict(int)
    for created in opened_incidents:
        incidents_by_week[_week(created)] += 1
    bisections_by_week: dict[date, list[BisectionEnd]] = defaultdict(list)
    for ended in bisections_ended(found.pk, since):
        bisections_by_week[_week(ended.ended_at)].append(ended)
    starts = [first + timedelta(days=7 * index) for index in range(weeks)]
    every = [entry for start in starts for entry in by_week.get(start, [])]
    return SheriffNumbers(
        project=found,
        weeks=[_numbers(start, by_week.get(start, []), incidents_by_week.get(start, 0),
                        bisections_by_week.get(start, [])) for start in starts],
        total=_numbers(first, every, sum(incidents_by_week.get(start, 0) for start in starts),
                       [ended for start in starts for ended in bisections_by_week.get(start, [])]),
        untriaged=sum(entry.status == AlertStatus.NEW for entry in every),
    )


def _week(moment: datetime) -> date:
    day = timezone.localdate(moment)
    return day - timedelta(days=day.weekday())


def _numbers(start: date, alerts: list[_SheriffAlert], incidents: int, bisections: list[BisectionEnd]
             ) -> SheriffWeek:
    # From the first bad night, or from when its run was stored if that was later (a history imported today is
    # alerted on today, not years after its nights); an alert re-placed on a later first night (its shift began
    # after the nights that opened it) took no time.
    to_alert = [max((alert.opened - max(alert.first, alert.stored)).total_seconds() / 3600, 0.0)
                for alert in alerts if alert.first is not None]
    to_triage = [(alert.triaged - alert.opened).total_seconds() / 3600 for alert in alerts
                 if alert.triaged is not None]
    return SheriffWeek(
        start=start,
        alerts=len(alerts),
        incidents=incidents,
        false_alerts=sum(is_false_alert(alert.status, alert.state) for alert in alerts),
        regressions_confirmed=sum(alert.state == AlertState.CONFIRMED and CHANGE_SIDES.get(alert.verdict) ==
                                  "regression" and alert.status != AlertStatus.INVALID for alert in alerts),
        hours_to_alert=statistics.median(to_alert) if to_alert else None,
        hours_to_triage=statistics.median(to_triage) if to_triage else None,
        bisections=len(bisections), culprits=sum(ended.found for ended in bisections),
        bisection_hours=sum(ended.machine_seconds for ended in bisections) / 3600,
    )
