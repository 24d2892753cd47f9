"""What is measured: a project's benchmarks and their metrics (unit, which way is better, threshold, target
interval)."""

from django.db import models
from django.db.models import Q

from ..identifiers import validate_name
from ..result_schema import DEFAULT_THRESHOLD
from .projects import Project


class Direction(models.TextChoices):
    LOWER_IS_BETTER = "lower_is_better", "lower is better"
    HIGHER_IS_BETTER = "higher_is_better", "higher is better"


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
