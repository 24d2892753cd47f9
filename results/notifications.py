"""Telling people about new alerts: Django's email backend and an optional webhook per project.

The webhook's JSON carries, beside its fields, the same summary as the email: ``text`` and ``html``, which
chat webhooks post as they are (Matrix's hookshot posts ``html`` with ``text`` as its plain fallback;
Slack-compatible receivers such as Mattermost read ``text``). Slack's own incoming webhooks want ``text`` in
their mrkdwn and nothing else: :class:`WebhookFormat` says which body a webhook gets. Links need the site's
address (``PILOTWEB_SITE_URL``), there being no request to take it from.
"""

import http.client
import smtplib
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from . import outbound
from .stored_rows import stored_rows
from .models import (
    Alert,
    AlertGroup,
    Channel,
    Comparison,
    Delivery,
    DeliveryStatus,
    Incident,
    IncidentKind,
    Run,
    WebhookFormat,
    series_nights,
)
from .presentation import short_commit, single_line

WEBHOOK_TIMEOUT = 10


@dataclass(frozen=True)
class Change:
    """One alert: its series, the stored comparison's numbers, the change with its interval as every page
    writes it, the verdict, and the alert's page."""

    alert_id: int
    benchmark: str
    metric: str
    label: str
    ratio: float | None
    low: float | None
    high: float | None
    pvalue: float | None
    qvalue: float | None
    change: str
    verdict: str
    url: str


@dataclass(frozen=True)
class IncidentLine:
    """A machine-wide shift among a group's alerts, told once: how many series it moved, by how much, from which
    night, and the commits of that night (its first bad one and the last good one before it)."""

    incident_id: int
    night: date
    series: int
    text: str
    url: str


@dataclass(frozen=True)
class AlertGroupSummary:
    """What a run's new alerts say, as every notification tells it (addresses empty without a site address): its
    machine-wide shifts once each (``incidents``), and the other alerts one by one (``changes``)."""

    project: str
    project_name: str
    machine: str
    run_id: int
    commit: str | None
    branch: str | None
    run_url: str
    changes: list[Change]
    incidents: list[IncidentLine] = field(default_factory=list)
    alerts: int = 0

    @property
    def headline(self) -> str:
        count = self.alerts or len(self.changes)
        return f"{count} new alert{'s' if count != 1 else ''}"

    @property
    def on_branch(self) -> str:
        return f" on {self.branch}" if self.branch else ""


def site_url(path: str) -> str:
    return f"{settings.PILOTWEB_SITE_URL}{path}" if settings.PILOTWEB_SITE_URL else ""


def alert_group_summary(group: AlertGroup, *, alert_ids: Collection[int] | None = None) -> AlertGroupSummary:
    """A group's alerts (those of `alert_ids` only, where given: the ones not announced yet) as rows (the change
    and verdict formatted as on every page), with their addresses; every name on one line
    (:func:`results.presentation.single_line`), so none adds a line to a text or an e-mail."""
    run = group.run
    every = [alert for alert in group.alerts.all() if alert_ids is None or alert.pk in alert_ids]
    # A machine-wide shift is told once; the alerts of a commit range are few, and each is told.
    shifts = {incident.pk: incident for incident in Incident.objects.filter(
        pk__in={alert.incident_id for alert in every}, kind=IncidentKind.MACHINE).select_related(
        "machine", "first_run__revision").order_by("night", "pk")}
    alerts = [alert for alert in every if alert.incident_id not in shifts]
    rows = stored_rows([(alert.comparison.candidate, alert.comparison) for alert in alerts])
    alerts_path = f"{reverse('results:alerts')}?{urlencode({'project': run.project.slug})}"
    incidents = [incident_line(incident, url=site_url(f"{alerts_path}#incident-{incident.pk}"))
                 for incident in shifts.values()]
    return AlertGroupSummary(
        incidents=incidents, alerts=len(every),
        project=run.project.slug, project_name=single_line(run.project.name), machine=single_line(run.machine.name),
        run_id=run.pk, commit=run.revision.commit if run.revision else None,
        branch=run.revision.branch if run.revision else None,
        run_url=site_url(reverse("results:run", args=[run.pk])),
        changes=[Change(alert_id=alert.pk, benchmark=single_line(row.benchmark), metric=single_line(row.metric),
                        label=single_line(row.label),
                        ratio=row.ratio, low=row.low, high=row.high, pvalue=row.pvalue, qvalue=row.qvalue,
                        change=row.change or "no ratio", verdict=row.verdict,
                        url=site_url(f"{alerts_path}#alert-{alert.pk}"))
                 for alert, row in zip(alerts, rows)],
    )


