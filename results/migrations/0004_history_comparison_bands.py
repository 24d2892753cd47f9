"""History comparisons store their baseline band (the prediction interval of one new run mean), which the
history page used to recompute from every comparison's inputs on each request. Fills it in for the
comparisons stored before; the formula is the one ``results.stats.compare_with_history`` now stores."""

import math

from django.db import migrations
from scipy import stats

BATCH = 2000


def add_bands(apps, schema_editor):
    Comparison = apps.get_model("results", "Comparison")
    changed = []
    for comparison in Comparison.objects.filter(method="history").only("inputs", "confidence_level").iterator(BATCH):
        inputs = comparison.inputs or {}
        means = [row[0] for row in inputs.get("history") or ()]
        if "band" in inputs or len(means) < 2:
            continue
        k = len(means)
        centre = math.fsum(means) / k
        spread = math.sqrt(math.fsum((mean - centre) ** 2 for mean in means) / (k - 1))
        half = float(stats.t.ppf((1.0 + comparison.confidence_level) / 2.0, k - 1)) * spread * math.sqrt(1.0 + 1.0 / k)
        comparison.inputs = {**inputs, "band": [centre - half, centre + half]}
        changed.append(comparison)
        if len(changed) == BATCH:
            Comparison.objects.bulk_update(changed, ["inputs"])
            changed = []
    Comparison.objects.bulk_update(changed, ["inputs"])


class Migration(migrations.Migration):
    dependencies = [("results", "0003_revision_identifiers")]
    operations = [migrations.RunPython(add_bands, migrations.RunPython.noop)]
