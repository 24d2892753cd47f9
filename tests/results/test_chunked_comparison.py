"""A large nightly compared in chunks by several analysis workers stores what one worker comparing it whole
stores: the same rows, q-values across all its series, the same suspected verdicts and alerts. Chunks race to
complete the run on PostgreSQL too (./pilot test runs this file there)."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from results import comparisons
from results.models import Alert, Comparison, ComparisonChunk, Run
from tests.factories import posted_run
from tests.processes import all_at_once

pytestmark = pytest.mark.django_db(transaction=True)

TONIGHT = {"regressed": 1.10, "improved": 0.90, "same": 1.0, "noisy": 1.03, "slightly": 1.012, "new": 1.0,
           **{f"steady {i}": 1.0 for i in range(6)}}


def nights() -> Run:
    """Ten nights of eleven series, then tonight's run (with a new series); tonight."""
    for night in range(10):
        posted_run(night, {name: (1.0, 0.05 if name == "noisy" else 0.002) for name in TONIGHT if name != "new"})
    return posted_run(10, {name: (mean, 0.05 if name == "noisy" else 0.002) for name, mean in TONIGHT.items()})


def stored(run: Run) -> dict:
    return {(benchmark, method): values for benchmark, method, *values in Comparison.objects.filter(
        candidate__run=run).values_list("candidate__metric__benchmark__name", "method", "ratio", "ci_low", "ci_high",
                                         "pvalue", "qvalue", "verdict", "inputs")}


def opened(run: Run) -> set:
    return set(Alert.objects.filter(group__run=run).values_list(
        "comparison__candidate__metric__benchmark__name", "state", "first_run_id"))


def test_a_run_compared_in_chunks_stores_what_a_whole_comparison_stores():
    tonight = nights()
    comparisons.compare_run(run_id=tonight.pk)
    whole, whole_alerts = stored(tonight), opened(tonight)
    assert {verdict for *_, verdict, _ in whole.values()} >= {"regression", "improvement", "no change"}
    assert whole_alerts

    chunks = comparisons.begin_comparison(run_id=tonight.pk, chunk_series=5)

    assert len(chunks) == 3 and not Comparison.objects.filter(candidate__run=tonight).exists()
    assert Run.objects.get(pk=tonight.pk).compared_at is None
    random.Random(1).shuffle(chunks)
    completed = [comparisons.compare_chunk(chunk_id=chunk, worker=f"analysis-{i % 2}@host")
                 for i, chunk in enumerate(chunks)]
    assert completed == [False, False, True]
    assert stored(tonight) == whole
    assert opened(tonight) == whole_alerts
    assert Run.objects.get(pk=tonight.pk).compared_at is not None
    assert set(ComparisonChunk.objects.filter(run=tonight).values_list("worker", flat=True)) == {
        "analysis-0@host", "analysis-1@host"}


def test_a_run_of_few_series_is_compared_whole():
    tonight = nights()

    assert comparisons.begin_comparison(run_id=tonight.pk, chunk_series=100) == []
    assert Comparison.objects.filter(candidate__run=tonight).count() == 3 * len(TONIGHT) - 1
    assert not ComparisonChunk.objects.exists()


def test_comparing_again_replaces_the_chunks_and_a_stale_chunk_is_skipped():
    tonight = nights()
    stale = comparisons.begin_comparison(run_id=tonight.pk, chunk_series=4)
    comparisons.compare_chunk(chunk_id=stale[0])

    fresh = comparisons.begin_comparison(run_id=tonight.pk, chunk_series=6)

    assert not ComparisonChunk.objects.filter(pk__in=stale).exists()
    assert comparisons.compare_chunk(chunk_id=stale[1]) is False
    assert [comparisons.compare_chunk(chunk_id=chunk) for chunk in fresh] == [False, True]
    assert Comparison.objects.filter(candidate__run=tonight).count() == 3 * len(TONIGHT) - 1
    comparisons.compare_run(run_id=tonight.pk)
    assert not ComparisonChunk.objects.filter(run=tonight).exists()


def test_the_catch_up_leaves_pending_chunks_alone_until_they_are_lost():
    tonight = nights()
    Run.objects.update(created_at=timezone.now() - timedelta(hours=1))
    comparisons.compare_run(run_id=tonight.pk)
    chunks = comparisons.begin_comparison(run_id=tonight.pk, chunk_series=5)

    assert tonight.pk not in comparisons.pending_runs()
    assert comparisons.pending_chunks() == []
    ComparisonChunk.objects.update(created_at=timezone.now() - timedelta(hours=1))
    assert comparisons.pending_chunks() == sorted(chunks)
    for chunk in chunks:
        comparisons.compare_chunk(chunk_id=chunk)
    assert comparisons.pending_chunks() == [] and tonight.pk not in comparisons.pending_runs()


def test_the_last_two_chunks_finishing_at_once_complete_the_run_once():
    tonight = nights()
    comparisons.compare_run(run_id=tonight.pk)
    whole, whole_alerts = stored(tonight), opened(tonight)
    first, *last_two = comparisons.begin_comparison(run_id=tonight.pk, chunk_series=4)
    comparisons.compare_chunk(chunk_id=first)
    completed = all_at_once(lambda chunk: comparisons.compare_chunk(chunk_id=chunk), last_two)

    assert sorted(completed) == [False, True]
    assert stored(tonight) == whole
    assert opened(tonight) == whole_alerts