def incident_line(incident: Incident, *, url: str = "") -> IncidentLine:
    """An incident told in one line (two queries): "machine-wide shift of bench-1 from the night of 2026-11-20:
    23 series moved -3.0% to +12.0% (first bad commit 3f2a9c1c0e1d after 1b2c3d4e5f60); likely the environment"."""
    # Unordered: Comparison's default order joins five tables (a nested-loop plan on fresh PostgreSQL statistics).
    opened = list(Comparison.objects.filter(alert__incident=incident).order_by().values_list(
        "ratio", "candidate__metric_id"))
    ratios = [ratio for ratio, _ in opened if ratio is not None]
    first = incident.first_run
    before = (Run.objects.filter(series_nights(), project_id=incident.project_id, machine_id=incident.machine_id,
                                 started_at__lt=first.started_at, revision__isnull=False)
              .order_by("-started_at", "-id").values_list("revision__commit", flat=True).first())
    moved = (f"moved {_percent(min(ratios))} to {_percent(max(ratios))}" if len(ratios) > 1
             else f"moved {_percent(ratios[0])}" if ratios else "moved")
    commits = ""
    if first.revision is not None:
        commits = f" (first bad commit {short_commit(first.revision.commit)}" + (
            f" after {short_commit(before)})" if before else ")")
    count = len({metric for _, metric in opened})  # series, not alerts: a series may have two in one incident
    if incident.kind == IncidentKind.RANGE:
        text = (f"commit range of {single_line(incident.machine.name)} on the night of {incident.night:%Y-%m-%d}: "
                f"{count} series {moved}{commits}; one range of commits, triaged and bisected once")
    else:
        text = (f"machine-wide shift of {single_line(incident.machine.name)} from the night of "
                f"{incident.night:%Y-%m-%d}: {count} series {moved}{commits}; likely the environment, or one commit "
                f"slowing many benchmarks")
    return IncidentLine(incident_id=incident.pk, night=incident.night, series=count, text=text, url=url)


def _percent(ratio: float) -> str:
    return f"{(ratio - 1.0) * 100:+.1f}%"


def summary_text(summary: AlertGroupSummary) -> str:
    """Plain text, the addresses written out: the email's body and the webhook's ``text``."""
    revision = f" (commit {short_commit(summary.commit)}{summary.on_branch})" if summary.commit else ""
    lines = [f"Pilot Web: {summary.project_name}, {summary.headline} in run #{summary.run_id} on "
             f"{summary.machine}{revision}"]
    lines += [f"- {line.text}" + (f" {line.url}" if line.url else "") for line in summary.incidents]
    lines += [f"- {change.label} {change.change} ({change.verdict})" + (f" {change.url}" if change.url else "")
              for change in summary.changes]
    if summary.run_url:
        lines.append(f"Run: {summary.run_url}")
    return "\n".join(lines)


def summary_html(summary: AlertGroupSummary) -> str:
    """The summary as HTML (Matrix's formatted body), every name escaped."""
    run = (format_html('<a href="{}">run #{}</a>', summary.run_url, summary.run_id) if summary.run_url
           else format_html("run #{}", summary.run_id))
    revision = (format_html(" (commit <code>{}</code>{})", short_commit(summary.commit), summary.on_branch)
                if summary.commit else "")
    items = format_html_join("", "<li>{}</li>", (
        (format_html('<a href="{}">{}</a>', line.url, line.text) if line.url else line.text,)
        for line in summary.incidents)) + format_html_join("", "<li>{} {} ({})</li>", (
        (format_html('<a href="{}">{}</a>', change.url, change.label) if change.url else change.label,
         change.change, change.verdict) for change in summary.changes))
    return format_html("<p><strong>Pilot Web: {}</strong>, {} in {} on {}{}</p><ul>{}</ul>", summary.project_name,
                       summary.headline, run, summary.machine, revision, items)


