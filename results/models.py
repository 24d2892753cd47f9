"""The stored truth: projects, machines, benchmarks and their metrics, revisions, runs, results.

Every invariant the statistics rely on is a database constraint, so no code path (admin,
API, shell, a future bug) can store a result the numerical core would choke on.
"""

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q, QuerySet

from .identifiers import (
    BRANCH_MAX_LENGTH,
    COMMIT_MAX_LENGTH,
    RESERVED_QUEUES,
    validate_branch,
    validate_commit,
    validate_name,
    validate_queue,
)
from . import outbound
from .decisions import VERDICTS
from .result_schema import DEFAULT_THRESHOLD, SAMPLE_DTYPE
from .stats import VARIANCE_METHODS


class Direction(models.TextChoices):
    LOWER_IS_BETTER = "lower_is_better", "lower is better"
    HIGHER_IS_BETTER = "higher_is_better", "higher is better"


class WebhookFormat(models.TextChoices):
    """The body a project's webhook is sent (:func:`results.notifications.webhook_payload`)."""

    JSON = "json", "JSON: every field, with text and html (scripts, Matrix hookshot, Slack-compatible receivers)"
    SLACK = "slack", "Slack: only text, in Slack's mrkdwn (Slack's incoming webhooks refuse other fields)"
    MATRIX = "matrix", "Matrix: only text and html (a hookshot webhook that should post nothing else)"


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    slug = models.SlugField(max_length=100, unique=True)
    repository_url = models.URLField(blank=True, help_text=(
        "Commits link to it where its host is GitHub, GitLab, Gitea or Codeberg."))
    commit_url_template = models.CharField(
        max_length=500, blank=True,
        validators=[RegexValidator(r"^https?://[^\s]*\{commit\}[^\s]*$",
                                   message="An http(s) address containing {commit}, without spaces.")],
        help_text="Where a commit is shown, e.g. https://git.example.org/tool/commit/{commit}; wins over the "
                  "repository URL's host.")
    default_branch = models.CharField(max_length=BRANCH_MAX_LENGTH, default="main", validators=[validate_branch])
    history_size = models.PositiveSmallIntegerField(
        default=10, help_text="K: nightly runs of the default branch a new nightly is compared against.")
    notify_emails = models.TextField(blank=True, help_text="Comma-separated addresses told of new regressions.")
    webhook_url = models.URLField(blank=True, help_text="Receives a JSON POST for every new alert group.")
    webhook_format = models.CharField(max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.JSON,
                                      help_text="What the webhook's JSON holds.")
    private = models.BooleanField(default=False, help_text=(
        "Read by its members and staff only, whatever PILOTWEB_PUBLIC_READ says."))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(history_size__gte=2), name="project_history_size_min_2")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.webhook_url:
            try:
                outbound.check_webhook_url(self.webhook_url, allow_private=settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE)
            except ValueError as error:
                raise ValidationError({"webhook_url": f"{error} (PILOTWEB_WEBHOOK_ALLOW_PRIVATE allows private "
                                                      "addresses)."}) from None


class Machine(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    hostname = models.CharField(max_length=255, blank=True, validators=[validate_name])
    cpu_model = models.CharField(max_length=255, blank=True, validators=[validate_name])
    cores = models.PositiveIntegerField(null=True, blank=True, help_text="Logical CPU cores.")
    memory_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    os = models.CharField("OS", max_length=255, blank=True)
    hardware = models.JSONField(default=dict, blank=True, help_text="Further details captured on the machine.")
    queue = models.CharField(
        max_length=100, unique=True, validators=[validate_queue],
        help_text="The Celery queue this machine's benchmark worker consumes."
    )
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text="Its last upload or registration.")
    worker_seen_at = models.DateTimeField(
        null=True, blank=True, help_text="When a benchmark worker consuming its queue last said it was alive.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(cores__isnull=True) | Q(cores__gte=1), name="machine_cores_positive"),
            models.CheckConstraint(condition=~Q(queue=""), name="machine_queue_not_empty"),
            models.CheckConstraint(condition=~Q(queue__in=RESERVED_QUEUES), name="machine_queue_not_reserved"),
        ]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    """What a member may do in a project (staff may do everything everywhere). Each role includes the ones
    before it: :data:`results.access.ROLE_ORDER`."""

    VIEWER = "viewer", "viewer: reads the project, also when it is private"
    UPLOADER = "uploader", "uploader: also posts runs"
    MAINTAINER = "maintainer", "maintainer: also triages alerts and vouches for the revisions it posts"


