"""One definition of a series' nights (results.models.series_nights), read by every query of a series."""

from datetime import timedelta

import pytest

from results import comparisons, services
from results.models import Comparison, Run, RunKind, RunStatus, series_nights
from results.schemas import RunIn
from tests.factories import NIGHT_ZERO, posted_run

pytestmark = pytest.mark.django_db


def test_the_nights_are_completed_runs_of_a_series_kind_on_the_default_branch_or_of_no_revision():
    nights = [posted_run(night, {"sort": 1.0}) for night in range(3)]
    pull = posted_run(3, {"sort": 1.0}, kind="pr", branch="feature", base_commit=f"{0:040x}")
    confirmation = posted_run(4, {"sort": 1.0}, kind="confirmation", commit="c" * 40)
    feature = posted_run(5, {"sort": 1.0}, branch="feature", commit="f" * 40)
    cancelled = posted_run(6, {"sort": 1.0}, commit="d" * 40)
    Run.objects.filter(pk=cancelled.pk).update(status=RunStatus.CANCELLED)
    bare = services.ingest_run(document=RunIn.model_validate({
        "project": {"name": "Demo"}, "machine": {"name": "bench-1"}, "kind": RunKind.NIGHTLY,
        "started_at": NIGHT_ZERO + timedelta(days=7),
        "results": [{"benchmark": "sort", "summary": {"mean": 1.0, "subsession_size": 1, "variance": 1e-4, "n": 9}}],
    }), user=None).run

    found = set(Run.objects.filter(series_nights()).values_list("pk", flat=True))

    assert found == {night.pk for night in nights} | {bare.pk}
    assert not found & {pull.pk, confirmation.pk, feature.pk, cancelled.pk}
    assert set(Run.objects.filter(series_nights(branch="main")).values_list("pk", flat=True)) == found


def test_nightlies_posted_without_a_commit_get_a_history():
    """They never did: the history read only runs whose revision named the default branch."""
    for night in range(6):
        run = services.ingest_run(document=RunIn.model_validate({
            "project": {"name": "P"}, "machine": {"name": "m"}, "kind": "nightly",
            "started_at": NIGHT_ZERO + timedelta(days=night),
            "results": [{"benchmark": "b", "summary": {"mean": 1.0 + 0.001 * night, "subsession_size": 1,
                                                       "variance": 1e-4, "n": 20}}]}), user=None).run
        comparisons.compare_run(run_id=run.pk)

    history = Comparison.objects.get(candidate__run=run, method="history")
    assert history.verdict != "insufficient history" and len(history.inputs["history_runs"]) == 5
