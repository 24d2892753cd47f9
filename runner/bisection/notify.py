"""Telling a project what a bisection found (its culprit, or why none is named) on each of its channels, once: an
attempt is claimed by one worker, each channel told is recorded as soon as it is, a failed one is retried with the
alert notifications' backoff (:data:`results.notifications.RETRY_AFTER`) and given up after
:data:`results.notifications.MAX_ATTEMPTS`, its error kept and shown."""

from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from results import notifications
from results.outbound import OutboundRefused
from results.presentation import single_line

from ..models import Bisection, BisectionStatus, Session
from . import report

TOLD = (BisectionStatus.FOUND, BisectionStatus.NOT_ISOLATED)
"""What a project is told of: a bisection that named a culprit or found none (not one cancelled or failed)."""
FIRST_AFTER = timedelta(minutes=2)
"""The catch-up tells a bisection whose telling was never tried (its task lost) this long after it ended."""


def notify_bisection(*, bisection_id: int) -> Bisection:
    """Tell the bisection's project what it found on every channel not told yet, if an attempt is due and this
    worker claims it; the bisection is notified once every channel is told or given up."""
    bisection = (Bisection.objects.select_related("job__project", "job__machine",
                                                  "alert__comparison__candidate__metric__benchmark")
                 .get(pk=bisection_id))
    now = timezone.now()
    if bisection.notified_at is not None or bisection.status not in TOLD or (
            bisection.notify_next_at is not None and bisection.notify_next_at > now):
        return bisection
    # Claimed by one update: two workers never tell at once, and an attempt counts even if this one dies.
    claim = Bisection.objects.filter(pk=bisection.pk, notify_attempts=bisection.notify_attempts,
                                     notified_at__isnull=True)
    if bisection.notify_attempts >= notifications.MAX_ATTEMPTS or not claim.update(
            notify_attempts=F("notify_attempts") + 1, notify_next_at=now + notifications.CLAIM):
        return bisection
    attempts = bisection.notify_attempts + 1
    project = bisection.job.project
    told, error = list(bisection.notified_channels), ""
    message = _message(bisection)
    for channel in notifications.project_channels(project):
        if channel in told:
            continue
        try:
            notifications.tell_project(project, channel, **message)
        except notifications.CHANNEL_ERRORS as failure:
            error = f"{channel}: {failure}"[:2000]
            if not isinstance(failure, OutboundRefused):
                continue
            # Refused for good (a private address): given up at once, its error kept.
        told.append(channel)
        Bisection.objects.filter(pk=bisection.pk).update(notified_channels=told)
    done = set(notifications.project_channels(project)) <= set(told) or attempts >= notifications.MAX_ATTEMPTS
    retry = notifications.RETRY_AFTER[min(attempts, len(notifications.RETRY_AFTER)) - 1]
    Bisection.objects.filter(pk=bisection.pk).update(
        notify_error=error, notified_at=timezone.now() if done else None,
        notify_next_at=None if done else timezone.now() + retry)
    bisection.refresh_from_db()
    return bisection


def pending_notifications() -> list[int]:
    """Bisections whose telling is due: never tried since they ended a while ago (a task lost), or retried now."""
    now = timezone.now()
    return list(Bisection.objects.filter(status__in=TOLD, notified_at__isnull=True,
                                         notify_attempts__lt=notifications.MAX_ATTEMPTS).filter(
        Q(notify_next_at__isnull=True, finished_at__lt=now - FIRST_AFTER) | Q(notify_next_at__lte=now))
        .values_list("pk", flat=True))


def _message(bisection: Bisection) -> dict:
    """The subject, text, HTML and JSON fields that tell what the bisection found."""
    alert = bisection.alert
    metric = alert.comparison.candidate.metric
    project = bisection.job.project
    sessions = Session.objects.filter(bisection_step__bisection=bisection)
    seconds = report.machine_seconds(sessions)
    found = report.summary(bisection, seconds=seconds)
    series = single_line(f"{metric.benchmark.name} · {metric.name} on {bisection.job.machine.name}")
    path = f"{reverse('results:alerts')}?{urlencode({'project': project.slug})}#alert-{alert.pk}"
    url = notifications.site_url(path)
    name = single_line(project.name)
    text = f"Pilot Web: {name}, bisection of alert #{alert.pk} ({series}): {found}" + (f" {url}" if url else "")
    html = format_html("<p><strong>Pilot Web: {}</strong>, bisection of {} ({}): {}</p>", name,
                       format_html('<a href="{}">alert #{}</a>', url, alert.pk) if url else f"alert #{alert.pk}",
                       series, found)
    fields = {"event": "bisection", "project": project.slug, "alert": alert.pk, "bisection": bisection.pk,
              "status": bisection.status, "culprit": bisection.culprit or None, "change": bisection.change,
              "low": bisection.low, "high": bisection.high, "reason": bisection.reason or None,
              "sessions": sessions.count(), "machine_seconds": seconds, "url": url or None}
    return {"subject": f"{name}: bisection of alert #{alert.pk}: {found}", "text": text, "html": html,
            "fields": fields}