class Membership(models.Model):
    """A user's role in a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class Benchmark(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="benchmarks")
    name = models.CharField(max_length=500, validators=[validate_name])
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="benchmark_unique_name")]

    def __str__(self) -> str:
        return self.name


class Metric(models.Model):
    """A performance index of a benchmark: what is measured, in which unit, which way is better."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="metrics")
    name = models.CharField(max_length=200, validators=[validate_name])
    unit = models.CharField(max_length=50, validators=[validate_name])
    display_unit = models.CharField(
        max_length=50, blank=True,
        help_text="The unit every page, chart and export shows the series in (a time: s, ms, µs or ns), chosen from "
                  "its first result; empty: the stored unit.")
    direction = models.CharField(max_length=20, choices=Direction.choices, default=Direction.LOWER_IS_BETTER)
    threshold = models.FloatField(
        default=DEFAULT_THRESHOLD,
        help_text="Practical-significance threshold θ: relative changes inside ±θ count as no change.",
    )
    confidence_level = models.FloatField(default=0.95)
    target_width = models.FloatField(
        default=0.10, help_text="Target full width of the confidence interval, relative to the mean."
    )

    class Meta:
        ordering = ["benchmark", "name"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "name"], name="metric_unique_name"),
            models.CheckConstraint(condition=Q(threshold__gte=0), name="metric_threshold_non_negative"),
            models.CheckConstraint(
                condition=Q(confidence_level__gt=0, confidence_level__lt=1), name="metric_confidence_level_in_0_1"
            ),
            models.CheckConstraint(condition=Q(target_width__gt=0), name="metric_target_width_positive"),
            models.CheckConstraint(condition=Q(direction__in=Direction.values), name="metric_direction_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.name} · {self.name}"


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


OUTSIDE_SERIES = (RunKind.PR, RunKind.CONFIRMATION)
"""Runs that are never nights of a series: a pull request's, and an A/B session's re-measurement of an alert's
two revisions (out of order, under other conditions)."""
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


class TokenScope(models.TextChoices):
    """What a token may be used for, within its user's roles (:mod:`results.access`)."""

    UPLOAD = "upload", "upload: post runs"
    TRIAGE = "triage", "triage: change alerts"
    JOBS = "jobs", "jobs: define and run jobs (staff), and vouch for posted revisions (maintainers)"


class ApiToken(models.Model):
    """A per-user API token, optionally for one project only, with scopes. Only a SHA-256 digest is stored; the
    token is shown once, at creation. It can do no more than its user may (:mod:`results.access`)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=200, help_text="What the token is for, e.g. 'nightly CI'.")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens",
                                help_text="The one project it may write to (empty: any the user may).")
    scopes = models.JSONField(default=list, blank=True,
                              help_text=f"What it may do: any of {', '.join(TokenScope.values)}.")
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a token.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        ordering = ["user", "name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def clean(self) -> None:
        if not isinstance(self.scopes, list) or not set(self.scopes) <= set(TokenScope.values):
            raise ValidationError({"scopes": f"Give a list of scopes among {', '.join(TokenScope.values)}."})

    def allows(self, scope: str) -> bool:
        return scope in self.scopes


Verdict = models.TextChoices("Verdict", [(verdict.upper().replace(" ", "_"), verdict) for verdict in VERDICTS])
"""A stored comparison's verdict: the vocabulary of :mod:`results.decisions`, as choices."""


class ComparisonMethod(models.TextChoices):
    HISTORY = "history", "against the last K runs (between-run variance included)"
    PREVIOUS = "previous", "against the previous run alone (naive)"
    PAIRWISE = "pairwise", "Welch and Fieller on subsession statistics"
    BOOTSTRAP = "bootstrap", "hierarchical bootstrap on raw samples"
    SHIFT = "shift", "the nights since a recent shift against the nights before it (evidence pooled)"
    CHANGE_POINT = "change_point", "a change point of the daily scan: the nights since it against those before it"


class Comparison(models.Model):
    """A candidate result against a baseline, with every number that fed the verdict."""

    # Indexed with the method and verdict (Meta): the runs list counts a page of runs' verdicts from the index alone.
    candidate = models.ForeignKey(Result, on_delete=models.CASCADE, related_name="comparisons", db_index=False)
    baseline = models.ForeignKey(Result, on_delete=models.CASCADE, null=True, blank=True, related_name="+",
                                 help_text="The baseline result of a pairwise comparison.")
    method = models.CharField(max_length=20, choices=ComparisonMethod.choices)
    ratio = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True, help_text="Null when the interval is unbounded.")
    ci_high = models.FloatField(null=True, blank=True)
    bounded = models.BooleanField(default=True)
    statistic = models.FloatField(null=True, blank=True)
    df = models.FloatField(null=True, blank=True)
    pvalue = models.FloatField(null=True, blank=True)
    qvalue = models.FloatField(null=True, blank=True, help_text="Benjamini–Hochberg, across the run's comparisons.")
    verdict = models.CharField(max_length=30, choices=Verdict.choices)
    threshold = models.FloatField()
    confidence_level = models.FloatField()
    inputs = models.JSONField(
        default=dict, blank=True,
        help_text="The summaries the comparison was computed from; for history, the runs and their summaries.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["candidate", "method"]
        constraints = [
            models.CheckConstraint(condition=Q(method__in=ComparisonMethod.values), name="comparison_method_valid"),
            models.CheckConstraint(condition=Q(verdict__in=Verdict.values), name="comparison_verdict_valid"),
            models.CheckConstraint(condition=Q(pvalue__isnull=True) | Q(pvalue__gte=0, pvalue__lte=1),
                                   name="comparison_pvalue_in_0_1"),
            models.CheckConstraint(condition=Q(qvalue__isnull=True) | Q(qvalue__gte=0, qvalue__lte=1),
                                   name="comparison_qvalue_in_0_1"),
            models.CheckConstraint(condition=Q(ci_low__isnull=True) | Q(ci_high__gte=F("ci_low")),
                                   name="comparison_interval_ordered"),
            models.CheckConstraint(condition=Q(threshold__gte=0), name="comparison_threshold_non_negative"),
        ]
        indexes = [models.Index(fields=["verdict"], name="comparison_verdict_idx"),
                   models.Index(fields=["candidate", "method", "verdict"], name="comparison_candidate_idx")]

    def __str__(self) -> str:
        return f"{self.candidate} ({self.method}): {self.verdict}"


class ComparisonChunk(models.Model):
    """A share of a large nightly run's comparison: the series one analysis worker compares, so that several
    workers compare one run at once. The last chunk to finish completes the run's comparison (q-values across
    all its series, suspected verdicts, alerts): see :func:`results.comparisons.compare_chunk`."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="comparison_chunks")
    index = models.PositiveIntegerField()
    metric_ids = models.JSONField(default=list, help_text="The metrics of the run's results this chunk compares.")
    carried = models.JSONField(default=dict, blank=True,
                               help_text="Alerts carried by its series' shift tests: metric id → alert id.")
    worker = models.CharField(max_length=200, blank=True, help_text="The analysis worker that compared it.")
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="comparison_chunk_unique_index")]

    def __str__(self) -> str:
        return f"Chunk {self.index} of run #{self.run_id}"


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
    detected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["metric", "run__started_at"]
        constraints = [models.UniqueConstraint(fields=["metric", "machine", "run"], name="change_point_unique")]

    def __str__(self) -> str:
        return f"{self.metric} shifted ×{self.ratio:.3f} at run {self.run_id}"


class AlertStatus(models.TextChoices):
    NEW = "new"
    ACKNOWLEDGED = "acknowledged"
    INVALID = "invalid"
    FIXED = "fixed"
    WONT_FIX = "wont_fix", "won't fix"


class AlertGroup(models.Model):
    """The alerts one run raised, so a bad night is one notification, not hundreds."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="alert_group")
    created_at = models.DateTimeField(auto_now_add=True)
    notified_at = models.DateTimeField(null=True, blank=True)

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

    SUSPECTED = "suspected", "suspected: significant, its interval still crosses the band edge"
    CONFIRMED = "confirmed", "confirmed: its interval lies beyond the band"
    DISMISSED = "dismissed", "dismissed: later measurements show no such change"


class IncidentKind(models.TextChoices):
    MACHINE = "machine", "machine-wide shift: many series of one machine moved on one night"


class Incident(models.Model):
    """Alerts that are one event, shown, notified and triaged once: a *machine-wide shift*, many series of one
    project's machine moving on the same night (a runner image, a kernel, a compiler changed under them; or one
    commit slowing many benchmarks, which the commit range of the night says). Its alerts stay each series' own:
    each series re-levels at the night, so its next shift is seen (:mod:`results.baselines`)."""

    kind = models.CharField(max_length=20, choices=IncidentKind.choices, default=IncidentKind.MACHINE)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="incidents")
    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="incidents")
    night = models.DateField(help_text="The night its series moved (results.nights).")
    first_run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+",
                                  help_text="The first run of the night its series moved on.")
    status = models.CharField(max_length=20, choices=AlertStatus.choices, default=AlertStatus.NEW)
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
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")

    class Meta:
        ordering = ["group", "id"]
        constraints = [models.CheckConstraint(condition=Q(status__in=AlertStatus.values), name="alert_status_valid"),
                       models.CheckConstraint(condition=Q(state__in=AlertState.values), name="alert_state_valid")]

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
