"""What detection found and people triage: change points, alerts (grouped by the run that raised them,
announced through deliveries, gathered into incidents) and their status changes."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from ..decisions import DRIFT_KIND, STEP_KIND
from .benchmarks import Metric
from .comparisons import Comparison
from .projects import Machine, Project
from .runs import Run


class ChangeKind(models.TextChoices):
    """What the nights around a change point say it is (``results.decisions.DRIFT_STEP_LEVEL``)."""

    STEP = STEP_KIND, "step: the level jumped at its night"
    DRIFT = DRIFT_KIND, "drift: the level moves steadily across its night, no jump at it"


class ChangePoint(models.Model):
    """Where a series of run means shifted: a decision (spec §8). A rank scan found the split, a permutation
    test kept it (``pvalue``), and its size, the ratio of the segment after it to the one before with
    Fieller's interval, is at least the metric's threshold. Re-scans may move it (``moves`` records each
    move) or, when one with at least twice the fewest segment's nights after it no longer finds it,
    retract it (``retracted_at``); none deletes it, and the window moving past it changes nothing."""

    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="change_points")
    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="change_points")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="change_points",
                            help_text="The first run of the new segment.")
    ratio = models.FloatField(help_text="Mean after / mean before.")
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    pvalue = models.FloatField(null=True, blank=True, help_text="The permutation test's p-value of the split.")
    moves = models.JSONField(default=list, blank=True,
                             help_text="Each move by a re-scan: the run it was at, the run it moved to, when.")
    retracted_at = models.DateTimeField(null=True, blank=True,
                                        help_text="When a re-scan with more nights no longer found it.")
    alert = models.ForeignKey("Alert", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                              help_text="The confirmed alert it records (a confirmed alert is a change point); "
                                        "re-scans move it but never retract it.")
    kind = models.CharField(max_length=8, choices=ChangeKind.choices, default=ChangeKind.STEP,
                            help_text="A step until the nights around it read as a drift (re-read at each scan).")
    drift_per_night = models.FloatField(null=True, blank=True,
                                        help_text="Where read as a drift: its line's relative change per night.")
    detected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["metric", "run__started_at"]
        constraints = [
            models.UniqueConstraint(fields=["metric", "machine", "run"], name="change_point_unique"),
            models.CheckConstraint(condition=Q(kind=STEP_KIND, drift_per_night__isnull=True)
                                   | Q(kind=DRIFT_KIND, drift_per_night__isnull=False),
                                   name="change_point_drift_has_its_slope"),
        ]

    def __str__(self) -> str:
        return f"{self.metric} shifted ×{self.ratio:.3f} at run {self.run_id}"


class AlertStatus(models.TextChoices):
    NEW = "new"
    ACKNOWLEDGED = "acknowledged"
    INVALID = "invalid"
    FIXED = "fixed"
    WONT_FIX = "wont_fix", "Won't fix"


class AlertGroup(models.Model):
    """The alerts one run raised, so a bad night is one notification, not hundreds."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="alert_group")
    created_at = models.DateTimeField(auto_now_add=True)
    notified_at = models.DateTimeField(null=True, blank=True)
    announcing_through = models.BigIntegerField(
        null=True, blank=True, help_text="The newest alert its announcement under way names (alerts that join later "
                                         "are announced next): set when the announcement starts.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Alerts of run #{self.run_id}"


class Channel(models.TextChoices):
    EMAIL = "email", "e-mail"
    WEBHOOK = "webhook", "webhook"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed", "failed (given up)"


class Delivery(models.Model):
    """One channel's announcement of an alert group: sent once, or retried with backoff and then given up (and
    shown as failed), whatever the other channels do."""

    group = models.ForeignKey("AlertGroup", on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=20, choices=Channel.choices)
    status = models.CharField(max_length=20, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(help_text="When it is tried next (while pending).")
    error = models.TextField(blank=True, help_text="Why the last attempt failed.")
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["group", "channel"]
        constraints = [
            models.UniqueConstraint(fields=["group", "channel"], name="delivery_unique_channel"),
            models.CheckConstraint(condition=Q(channel__in=Channel.values), name="delivery_channel_valid"),
            models.CheckConstraint(condition=Q(status__in=DeliveryStatus.values), name="delivery_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.channel} of {self.group} ({self.status})"


class AlertState(models.TextChoices):
    """What the measurements say of an alert's change, apart from its triage by people."""

    SUSPECTED = "suspected", ("suspected: significant, not yet a level: its interval still crosses the band edge, or "
                              "its nights do not yet differ with their own spread (one night never does)")
    CONFIRMED = "confirmed", ("confirmed: beyond the band (or significant at the series' level with its estimate "
                              "beyond it), on nights that differ with their own spread")
    DISMISSED = "dismissed", "dismissed: later measurements show no such change"


class IncidentKind(models.TextChoices):
    MACHINE = "machine", "machine-wide shift: many series of one machine moved on one night"
    RANGE = "range", "commit range: series of one machine moved on one night, between the same two commits"


class Incident(models.Model):
    """Alerts that are one event, triaged once with one bug link and assignee, bisected once: a *commit range*,
    series of one project's machine that moved on the same night (so between the same two commits), or a
    *machine-wide shift*, many of them (a runner image, a kernel, a compiler changed under them; or one commit
    slowing many benchmarks, which the commit range of the night says), also notified once. Its alerts stay each
    series' own: each series re-levels at the night, so its next shift is seen (:mod:`results.baselines`)."""

    kind = models.CharField(max_length=20, choices=IncidentKind.choices, default=IncidentKind.MACHINE)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="incidents")
    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="incidents")
    night = models.DateField(help_text="The night its series moved (results.nights).")
    first_run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+",
                                  help_text="The first run of the night its series moved on.")
    status = models.CharField(max_length=20, choices=AlertStatus.choices, default=AlertStatus.NEW)
    bug_url = models.URLField("bug", max_length=500, blank=True,
                              help_text="The issue that follows the event up (its alerts get it too).")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="assigned_incidents", help_text="Who follows the event up.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-night", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "project", "machine", "night"], name="incident_unique_night"),
            models.CheckConstraint(condition=Q(kind__in=IncidentKind.values), name="incident_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=AlertStatus.values), name="incident_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.machine} on {self.night}"


