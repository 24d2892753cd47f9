"""Benchmark jobs, their sessions and every round a session ran.

A job says what to run and how precisely; a session is one execution of it on the job's
machine; a round is one run of the workload with one work amount. Rounds are committed one by
one as they finish, so a session whose worker dies loses nothing it had measured.
"""

import re

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from results.identifiers import BRANCH_MAX_LENGTH, validate_branch, validate_name
from results.models import Alert, Direction, Machine, Project, Run, RunKind
from results.result_schema import SAMPLE_DTYPE

from . import replay
from . import session as session_loop
from . import workloads
from .session import MetricSpec


WORK_AMOUNT = re.compile(r"(?<!\{)\{work_amount\}(?!\})")
"""The work-amount placeholder in a command's argument (``{{work_amount}}`` is the literal text)."""


class WorkloadKind(models.TextChoices):
    BUILTIN = "builtin", "built-in Python workload"
    COMMAND = "command", "command (argument list, no shell)"


class ReadingMode(models.TextChoices):
    WALL_TIME = "wall_time", "wall time of the process"
    JSON_LINES = "json_lines", "JSON lines on stdout"


class WarmupMethod(models.TextChoices):
    EDM = "edm", "EDM change points on unit readings"
    WPS = "wps", "WPS regression on round durations"
    NONE = "none", "none"


class Component(models.TextChoices):
    CPU = "cpu", "CPU"
    MEMORY = "memory", "Memory"
    DISK = "disk", "Disk"
    NETWORK = "network", "Network"


