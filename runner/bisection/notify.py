"""Telling a project what a bisection found (its culprit, or why none is named) on each of its channels, once:
each channel is told on its own and retried by the periodic catch-up until :data:`MAX_ATTEMPTS`, its error kept."""

from datetime import timedelta
from urllib.parse import urlencode

from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from results import notifications
from results.outbound import OutboundRefused

from ..models import Bisection, BisectionStatus, Session
from . import report

TOLD = (BisectionStatus.FOUND, BisectionStatus.NOT_ISOLATED)
"""What a project is told of: a bisection that named a culprit or found none (not one cancelled or failed)."""
MAX_ATTEMPTS = 5
RETRY_AFTER = timedelta(minutes=2)


def notify_bisection(*, bisection_id: int) -> Bisection:
    """Tell the bisection's project what it found on every channel not told yet; the bisection is notified once
    every channel is told or given up."""
    with transaction.atomic():
        # Locked while telling: the task and the catch-up never tell one channel twice.
        bisection = (Bisection.objects.select_for_update(of=("self",))
                     .select_related("job__project", "job__machine", "alert__comparison__candidate__metric__benchmark")
                     .get(pk=bisection_id))
        if bisection.notified_at is not None or bisection.status not in TOLD:
            return bisection
        project = bisection.job.project
        told = list(bisection.notified_channels)
        message = _message(bisection)
        error = ""
        for channel in notifications.project_channels(project):
            if channel in told:
                continue
            try:
                notifications.tell_project(project, channel, **message)
            except notifications.CHANNEL_ERRORS as failure:
                error = f"{channel}: {failure}"[:2000]
                if isinstance(failure, OutboundRefused):
                    told.append(channel)  # refused for good (a private address): given up at once
            else:
                told.append(channel)
        bisection.notify_attempts += 1
        bisection.notified_channels, bisection.notify_error = told, error
        done = set(notifications.project_channels(project)) <= set(told) or bisection.notify_attempts >= MAX_ATTEMPTS
        if done:
            bisection.notified_at = timezone.now()
        bisection.save(update_fields=["notify_attempts", "notified_channels", "notify_error", "notified_at"])
    return bisection


def pending_notifications() -> list[int]:
    """Bisections whose telling is still due (a task lost, or a channel to retry)."""
    return list(Bisection.objects.filter(status__in=TOLD, notified_at__isnull=True,
                                         finished_at__lt=timezone.now() - RETRY_AFTER).values_list("pk", flat=True))


def _message(bisection: Bisection) -> dict:
    alert = bisection.alert
    metric = alert.comparison.candidate.metric
    sessions = Session.objects.filter(bisection_step__bisection=bisection)
    seconds = report.machine_seconds(sessions)
    found = report.summary(bisection, seconds=seconds)
    series = f"{metric.benchmark.name} · {metric.name} on {bisection.job.machine.name}"
    path = f"{reverse('results:alerts')}?{urlencode({'project': bisection.job.project.slug})}#alert-{alert.pk}"
    url = notifications.site_url(path)
    text = f"Pilot Web: {bisection.job.project.name}, bisection of alert #{alert.pk} ({series}): {found}" + (
        f" {url}" if url else "")
    html = format_html("<p><strong>Pilot Web: {}</strong>, bisection of {} ({}): {}</p>", bisection.job.project.name,
                       format_html('<a href="{}">alert #{}</a>', url, alert.pk) if url else f"alert #{alert.pk}",
                       series, found)
    fields = {"event": "bisection", "project": bisection.job.project.slug, "alert": alert.pk,
              "bisection": bisection.pk, "status": bisection.status, "culprit": bisection.culprit or None,
              "change": bisection.change, "low": bisection.low, "high": bisection.high,
              "reason": bisection.reason or None, "sessions": sessions.count(), "machine_seconds": seconds,
              "url": url or None}
    return {"subject": f"{bisection.job.project.name}: bisection of alert #{alert.pk}: {found}", "text": text,
            "html": html, "fields": fields}
