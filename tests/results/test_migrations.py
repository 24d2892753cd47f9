from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_models_and_migrations_agree():
    call_command("makemigrations", "--check", "--dry-run", stdout=StringIO())


@pytest.mark.django_db(transaction=True)
def test_history_comparisons_stored_before_bands_get_the_band_compare_with_history_computes():
    import numpy as np
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from results.stats import compare_with_history

    executor = MigrationExecutor(connection)
    executor.migrate([("results", "0003_revision_identifiers")])
    apps = executor.loader.project_state([("results", "0003_revision_identifiers")]).apps
    project = apps.get_model("results", "Project").objects.create(name="p", slug="p")
    machine = apps.get_model("results", "Machine").objects.create(name="m", queue="bench.m")
    metric = apps.get_model("results", "Metric").objects.create(
        benchmark=apps.get_model("results", "Benchmark").objects.create(project=project, name="b"), name="time",
        unit="s")
    run = apps.get_model("results", "Run").objects.create(project=project, machine=machine, status="completed",
                                                         kind="nightly", started_at="2026-11-01T02:00:00Z")
    result = apps.get_model("results", "Result").objects.create(
        run=run, metric=metric, mean=1.0, subsession_size=1, variance=0.01, n=10, sample_count=10,
        confidence_level=0.95)
    history = [[1.0, 0.01, 10], [1.1, 0.01, 10], [0.95, 0.01, 10], [1.02, 0.01, 10]]
    apps.get_model("results", "Comparison").objects.create(
        candidate=result, method="history", verdict="no change", threshold=0.02, confidence_level=0.9,
        inputs={"history": history})

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    from results.models import Comparison

    stored = Comparison.objects.get().inputs["band"]
    means = np.array([row[0] for row in history])
    expected = compare_with_history(1.0, 0.01, 10, means, np.full(4, 0.01), np.full(4, 10), confidence=0.9)
    assert stored == pytest.approx([expected.prediction_low, expected.prediction_high])
