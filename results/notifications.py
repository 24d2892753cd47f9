"""Telling people about regressions: Django's email backend and an optional JSON webhook per project."""

import json
import urllib.request
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from .models import AlertGroup

WEBHOOK_TIMEOUT = 10


def alert_group_payload(group: AlertGroup) -> dict:
    run = group.run
    return {
        "event": "regressions",
        "project": run.project.slug,
        "run": run.pk,
        "machine": run.machine.name,
        "commit": run.revision.commit if run.revision else None,
        "branch": run.revision.branch if run.revision else None,
        "alerts": [
            {"id": alert.pk, "benchmark": alert.comparison.candidate.metric.benchmark.name,
             "metric": alert.comparison.candidate.metric.name, "ratio": alert.comparison.ratio,
             "low": alert.comparison.ci_low, "high": alert.comparison.ci_high,
             "pvalue": alert.comparison.pvalue, "qvalue": alert.comparison.qvalue}
            for alert in group.alerts.all()
        ],
    }


def pending_groups(*, older_than: timedelta = timedelta(minutes=2)) -> list[int]:
    """Alert groups not notified yet (their enqueue was lost), oldest first."""
    return list(AlertGroup.objects.filter(notified_at__isnull=True, created_at__lt=timezone.now() - older_than)
                .order_by("created_at").values_list("pk", flat=True))


def notify_alert_group(*, group_id: int) -> None:
    """Send one email and one webhook call for a run's new alerts; a group is notified once."""
    group = (AlertGroup.objects.select_related("run__project", "run__machine", "run__revision")
             .prefetch_related("alerts__comparison__candidate__metric__benchmark").get(pk=group_id))
    if group.notified_at is not None:
        return
    project = group.run.project
    payload = alert_group_payload(group)
    recipients = [address.strip() for address in project.notify_emails.split(",") if address.strip()]
    if recipients:
        lines = [f"- {a['benchmark']} · {a['metric']}: ×{a['ratio']:.3f} [{a['low']:.3f}, {a['high']:.3f}]"
                 for a in payload["alerts"]]
        send_mail(
            subject=f"[Pilot Web] {project.name}: {len(lines)} regression(s) in run #{group.run_id}",
            message="\n".join([f"Run #{group.run_id} on {payload['machine']} regressed:", *lines]),
            from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=recipients,
        )
    if project.webhook_url:
        request = urllib.request.Request(project.webhook_url, data=json.dumps(payload).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT):
            pass
    AlertGroup.objects.filter(pk=group.pk).update(notified_at=timezone.now())
