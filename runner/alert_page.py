"""The runner's part of the alert list (registered with :func:`results.extensions.add_to_alerts`): the
interleaved A/B sessions that re-measured each alert, with what they found, and the bisection of its night (shared
by the night's series on its machine): its range, each step, the culprit; a button to start or cancel one for
those who may triage the alert."""

from collections import defaultdict
from collections.abc import Collection, Sequence

from django.db.models import Count

from results.extensions import AlertAddition
from results.models import Alert

from .bisection import report
from .bisection.service import ACTIVE, SETTLED, bisects, refusal
from .models import Bisection, BisectionStep, Job, Session
from .pairs import session_pairs


def confirmation_sessions(alerts: Sequence[Alert], *, triageable: Collection[int] = ()) -> dict[int, AlertAddition]:
    """The sessions that confirmed or are confirming each alert, by alert id; one query."""
    sessions = defaultdict(list)
    for session in (Session.objects.filter(confirms__in=alerts).select_related("job__machine")
                    .order_by("queued_at", "id")):
        sessions[session.confirms_id].append((session, session_pairs(session)))
    return {alert_id: AlertAddition("runner/_alert_confirmations.html", {"confirmations": listed})
            for alert_id, listed in sessions.items()}


def confirmation_session_ids(alerts: Sequence[Alert]) -> dict[int, list[int]]:
    """Ids of the sessions confirming each alert, oldest first; one query."""
    found = defaultdict(list)
    for alert_id, session_id in (Session.objects.filter(confirms__in=alerts).order_by("queued_at", "id")
                                 .values_list("confirms_id", "pk")):
        found[alert_id].append(session_id)
    return dict(found)


def bisections(alerts: Sequence[Alert], *, triageable: Collection[int] = ()) -> dict[int, AlertAddition]:
    """By alert id: the bisections of each alert's night on its machine, newest first, with their steps; a
    form to start one where the viewer may triage a confirmed nightly regression that a job can bisect, whose
    night has none under way or that found its culprit, and to cancel one under way. Four queries."""
    nights = {alert.first_run_id for alert in alerts if alert.first_run_id}
    found = defaultdict(list)
    for bisection in (Bisection.objects.filter(alert__first_run__in=nights).select_related("alert", "job__project",
                                                                                            "requested_by")
                      .order_by("-created_at", "-id")):
        found[bisection.alert.first_run_id].append(bisection)
    steps = defaultdict(list)
    for step in (BisectionStep.objects.filter(bisection__in=[b for listed in found.values() for b in listed])
                 .select_related("session").annotate(readings=Count("session__rounds"))
                 .order_by("bisection", "position")):
        steps[step.bisection_id].append(step)
    bisectable = _bisectable(alerts, triageable, found)
    additions = {}
    for alert in alerts:
        listed = [{"bisection": bisection, "rows": report.step_rows(bisection, steps[bisection.pk]),
                   "summary": (report.culprit_effect if bisection.culprit else report.summary)(
                       bisection, seconds=report.machine_seconds(step.session for step in steps[bisection.pk])),
                   "active": bisection.status in ACTIVE, "shared": bisection.alert_id != alert.pk,
                   "project": bisection.job.project}
                  for bisection in found.get(alert.first_run_id, [])]
        if listed or alert.pk in bisectable:
            additions[alert.pk] = AlertAddition("runner/_alert_bisection.html", {
                "alert": alert, "bisections": listed, "may_start": alert.pk in bisectable,
                "may_cancel": alert.pk in triageable})
    return additions


def _bisectable(alerts: Sequence[Alert], triageable: Collection[int], found: dict[int, list]) -> set[int]:
    """The alerts the viewer may start a bisection of (:func:`runner.bisection.service.refusal` says none of them
    is refused): those they may triage, whose night has none under way nor found its culprit, with a job of their
    benchmark on their machine that :func:`runner.bisection.service.bisects` them. One query."""
    wanted = [alert for alert in alerts if alert.pk in triageable and not refusal(alert)
              and not any(bisection.status in SETTLED for bisection in found.get(alert.first_run_id, []))]
    if not wanted:
        return set()
    jobs = defaultdict(list)
    for job in Job.objects.filter(enabled=True, project_id__in={alert.group.run.project_id for alert in wanted}):
        jobs[job.project_id, job.machine_id, job.benchmark].append(job)

    def bisectable(alert: Alert) -> bool:
        metric = alert.comparison.candidate.metric
        candidates = jobs[alert.group.run.project_id, alert.first_run.machine_id, metric.benchmark.name]
        return any(bisects(job, metric.name) for job in candidates)

    return {alert.pk for alert in wanted if bisectable(alert)}
