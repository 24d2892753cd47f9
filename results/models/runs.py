"""The measurements: revisions, runs (and the one definition of a series' nights), their results and the
metrics a run failed to measure."""

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models import F, Q, QuerySet

from ..identifiers import BRANCH_MAX_LENGTH, COMMIT_MAX_LENGTH, validate_branch, validate_commit
from ..result_schema import SAMPLE_DTYPE
from ..stats import VARIANCE_METHODS
from .benchmarks import Metric
from .projects import Machine, Project


class Revision(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="revisions")
    commit = models.CharField(max_length=COMMIT_MAX_LENGTH, validators=[validate_commit])
    branch = models.CharField(max_length=BRANCH_MAX_LENGTH, blank=True, validators=[validate_branch])
    pull_request = models.PositiveIntegerField(null=True, blank=True)
    base_commit = models.CharField(max_length=COMMIT_MAX_LENGTH, blank=True, validators=[validate_commit],
                                   help_text="For a pull request: the commit it is based on.")
    author = models.CharField(max_length=255, blank=True)
    message = models.TextField(blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-timestamp", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "commit", "branch"], name="revision_unique_commit_branch"),
            models.CheckConstraint(condition=~Q(commit=""), name="revision_commit_not_empty"),
        ]

    def __str__(self) -> str:
        return self.commit[:12]


class RunKind(models.TextChoices):
    NIGHTLY = "nightly"
    PR = "pr", "pull request"
    MANUAL = "manual"
    IMPORTED = "imported"
    CONFIRMATION = "confirmation", "A/B confirmation"
    BISECTION = "bisection", "bisection step"


OUTSIDE_SERIES = (RunKind.PR, RunKind.CONFIRMATION, RunKind.BISECTION)
"""Runs that are never nights of a series: a pull request's, an A/B session's re-measurement of an alert's two
revisions, and a bisection's sessions of the commits in between (out of order, under other conditions)."""
SESSION_KINDS = (RunKind.CONFIRMATION, RunKind.BISECTION)
"""Runs only the runner's sessions make (never posted): an alert's A/B re-measurement, a bisection's steps."""
SERIES_KINDS = tuple(kind for kind in RunKind if kind not in OUTSIDE_SERIES)
"""The kinds of runs that are nights of a series. Queries filter on them (an ``IN``, which an index on the kind
serves; the ``NOT IN`` of :data:`OUTSIDE_SERIES` is not)."""


def series_nights(prefix: str = "", *, branch: str | None = None) -> Q:
    """The one definition of a series' nights, for every query that reads a series: completed runs of a series
    kind (:data:`SERIES_KINDS`) on the project's default branch, or naming no revision at all (a nightly posted
    without a commit is a night of the branch it was not told apart from: without this it never had a
    history). `prefix` is the path from the queried model to the run (``"run__"``, ``"first_run__"``);
    `branch`, the project's default branch where the caller knows it (a literal the index serves), else it is
    joined."""
    on_branch = Q(**{f"{prefix}revision__branch": branch if branch is not None
                     else F(f"{prefix}project__default_branch")}) | Q(**{f"{prefix}revision__isnull": True})
    return Q(**{f"{prefix}status": RunStatus.COMPLETED, f"{prefix}kind__in": SERIES_KINDS}) & on_branch


def nights_before(run: "Run") -> QuerySet:
    """The nights of ``run``'s series before it (:func:`series_nights` of its project's default branch, on its
    machine, started earlier), newest first."""
    return Run.objects.filter(
        series_nights(branch=run.project.default_branch), project_id=run.project_id, machine_id=run.machine_id,
        started_at__lt=run.started_at,
    ).exclude(pk=run.pk).order_by("-started_at", "-id")