class Alert(models.Model):
    """A change on one series (a metric on a machine), from its first night on.

    Unless dismissed (by measurement or as invalid), its first night starts a segment of its series: a later
    shift is looked for in the nights since, never pooled into it (:mod:`results.baselines`). While it is
    *suspected* and untriaged, the nights from ``first_run`` on stay out of the series' baseline, and
    ``evidence`` is the newest comparison of those nights, pooled, against the nights before them. Once
    confirmed or accepted (fixed, won't fix) they are the series' new level.
    """

    group = models.ForeignKey(AlertGroup, on_delete=models.CASCADE, related_name="alerts")
    incident = models.ForeignKey(Incident, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts",
                                 help_text="The event it is part of (a machine-wide shift), triaged as one.")
    comparison = models.OneToOneField(Comparison, on_delete=models.CASCADE, related_name="alert")
    status = models.CharField(max_length=20, choices=AlertStatus.choices, default=AlertStatus.NEW)
    state = models.CharField(max_length=20, choices=AlertState.choices, default=AlertState.CONFIRMED)
    first_run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="+",
                                  help_text="The first night of the change.")
    evidence = models.ForeignKey(Comparison, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                 help_text="The newest pooled comparison of the nights since the first.")
    state_note = models.CharField(max_length=300, blank=True, help_text="What set the state last.")
    confirmation_note = models.CharField(
        max_length=300, blank=True, help_text="Why no A/B session re-measures it, where none could be started.")
    bug_url = models.URLField("bug", max_length=500, blank=True, help_text="The issue that follows the change up.")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="assigned_alerts", help_text="Who follows the change up.")
    announced_at = models.DateTimeField(
        null=True, blank=True, help_text="When its group's notification named it (every channel done): an alert "
                                         "that joins a group already announced, as the daily scan's do, is announced "
                                         "anew.")
    created_at = models.DateTimeField(default=timezone.now, editable=False, help_text="When it was opened.")
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")

    class Meta:
        ordering = ["group", "id"]
        constraints = [models.CheckConstraint(condition=Q(status__in=AlertStatus.values), name="alert_status_valid"),
                       models.CheckConstraint(condition=Q(state__in=AlertState.values), name="alert_state_valid")]
        # The notifications' catch-up looks for alerts not announced yet: few, among every alert ever opened.
        indexes = [models.Index(fields=["group"], condition=Q(announced_at__isnull=True), name="alert_unannounced")]

    def __str__(self) -> str:
        return f"{self.comparison.candidate} ({self.status})"


class AlertEvent(models.Model):
    """Who changed an alert's status, when, and why."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    old_status = models.CharField(max_length=20, choices=AlertStatus.choices)
    new_status = models.CharField(max_length=20, choices=AlertStatus.choices)
    note = models.TextField(blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["alert", "created_at"]

    def __str__(self) -> str:
        return f"{self.old_status} → {self.new_status}"