def summary_slack(summary: AlertGroupSummary) -> str:
    """The summary in Slack's mrkdwn: ``<address|label>`` links, ``&``, ``<`` and ``>`` escaped."""
    def link(url: str, label: str) -> str:
        return f"<{url}|{_slack_escape(label)}>" if url else _slack_escape(label)

    revision = (f" (commit `{short_commit(summary.commit)}`{_slack_escape(summary.on_branch)})"
                if summary.commit else "")
    lines = [f"*Pilot Web: {_slack_escape(summary.project_name)}*, {summary.headline} in "
             f"{link(summary.run_url, f'run #{summary.run_id}')} on {_slack_escape(summary.machine)}{revision}"]
    lines += [f"• {link(line.url, line.text)}" for line in summary.incidents]
    lines += [f"• {link(change.url, change.label)} {change.change} ({change.verdict})" for change in summary.changes]
    return "\n".join(lines)


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def webhook_payload(summary: AlertGroupSummary, *, format_name: str = WebhookFormat.JSON) -> dict:
    """The body of a project's webhook call for a group of new alerts, in the format named (a ValueError
    for a format that is not a :class:`WebhookFormat`)."""
    match WebhookFormat(format_name):
        case WebhookFormat.SLACK:
            return {"text": summary_slack(summary)}
        case WebhookFormat.MATRIX:
            return {"text": summary_text(summary), "html": summary_html(summary)}
        case WebhookFormat.JSON:
            return {
                "event": "regressions", "project": summary.project, "run": summary.run_id,
                "machine": summary.machine, "commit": summary.commit, "branch": summary.branch,
                "url": summary.run_url or None,
                "incidents": [{"id": line.incident_id, "night": line.night.isoformat(), "series": line.series,
                               "text": line.text, "url": line.url or None} for line in summary.incidents],
                "alerts": [{"id": change.alert_id, "benchmark": change.benchmark, "metric": change.metric,
                            "ratio": change.ratio, "low": change.low, "high": change.high, "pvalue": change.pvalue,
                            "qvalue": change.qvalue, "change": change.change, "verdict": change.verdict,
                            "url": change.url or None}
                           for change in summary.changes],
                "text": summary_text(summary), "html": summary_html(summary),
            }


MAX_ATTEMPTS = 5
RETRY_AFTER = (timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2))
"""How long a failed channel waits before its next attempt (then the last wait again); after ``MAX_ATTEMPTS``
it is given up and shown as failed."""
CHANNEL_ERRORS = (OSError, smtplib.SMTPException, http.client.HTTPException, outbound.OutboundHTTPError,
                  outbound.OutboundRefused)
"""What a channel's failure raises: retried, except :class:`results.outbound.OutboundRefused` (given up)."""
CLAIM = timedelta(minutes=10)
"""An attempt under way holds its channel this long: a worker that dies while sending leaves it to be retried."""


def pending_groups(*, older_than: timedelta = timedelta(minutes=2)) -> list[int]:
    """Alert groups with a channel still to try now (or none made yet, or alerts joined since they were announced:
    their enqueue was lost), oldest first."""
    now = timezone.now()
    due = Delivery.objects.filter(group=OuterRef("pk"), status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
    unannounced = Alert.objects.filter(group=OuterRef("pk"), announced_at__isnull=True,
                                       created_at__lt=now - older_than)
    none_made = ~Q(Exists(Delivery.objects.filter(group=OuterRef("pk"))))
    waiting = Q(notified_at__isnull=True) & (Q(Exists(due)) | none_made)
    joined = Q(notified_at__isnull=False) & Q(Exists(unannounced))
    return list(AlertGroup.objects.filter(created_at__lt=now - older_than).filter(waiting | joined)
                .order_by("created_at").values_list("pk", flat=True))


def notify_alert_group(*, group_id: int) -> None:
    """Announce a run's new alerts on each of its project's channels (e-mail, webhook) once: each channel is
    claimed, sent and marked sent on its own, so one that fails is retried with backoff (:data:`RETRY_AFTER`)
    without sending the others again, and is given up after ``MAX_ATTEMPTS`` (or at once when its target is
    refused: a private address), its error kept and shown on the alerts. The group is notified when no channel
    is pending."""
    group = (AlertGroup.objects.select_related("run__project", "run__machine", "run__revision")
             .prefetch_related("alerts__comparison__candidate__metric__benchmark").get(pk=group_id))
    project = group.run.project
    recipients = _recipients(project)
    wanted = project_channels(project)
    if group.notified_at is not None:
        if all(alert.announced_at is not None for alert in group.alerts.all()) or not _reopened(group, wanted):
            return
    if group.announcing_through is None:
        # The announcement names the alerts the group holds now; those that join while it is under way (a channel
        # waiting to be retried) are announced by the next one, on every channel.
        newest = max((alert.pk for alert in group.alerts.all()), default=0)
        AlertGroup.objects.filter(pk=group.pk, announcing_through__isnull=True).update(announcing_through=newest)
        group.refresh_from_db(fields=["announcing_through"])
    named = [alert.pk for alert in group.alerts.all()
             if alert.announced_at is None and alert.pk <= group.announcing_through]
    now = timezone.now()
    Delivery.objects.bulk_create([Delivery(group=group, channel=channel, next_attempt_at=now) for channel in wanted],
                                 ignore_conflicts=True)
    summary = None
    for delivery in Delivery.objects.filter(group=group, status=DeliveryStatus.PENDING, next_attempt_at__lte=now):
        # Claimed by one update, so two workers never send the same channel at once.
        claimed = Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING,
                                          attempts=delivery.attempts).update(attempts=F("attempts") + 1,
                                                                            next_attempt_at=now + CLAIM)
        if not claimed:
            continue
        summary = summary or alert_group_summary(group, alert_ids=named)
        try:
            _send(delivery.channel, project=project, summary=summary, recipients=recipients, run_id=group.run_id)
        except CHANNEL_ERRORS as error:
            attempts = delivery.attempts + 1
            given_up = attempts >= MAX_ATTEMPTS or isinstance(error, outbound.OutboundRefused)
            Delivery.objects.filter(pk=delivery.pk).update(
                status=DeliveryStatus.FAILED if given_up else DeliveryStatus.PENDING, error=str(error)[:2000],
                next_attempt_at=now + RETRY_AFTER[min(attempts, len(RETRY_AFTER)) - 1])
        else:
            Delivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.SENT, sent_at=timezone.now(),
                                                           error="")
    if not Delivery.objects.filter(group=group, status=DeliveryStatus.PENDING).exists():
        done = timezone.now()
        with transaction.atomic():
            AlertGroup.objects.filter(pk=group.pk, notified_at__isnull=True).update(notified_at=done)
            Alert.objects.filter(group=group, pk__lte=group.announcing_through, announced_at__isnull=True).update(
                announced_at=done)


