"""Each series is shown in one unit everywhere (issue 16): chosen from its first result, for existing ones too."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery

from results.presentation import display_unit


def choose(apps, schema_editor):
    Metric = apps.get_model("results", "Metric")
    Result = apps.get_model("results", "Result")
    first = Result.objects.filter(metric=OuterRef("pk")).order_by("run__started_at", "run_id").values("mean")[:1]
    chosen = [(pk, display_unit(unit, mean)) for pk, unit, mean in
              Metric.objects.annotate(first=Subquery(first)).values_list("pk", "unit", "first").iterator()]
    by_unit = {}
    for pk, unit in chosen:
        by_unit.setdefault(unit, []).append(pk)
    for unit, pks in by_unit.items():
        for start in range(0, len(pks), 900):
            Metric.objects.filter(pk__in=pks[start:start + 900]).update(display_unit=unit)


class Migration(migrations.Migration):

    dependencies = [("results", "0009_commit_links_and_alert_follow_up")]

    operations = [
        migrations.AddField(
            model_name="metric",
            name="display_unit",
            field=models.CharField(
                blank=True, max_length=50,
                help_text="The unit every page, chart and export shows the series in (a time: s, ms, µs or ns), "
                          "chosen from its first result; empty: the stored unit."),
        ),
        migrations.RunPython(choose, migrations.RunPython.noop),
    ]
