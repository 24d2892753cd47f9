"""Stored results get the variance of the mean of spec §2a where their samples were kept (issue 15)."""

import math

import numpy as np
from django.db import migrations

from results import stats

BATCH = 500


def _matches(result, summary) -> bool:
    """Whether the stored triple is Pilot's summary of the stored samples (it was computed from them, not
    posted by a runner after warm-up removal or by a tool)."""
    return (result.n == summary.n and result.subsession_size == summary.subsession_size
            and math.isclose(result.mean, summary.mean, rel_tol=1e-9, abs_tol=1e-300)
            and math.isclose(result.variance, summary.variance, rel_tol=1e-9, abs_tol=1e-300))


def recompute_from_samples(apps, schema_editor):
    """Rows whose triple was computed from their kept samples get the spec §2a triple, with Pilot's numbers
    beside it and the interval recomputed; every other row keeps its triple and says so ("summary")."""
    Result = apps.get_model("results", "Result")
    changed = []
    rows = Result.objects.filter(samples__isnull=False).only(
        "id", "mean", "variance", "n", "subsession_size", "sample_count", "confidence_level", "samples",
        "samples_shape", "autocorrelation", "independent").order_by("id")
    for result in rows.iterator(chunk_size=BATCH):
        samples = np.frombuffer(bytes(result.samples), dtype="<f8").reshape(result.samples_shape)
        if samples.size == 0 or not np.isfinite(samples).all():
            continue
        pilot = stats.summarize_samples(samples, method="pilot")
        if not _matches(result, pilot):
            continue
        summary = stats.summarize_samples(samples)
        result.mean, result.variance, result.n = summary.mean, summary.variance, summary.n
        result.variance_method, result.independent = summary.variance_method, summary.independent
        result.subsession_size, result.subsessions = summary.subsession_size, summary.subsessions or None
        result.subsession_variance = None if math.isnan(summary.subsession_variance) else summary.subsession_variance
        result.autocorrelation = None if math.isnan(summary.autocorrelation) else summary.autocorrelation
        if summary.n > 1:
            interval = stats.mean_interval(summary.mean, summary.variance, summary.n,
                                           confidence=result.confidence_level)
            result.ci_low = min(float(interval.low), summary.mean)
            result.ci_high = max(float(interval.high), summary.mean)
        changed.append(result)
        if len(changed) >= BATCH:
            _save(Result, changed)
    _save(Result, changed)


def _save(model, rows):
    model.objects.bulk_update(rows, ["mean", "variance", "n", "variance_method", "independent", "subsession_size",
                                     "subsessions", "subsession_variance", "autocorrelation", "ci_low", "ci_high"])
    rows.clear()



class Migration(migrations.Migration):

    dependencies = [
        ('results', '0007_variance_of_the_mean'),
    ]

    operations = [
        migrations.RunPython(recompute_from_samples, migrations.RunPython.noop),
    ]