class RunStatus(models.TextChoices):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Run(models.Model):
    Kind = RunKind
    Status = RunStatus

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    machine = models.ForeignKey(Machine, on_delete=models.PROTECT, related_name="runs")
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="runs", null=True, blank=True)
    kind = models.CharField(max_length=20, choices=RunKind.choices)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.COMPLETED)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    environment_match = models.JSONField(
        default=dict, blank=True, help_text="The earlier nights whose machine environment this night's series "
        "matched ('runs'), how far the run moved ('move', log) and over how many series ('series'); empty where "
        "none matched (results.environment).")
    source = models.CharField(max_length=200, blank=True, help_text="What produced the run, e.g. 'pyperf 2.10.0'.")
    run_key = models.CharField(
        max_length=200, null=True, blank=True, help_text="Client-supplied key that makes re-posting idempotent."
    )
    payload_digest = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the posted document.")
    compared_at = models.DateTimeField(null=True, blank=True, help_text="When its comparisons were computed.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    token = models.ForeignKey("ApiToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                              help_text="The API token it was posted with (none: a browser session or the runner).")
    vouched = models.BooleanField(
        default=False, help_text="Its poster vouched for its revision: an automatic session (an alert's confirmation) "
                                 "may build it. The system's own runs, and those of staff or the project's "
                                 "maintainers posted with the jobs scope (runner.trust).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "run_key"], condition=Q(run_key__isnull=False), name="run_unique_key"
            ),
            models.CheckConstraint(condition=Q(kind__in=RunKind.values), name="run_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="run_status_valid"),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True) | Q(finished_at__gte=F("started_at")),
                name="run_finished_after_started",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "machine", "kind", "-started_at"], name="run_history_idx"),
            # The runs list's order: its first page is read from the index, however many runs there are.
            models.Index(fields=["-started_at", "-id"], name="run_newest_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.project} #{self.pk} ({self.kind})"


class Result(models.Model):
    """One metric measured in one run.

    ``mean``, ``variance`` and ``n`` are all any later comparison needs: ``variance / n`` is the
    variance of the mean and ``n − 1`` its degrees of freedom (spec §2a), however they were estimated
    (``variance_method``). Pilot's subsession analysis is kept beside them (``subsession_size`` q,
    ``subsession_variance`` s_q², ``subsessions`` m, ``autocorrelation`` r₁). The raw samples, when
    given, are kept as little-endian float64 bytes with their shape (axis 0 the top level, last axis
    the measurements), so nothing is lost and bootstraps can resample them.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="results")
    mean = models.FloatField()
    subsession_size = models.PositiveIntegerField(help_text="Pilot's subsession size q (1 where none qualified).")
    variance = models.FloatField(help_text="n times the variance of the mean (for units: their variance, ddof=1).")
    n = models.PositiveIntegerField(help_text="The count whose n − 1 is the degrees of freedom of the variance.")
    variance_method = models.CharField(
        max_length=20, default="summary", choices=list(VARIANCE_METHODS.items()),
        help_text="How the variance of the mean was estimated (spec §2a).")
    subsession_variance = models.FloatField(null=True, blank=True,
                                            help_text="Pilot's s_q², the variance of the subsession means.")
    subsessions = models.PositiveIntegerField(null=True, blank=True, help_text="Pilot's m, the subsessions.")
    sample_count = models.PositiveBigIntegerField(help_text="Number of raw samples behind the summary.")
    confidence_level = models.FloatField(default=0.95)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    warmup_removed = models.PositiveIntegerField(default=0)
    autocorrelation = models.FloatField(
        null=True, blank=True, help_text="Lag-1 autocorrelation of the subsession means achieved."
    )
    independent = models.BooleanField(
        default=True,
        help_text="False when no subsession size brought |r1| within bounds: the interval may be too narrow.",
    )
    converged = models.BooleanField(default=True, help_text="The confidence interval reached the metric's target.")
    level_deviation = models.FloatField(
        null=True, blank=True, help_text="log(mean) − log(the series' recent level) on its night: a coordinate of "
        "the run's environment fingerprint (results.environment); null where the series had no level yet.")
    environment_offset = models.FloatField(
        null=True, blank=True, help_text="log of the factor by which the night's machine environment moved this "
        "series, divided out before shift detection; null where none was recognised.")
    samples = models.BinaryField(null=True, blank=True, editable=False)
    samples_shape = models.JSONField(null=True, blank=True, editable=False)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["run", "metric"], name="result_unique_run_metric"),
            models.CheckConstraint(condition=Q(variance__gte=0), name="result_variance_non_negative"),
            models.CheckConstraint(condition=Q(subsession_size__gte=1), name="result_subsession_size_positive"),
            models.CheckConstraint(condition=Q(n__gte=1), name="result_n_positive"),
            models.CheckConstraint(condition=Q(sample_count__gte=F("n")), name="result_samples_cover_units"),
            models.CheckConstraint(
                condition=Q(subsessions__isnull=True) | Q(sample_count__gte=F("subsessions") * F("subsession_size")),
                name="result_samples_cover_subsessions",
            ),
            models.CheckConstraint(
                condition=Q(confidence_level__gt=0, confidence_level__lt=1), name="result_confidence_level_in_0_1"
            ),
            models.CheckConstraint(
                condition=(Q(ci_low__isnull=True) & Q(ci_high__isnull=True))
                | Q(ci_low__lte=F("mean"), ci_high__gte=F("mean")),
                name="result_ci_contains_mean",
            ),
            models.CheckConstraint(
                condition=Q(autocorrelation__isnull=True) | Q(autocorrelation__gte=-1, autocorrelation__lte=1),
                name="result_autocorrelation_in_range",
            ),
            models.CheckConstraint(
                condition=Q(samples__isnull=True, samples_shape__isnull=True)
                | Q(samples__isnull=False, samples_shape__isnull=False),
                name="result_samples_with_shape",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.metric} = {self.mean:g}"

    def samples_array(self) -> np.ndarray | None:
        """The raw samples with their levels, or None when only the summary was stored."""
        if self.samples is None:
            return None
        return np.frombuffer(bytes(self.samples), dtype=SAMPLE_DTYPE).reshape(self.samples_shape)


class FailedResult(models.Model):
    """A metric that a run tried to measure and could not: the benchmark crashed, timed out or returned no
    number. It has no numbers, so it is never compared and never part of a baseline (a series' history is its
    results); it is shown and counted, so a crashed benchmark is seen instead of silently missing."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="failures")
    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="failures")
    error = models.TextField(blank=True, help_text="What the tool said, as posted.")

    class Meta:
        ordering = ["run", "metric"]
        constraints = [models.UniqueConstraint(fields=["run", "metric"], name="failed_result_unique_run_metric")]

    def __str__(self) -> str:
        return f"{self.metric} failed"