class Job(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    name = models.CharField(max_length=200, validators=[validate_name])
    benchmark = models.CharField(max_length=500, validators=[validate_name],
                                 help_text="The benchmark its results are stored under.")
    machine = models.ForeignKey(Machine, on_delete=models.PROTECT, related_name="jobs",
                                help_text="Its sessions run on this machine's queue, one at a time.")
    workload_kind = models.CharField(max_length=20, choices=WorkloadKind.choices, default=WorkloadKind.BUILTIN)
    builtin = models.CharField(max_length=100, blank=True, help_text="Name of a built-in workload.")
    parameters = models.JSONField(default=dict, blank=True, help_text="Parameters of the built-in workload.")
    command = models.JSONField(
        default=list, blank=True,
        help_text='Argument list, never run through a shell; placeholders {work_amount} and {revision}.',
    )
    setup_command = models.JSONField(
        default=list, blank=True, help_text="Run once per revision before the rounds (e.g. check out and build)."
    )
    working_directory = models.CharField(max_length=500, blank=True)
    repository = models.CharField(
        max_length=500, blank=True, verbose_name="Repository on the machine",
        help_text="The git checkout its setup builds revisions in. An automatic session (an alert's confirmation) "
                  "runs a revision only if the poster's role vouches for it or it is on the trusted branch of this "
                  "repository's origin, checked here on the machine (empty: the working directory).")
    trusted_branch = models.CharField(
        max_length=BRANCH_MAX_LENGTH, blank=True, validators=[validate_branch],
        help_text="Revisions on this branch of origin may be built automatically (empty: the project's default "
                  "branch).")
    allow_pull_requests = models.BooleanField(
        default=False, verbose_name="Build pull requests' revisions",
        help_text="Automatic sessions may build revisions posted by pull requests, whose code then runs on the "
                  "machine. Off: never.")
    environment = models.JSONField(default=dict, blank=True)
    reading_mode = models.CharField(max_length=20, choices=ReadingMode.choices, default=ReadingMode.WALL_TIME)
    metrics = models.JSONField(
        default=list, blank=True,
        help_text='For commands: [{"name": "time", "unit": "s", "direction": "lower_is_better"}, …].',
    )
    round_timeout = models.FloatField(default=300.0, help_text="Seconds before a round is killed.")
    confidence_level = models.FloatField(default=0.95)
    target_width = models.FloatField(default=0.10, help_text="Target full CI width, relative to the mean.")
    max_autocorrelation = models.FloatField(default=0.1)
    comparison_alpha = models.FloatField(
        default=0.01, verbose_name="Comparison α",
        help_text="A/B sessions: the chance of a wrong decision about a pair, however often the session looks "
                  "(default 1%).")
    comparison_threshold = models.FloatField(
        default=0.02, verbose_name="Smallest difference that matters",
        help_text="A/B sessions: θ relative to the mean (default 0.02 = 2%); a pair whose ratio interval lies "
                  "within 1 ± θ ends as no difference that matters.")
    comparison_rule = models.CharField(
        max_length=10, choices=[("anytime", "Anytime-valid (mixture SPRT)"), ("pilot", "Pilot's rule")],
        default="anytime",
        help_text="A/B sessions: Pilot's rule looks at Welch's p after every round and declared identical "
                  "workloads different in 6–22% of sessions at α = 1%; the anytime-valid rule holds α.")
    require_width_in_comparison = models.BooleanField(
        default=True, verbose_name="Comparisons also reach the target width",
        help_text="A/B sessions: stop only once every CI is also as narrow as the target width (Pilot's third "
                  "rule; default on).")
    work_min = models.FloatField(default=1.0, help_text="Smallest valid work amount.")
    work_max = models.FloatField(default=1000.0, help_text="Largest valid work amount.")
    min_round_duration = models.FloatField(default=0.05, help_text="Shorter rounds are stored but not analysed.")
    budget_seconds = models.FloatField(default=600.0)
    budget_rounds = models.PositiveIntegerField(default=1000)
    warmup = models.CharField(max_length=10, choices=WarmupMethod.choices, default=WarmupMethod.EDM)
    component = models.CharField(
        max_length=10, choices=Component.choices, blank=True,
        help_text="What the workload should stress; any other component above 80% busy is flagged as a "
                  "bottleneck (a built-in workload knows its own).",
    )
    overhead_rounds = models.PositiveIntegerField(
        default=0, help_text="Rounds with and without monitoring to measure its overhead first (0: skip).")
    enabled = models.BooleanField(default=True)
    schedule = models.OneToOneField(PeriodicTask, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="job", help_text="The cron schedule that starts its sessions.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="job_unique_name"),
            models.CheckConstraint(condition=Q(workload_kind__in=WorkloadKind.values), name="job_workload_kind_valid"),
            models.CheckConstraint(condition=~Q(workload_kind=WorkloadKind.BUILTIN, builtin=""),
                                   name="job_builtin_named"),
            models.CheckConstraint(condition=Q(reading_mode__in=ReadingMode.values), name="job_reading_mode_valid"),
            models.CheckConstraint(condition=Q(warmup__in=WarmupMethod.values), name="job_warmup_valid"),
            models.CheckConstraint(condition=Q(round_timeout__gt=0), name="job_round_timeout_positive"),
            models.CheckConstraint(condition=Q(confidence_level__gt=0, confidence_level__lt=1),
                                   name="job_confidence_level_in_0_1"),
            models.CheckConstraint(condition=Q(target_width__gt=0), name="job_target_width_positive"),
            models.CheckConstraint(condition=Q(comparison_alpha__gt=0, comparison_alpha__lt=1),
                                   name="job_comparison_alpha_in_0_1"),
            models.CheckConstraint(condition=Q(comparison_threshold__gt=0, comparison_threshold__lt=1),
                                   name="job_comparison_threshold_in_0_1"),
            models.CheckConstraint(condition=Q(comparison_rule__in=["anytime", "pilot"]),
                                   name="job_comparison_rule_valid"),
            models.CheckConstraint(condition=Q(max_autocorrelation__gt=0, max_autocorrelation__lt=1),
                                   name="job_max_autocorrelation_in_0_1"),
            models.CheckConstraint(condition=Q(work_min__gt=0, work_max__gt=F("work_min")),
                                   name="job_work_range_valid"),
            models.CheckConstraint(condition=Q(min_round_duration__gte=0), name="job_min_round_duration"),
            models.CheckConstraint(condition=Q(budget_seconds__gt=0, budget_rounds__gte=1), name="job_budget_positive"),
            models.CheckConstraint(condition=Q(component__in=["", *Component.values]), name="job_component_valid"),
            models.CheckConstraint(condition=Q(overhead_rounds=0) | Q(overhead_rounds__gte=2),
                                   name="job_overhead_rounds_zero_or_two"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.workload_kind == WorkloadKind.BUILTIN:
            builtin = workloads.BUILTIN_WORKLOADS.get(self.builtin)
            if builtin is None:
                errors["builtin"] = (f"Unknown built-in workload {self.builtin!r}; choose one of "
                                     f"{', '.join(sorted(workloads.BUILTIN_WORKLOADS))}.")
            else:
                _collect(errors, "parameters", lambda: builtin.make(self.parameters))
        else:
            _collect(errors, "command", lambda: workloads.check_command(self.command))
            if self.reading_mode == ReadingMode.JSON_LINES and not self.metrics:
                errors["metrics"] = "A command that prints JSON lines must declare the metrics it reports."
            if self.times_whole_work() and self.warmup != WarmupMethod.WPS:
                errors["warmup"] = (
                    "A command timed whole with {work_amount} in it gives one reading per round: the whole "
                    "process at that round's work amount, so its mean and interval mix work amounts. Choose "
                    "'wps' warm-up removal (the time per unit of work, fitted as duration = start-up + time "
                    "per unit × work amount across rounds, with its interval), or print per-unit readings as "
                    "JSON lines, or drop {work_amount}.")
        if self.setup_command:
            _collect(errors, "setup_command", lambda: workloads.check_command(self.setup_command, setup=True))
        if not isinstance(self.environment, dict):
            errors["environment"] = "Give the environment as an object of names to string values."
        else:
            _collect(errors, "environment", lambda: workloads.check_environment(self.environment))
        _collect(errors, "metrics", self._declared_metrics)
        if errors:
            raise ValidationError(errors)

    def _declared_metrics(self) -> list[MetricSpec]:
        if not isinstance(self.metrics, list):
            raise ValueError("Give the metrics as a list of {name, unit, direction} objects.")
        specs = []
        for index, metric in enumerate(self.metrics):
            if not isinstance(metric, dict) or not metric.get("name") or not metric.get("unit"):
                raise ValueError(f"Metric #{index + 1} needs a name and a unit.")
            if metric.get("direction", Direction.LOWER_IS_BETTER) not in Direction.values:
                raise ValueError(f"Metric {metric['name']!r}: direction must be one of "
                                 f"{', '.join(Direction.values)}.")
            specs.append(MetricSpec(metric["name"], metric["unit"],
                                    metric.get("direction", Direction.LOWER_IS_BETTER)))
        return specs

    def times_whole_work(self) -> bool:
        """A command read by its wall time whose work amount varies from round to round: only the work-per-second
        regression makes a per-unit reading of it (Pilot §III-A)."""
        return (self.workload_kind == WorkloadKind.COMMAND and self.reading_mode == ReadingMode.WALL_TIME
                and any(WORK_AMOUNT.search(str(argument)) for argument in (self.command or [])))

    def session_targets(self) -> session_loop.SessionTargets:
        """What its sessions aim for and may spend, as the session loop takes it."""
        return session_loop.SessionTargets(
            confidence=self.confidence_level, target_width=self.target_width,
            max_autocorrelation=self.max_autocorrelation, work_range=(self.work_min, self.work_max),
            min_round_duration=self.min_round_duration, budget_seconds=self.budget_seconds,
            budget_rounds=self.budget_rounds, warmup=self.warmup, alpha=self.comparison_alpha,
            threshold=self.comparison_threshold, comparison_rule=self.comparison_rule,
            require_width_in_comparison=self.require_width_in_comparison,
        )

    def component_under_test(self) -> str | None:
        if self.workload_kind == WorkloadKind.BUILTIN:
            return workloads.BUILTIN_WORKLOADS[self.builtin].component
        return self.component or None

    def metric_specs(self) -> tuple[MetricSpec, ...]:
        """The metrics a session of this job measures."""
        if self.workload_kind == WorkloadKind.BUILTIN:
            return workloads.BUILTIN_WORKLOADS[self.builtin].metrics
        if self.reading_mode == ReadingMode.WALL_TIME:
            return (workloads.WALL_TIME,)
        return tuple(self._declared_metrics())


def _collect(errors: dict[str, str], field: str, check) -> None:
    try:
        check()
    except ValueError as error:
        errors[field] = str(error)


class SessionStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    CONVERGED = "converged", "converged (CI within target)"
    BUDGET_EXHAUSTED = "budget_exhausted", "budget exhausted"
    RESOLVED = "resolved", "difference resolved"
    UNRESOLVED = "unresolved", "no difference resolved within budget"
    CANCELLED = "cancelled"
    FAILED = "failed"


FINISHED_STATUSES = [SessionStatus.CONVERGED, SessionStatus.BUDGET_EXHAUSTED, SessionStatus.RESOLVED,
                     SessionStatus.UNRESOLVED, SessionStatus.CANCELLED, SessionStatus.FAILED]


class SessionTrigger(models.TextChoices):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    CONFIRMATION = "confirmation"
    BISECTION = "bisection"


class Session(models.Model):
    """One execution of a job. A comparison session interleaves rounds of several revisions."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="sessions")
    status = models.CharField(max_length=20, choices=SessionStatus.choices, default=SessionStatus.QUEUED)
    trigger = models.CharField(max_length=20, choices=SessionTrigger.choices, default=SessionTrigger.MANUAL)
    run_kind = models.CharField(max_length=20, choices=RunKind.choices, default=RunKind.MANUAL)
    revisions = models.JSONField(
        default=list, blank=True,
        help_text='The workloads compared, in order: [{"label": "A", "commit": "…", "branch": "…"}, …]; '
                  "one entry (or none) for a plain session.",
    )
    attempt = models.PositiveIntegerField(default=0, help_text="Bumped on every (re)start; stale deliveries skip.")
    worker = models.CharField(max_length=255, blank=True)
    process_group = models.IntegerField(null=True, blank=True, help_text="Of the running workload, for cancel.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    queued_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When this attempt's message was handed to the broker; empty while the broker was unreachable.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(default=dict, blank=True)
    outcome = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    runs = models.ManyToManyField(Run, blank=True, related_name="sessions")
    confirms = models.ForeignKey(Alert, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="confirmations",
                                 help_text="The alert this interleaved A/B session re-measures.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="+")

    class Meta:
        ordering = ["-queued_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=SessionStatus.values), name="session_status_valid"),
            models.CheckConstraint(condition=Q(trigger__in=SessionTrigger.values), name="session_trigger_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.job} session #{self.pk}"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES


class SessionAnalysis(models.Model):
    """What a finished session's analysis did with each metric's readings (:class:`runner.replay.MetricAnalysis`:
    the readings removed, the interval narrowing), stored when the session finishes so that its runs' pages
    read it instead of replaying EDM on every round (for sessions finished before, ``manage.py
    store_session_analyses`` stores it)."""

    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="analysis")
    workloads = models.JSONField(default=dict, blank=True,
                                 help_text="{workload: {metric: runner.replay.MetricAnalysis.as_json()}}")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"analysis of {self.session}"

    def metric(self, workload: str, metric: str) -> replay.MetricAnalysis | None:
        """One metric of one workload as stored; None when it was not, or not in the layout read today."""
        stored = (self.workloads.get(workload) or {}).get(metric)
        if stored is None:
            return None
        try:
            return replay.MetricAnalysis.from_json(stored)
        except ValueError:
            return None


class Round(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="rounds")
    index = models.PositiveIntegerField()
    workload = models.CharField(max_length=50, help_text="Label of the workload run (one per revision).")
    work_amount = models.FloatField()
    duration = models.FloatField()
    readings = models.JSONField(default=dict)
    unit_readings = models.BinaryField(null=True, blank=True, editable=False)
    unit_counts = models.JSONField(default=dict, blank=True,
                                   help_text="Unit readings per metric, in the order they are packed.")
    analysed = models.BooleanField(default=True, help_text="False for rounds shorter than the minimum duration.")
    monitor = models.JSONField(default=dict, blank=True)
    finished_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "index"]
        constraints = [
            models.UniqueConstraint(fields=["session", "index"], name="round_unique_index"),
            models.CheckConstraint(condition=Q(duration__gte=0), name="round_duration_non_negative"),
            models.CheckConstraint(condition=Q(work_amount__gt=0), name="round_work_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"round {self.index} ({self.workload})"

    def record(self) -> session_loop.RoundRecord:
        """The stored round as the session loop's record (to resume or re-analyse a session)."""
        return session_loop.RoundRecord(
            index=self.index, workload=self.workload, work_amount=self.work_amount, analysed=self.analysed,
            outcome=session_loop.RoundOutcome(
                duration=self.duration, readings=self.readings,
                unit_readings={name: values.tolist() for name, values in self.unit_readings_by_metric().items()}),
        )

    def unit_readings_by_metric(self) -> dict[str, np.ndarray]:
        if not self.unit_readings:
            return {}
        values = np.frombuffer(bytes(self.unit_readings), dtype=SAMPLE_DTYPE)
        out, offset = {}, 0
        for metric, count in self.unit_counts.items():
            out[metric] = values[offset:offset + count]
            offset += count
        return out


class BisectionStatus(models.TextChoices):
    LISTING = "listing", "listing its range on the machine"
    RUNNING = "running"
    FOUND = "found", "culprit found"
    NOT_ISOLATED = "not_isolated", "not isolated"
    CANCELLED = "cancelled"
    FAILED = "failed"


class Bisection(models.Model):
    """From a confirmed regression to the commit that caused it: interleaved sessions of a job at commits of the
    range between the last good and the first bad night (:mod:`runner.bisection`). Its steps are its sessions;
    what runs next is a function of them (:func:`runner.bisection.plan.next_step`), so it resumes from them."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="bisections")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="bisections")
    status = models.CharField(max_length=20, choices=BisectionStatus.choices, default=BisectionStatus.LISTING)
    metric = models.CharField(max_length=200, help_text="The job's metric whose readings decide.")
    direction = models.SmallIntegerField(help_text="+1 where the regression reads higher (a time), -1 lower.")
    expected = models.FloatField(help_text="The alert's relative change, > 0.")
    alpha = models.FloatField(help_text="The probability that the culprit it names is wrong.")
    last_good = models.CharField(max_length=64, help_text="The last good night's commit.")
    first_bad = models.CharField(max_length=64, help_text="The first bad night's commit.")
    commits = models.JSONField(default=list, blank=True, help_text="The range on the trusted branch, oldest first, "
                                                                   "listed on the machine.")
    failed = models.JSONField(default=list, blank=True, help_text="Indexes of commits that failed to build.")
    culprit = models.CharField(max_length=64, blank=True)
    change = models.FloatField(null=True, blank=True, help_text="The culprit over its parent, relative.")
    low = models.FloatField(null=True, blank=True)
    high = models.FloatField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why no culprit is named, where none is.")
    narrowed = models.JSONField(default=list, blank=True, help_text=(
        "Where no culprit is named: the range left, [last good, first bad] indexes into commits."))
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    list_sent_at = models.DateTimeField(default=timezone.now, help_text="When its listing was last sent.")
    finished_at = models.DateTimeField(null=True, blank=True)
    notified_at = models.DateTimeField(null=True, blank=True, help_text=(
        "When every channel told what it found (or was given up)."))
    notified_channels = models.JSONField(default=list, blank=True, help_text="The channels that told it so far.")
    notify_attempts = models.PositiveSmallIntegerField(default=0)
    notify_next_at = models.DateTimeField(null=True, blank=True, help_text="When the next telling is due.")
    notify_error = models.TextField(blank=True, help_text="Why the last telling failed.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=BisectionStatus.values), name="bisection_status_valid"),
            models.CheckConstraint(condition=Q(direction__in=(1, -1)), name="bisection_direction_valid"),
            models.CheckConstraint(condition=Q(expected__gt=0) & Q(alpha__gt=0) & Q(alpha__lt=1),
                                   name="bisection_levels_valid"),
        ]

    def __str__(self) -> str:
        return f"bisection #{self.pk} of alert #{self.alert_id}"


class BisectionStep(models.Model):
    """One session of a bisection: commit `candidate` between `reference` (good level) and `moved` (bad level),
    indexes into its range; ``decision`` once the session finished."""

    bisection = models.ForeignKey(Bisection, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveIntegerField()
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="bisection_step")
    role = models.CharField(max_length=20)
    reference = models.PositiveIntegerField()
    candidate = models.PositiveIntegerField()
    moved = models.PositiveIntegerField()
    alpha = models.FloatField()
    check_ends = models.BooleanField(default=False)
    decision = models.CharField(max_length=20, blank=True)
    change = models.FloatField(null=True, blank=True)
    low = models.FloatField(null=True, blank=True)
    high = models.FloatField(null=True, blank=True)
    rounds = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["bisection", "position"]
        constraints = [models.UniqueConstraint(fields=["bisection", "position"], name="bisection_step_position")]

    def __str__(self) -> str:
        return f"step {self.position} of {self.bisection}"