def _reopened(group: AlertGroup, wanted: list[str]) -> bool:
    """A group already announced that alerts have joined since (the daily scan opens a change point's alert in
    its series' newest group): the channels the project still has are made pending again, and the next
    announcement names the alerts not announced yet. False where another worker reopened it first."""
    with transaction.atomic():
        if not AlertGroup.objects.filter(pk=group.pk, notified_at=group.notified_at).update(
                notified_at=None, announcing_through=None):
            return False
        Delivery.objects.filter(group=group, channel__in=wanted).update(
            status=DeliveryStatus.PENDING, attempts=0, error="", next_attempt_at=timezone.now())
    group.notified_at = group.announcing_through = None
    return True


def project_channels(project) -> list[str]:
    """The channels a project is told on: e-mail where it names addresses, its webhook where it has one."""
    wanted = ((Channel.EMAIL, _recipients(project)), (Channel.WEBHOOK, project.webhook_url))
    return [channel for channel, given in wanted if given]


def tell_project(project, channel: str, *, subject: str, text: str, html: str, fields: dict) -> None:
    """Tell a project one message on one of its channels: the e-mail's subject and body (`text`), or its
    webhook's body in the webhook's format (Slack: `text` in mrkdwn-safe form; Matrix: `text` and `html`; JSON:
    `fields` with `text` and `html`). Raises what the channel's failure raises (the caller retries)."""
    if channel == Channel.EMAIL:
        send_mail(subject=f"[Pilot Web] {single_line(subject)}", message=text, from_email=settings.DEFAULT_FROM_EMAIL,
                  recipient_list=_recipients(project))
        return
    match WebhookFormat(project.webhook_format):
        case WebhookFormat.SLACK:
            payload = {"text": _slack_escape(text)}
        case WebhookFormat.MATRIX:
            payload = {"text": text, "html": html}
        case WebhookFormat.JSON:
            payload = {**fields, "text": text, "html": html}
    outbound.post_json(project.webhook_url, payload, timeout=WEBHOOK_TIMEOUT,
                       allow_private=settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE)


def _recipients(project) -> list[str]:
    return [address.strip() for address in project.notify_emails.split(",") if address.strip()]


def _send(channel: str, *, project, summary: AlertGroupSummary, recipients: list[str], run_id: int) -> None:
    if channel == Channel.EMAIL:
        send_mail(subject=f"[Pilot Web] {single_line(project.name)}: {len(summary.changes)} regression(s) in run "
                          f"#{run_id}",
                  message=summary_text(summary), from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=recipients)
    else:
        outbound.post_json(project.webhook_url, webhook_payload(summary, format_name=project.webhook_format),
                           timeout=WEBHOOK_TIMEOUT, allow_private=settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE)
