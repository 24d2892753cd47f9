"""A result against a baseline: stored comparisons with every number behind their verdicts, and the chunks a
large nightly run's comparison is shared out in."""

from django.db import models
from django.db.models import F, Q

from ..decisions import VERDICTS
from .runs import Result, Run

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
