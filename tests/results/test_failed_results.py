"""Failed benchmarks (issue 17): a result may be posted as failed, with its error text and no numbers. It is
stored and shown (run page, overview, runs list, API), never compared and never part of a baseline; malformed
input is still refused whole."""

import json

import numpy as np
import pytest

from results import comparisons
from results.ingest import import_document, stated_overrides
from results.models import Alert, Comparison, FailedResult, Metric, Result, Run
from tests.factories import post_results

pytestmark = pytest.mark.django_db

CRASH = "Traceback (most recent call last):\n  ...\nMemoryError"


def measured(name: str, mean: float, *, seed: int = 0, **fields) -> dict:
    values = mean * (1.0 + np.random.default_rng(seed).normal(0.0, 0.01, 20))
    return {"benchmark": name, "summary": {"mean": float(values.mean()), "subsession_size": 1,
                                           "variance": float(values.var(ddof=1)), "n": 20}, **fields}


def failed(name: str, error: str = CRASH, **fields) -> dict:
    return {"benchmark": name, "failed": True, "error": error, **fields}


def document(results: list[dict], **fields) -> dict:
    return {"project": {"name": "Demo"}, "machine": {"name": "bench-1"}, "kind": "nightly",
            "revision": {"commit": "a" * 40, "branch": "main"}, "results": results, **fields}


def test_a_crashed_benchmark_is_stored_as_failed_and_the_rest_of_the_night_is_kept(api):
    response = api.post("/api/v1/runs", document([measured("parse", 1.0), failed("render")]),
                        content_type="application/json")

    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert [result.metric.benchmark.name for result in run.results.all()] == ["parse"]
    [failure] = FailedResult.objects.filter(run=run)
    assert (failure.metric.benchmark.name, failure.metric.name, failure.error) == ("render", "time", CRASH)

    detail = api.get(f"/api/v1/runs/{run.pk}").json()
    assert [result["benchmark"] for result in detail["results"]] == ["parse"]
    assert detail["failures"] == [{"metric_id": failure.metric_id, "benchmark_id": failure.metric.benchmark_id,
                                   "benchmark": "render", "metric": "time", "error": CRASH}]


@pytest.mark.parametrize(("result", "message"), [
    ({"benchmark": "b", "failed": True, "samples": [1.0, 2.0]}, "a failed result has no numbers"),
    ({"benchmark": "b", "failed": True, "summary": {"mean": 1.0, "subsession_size": 1, "variance": 0.1, "n": 3}},
     "a failed result has no numbers"),
    ({"benchmark": "b", "error": "boom", "samples": [1.0, 2.0]}, "'error' describes a failed result"),
    ({"benchmark": "b"}, "or 'failed': true"),
    ({"benchmark": "b", "samples": [1.0, None]}, "samples"),
    ({"benchmark": "b", "failed": True, "error": "x" * 10_001}, "error"),
])
def test_malformed_input_is_still_refused_whole(api, result, message):
    response = api.post("/api/v1/runs", document([measured("parse", 1.0), result]), content_type="application/json")

    assert response.status_code in (400, 422), response.content
    assert message in json.dumps(response.json())
    assert not Run.objects.exists() and not FailedResult.objects.exists() and not Metric.objects.exists()


def test_a_failure_is_never_compared_and_never_part_of_a_baseline():
    """A Bencher user had weeks of false alerts after a route that had been failing fast was fixed: the
    failures had become the baseline. Here twelve measured nights, eight failed ones, then the fixed
    benchmark measures as before: no change, and its baseline is the measured nights."""
    runs = []
    for night in range(21):
        entry = failed("route", error="HTTP 500") if 12 <= night < 20 else measured("route", 1.0, seed=night)
        runs.append(post_results([entry, measured("steady", 2.0, seed=100 + night)], night=night))
        comparisons.compare_run(run_id=runs[-1].pk)

    assert not Comparison.objects.filter(candidate__run__in=runs[12:20], candidate__metric__benchmark__name="route")
    history = Comparison.objects.get(candidate__run=runs[20], candidate__metric__benchmark__name="route",
                                     method="history")
    assert history.verdict == "no change"
    baseline_runs = set(history.inputs["history_runs"])
    assert baseline_runs and baseline_runs <= {run.pk for run in runs[:12]}
    assert not Alert.objects.exists()
    assert FailedResult.objects.count() == 8


def test_a_failure_takes_its_series_unit_and_a_series_known_only_from_failures_takes_its_first_numbers():
    post_results([measured("alloc", 1e6, metric="memory", unit="B", direction="lower_is_better")], night=0)
    post_results([failed("alloc", metric="memory")], night=1)  # states no unit: the series' own
    post_results([failed("new", error="")], night=1)  # a new series, first seen failing
    post_results([measured("new", 5e6, unit="B", seed=2)], night=2)

    assert FailedResult.objects.get(metric__benchmark__name="alloc").metric.unit == "B"
    assert Metric.objects.get(benchmark__name="new").unit == "B"
    assert Result.objects.get(metric__benchmark__name="new").mean == pytest.approx(5e6, rel=0.01)


def test_failures_are_shown_on_the_run_page_the_runs_list_and_the_overview(client):
    for night in range(4):
        post_results([measured("parse", 1.0, seed=night), measured("render", 3.0, seed=10 + night)], night=night)
    run = post_results([measured("parse", 1.0, seed=9), failed("render", error="Segmentation fault")], night=4)
    comparisons.compare_run(run_id=run.pk)

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "1 failed benchmark" in page and "Segmentation fault" in page
    assert "1 failed" in client.get("/runs/").content.decode()
    overview = client.get("/").content.decode()
    assert "1 failed" in overview and "Segmentation fault" in overview
    assert client.get("/runs/?format=json").json()[0]["failed"] == 1
    history = client.get(f"/history/{FailedResult.objects.get().metric_id}/").content.decode()
    assert "1 failed" in history and "Segmentation fault" in history


def test_a_later_run_of_the_night_that_measures_the_benchmark_clears_its_failure_on_the_overview(client):
    post_results([failed("render", error="flaky crash"), measured("parse", 1.0)], night=0)
    rerun = post_results([measured("render", 3.0)], night=0)
    Run.objects.filter(pk=rerun.pk).update(started_at=rerun.started_at.replace(hour=rerun.started_at.hour + 1))

    assert "flaky crash" not in client.get("/").content.decode()


def test_importers_map_a_tools_failures_to_failed_results():
    hyperfine = json.dumps({"results": [
        {"command": "ok", "times": [0.1, 0.11], "exit_codes": [0, 0]},
        {"command": "broken", "times": [0.001, 0.001], "exit_codes": [2, 2]},
        {"command": "flaky", "times": [0.1, 0.1], "exit_codes": [0, 1]},
    ]})
    imported = import_document(format_name="hyperfine", content=hyperfine,
                               overrides=stated_overrides(project="p", machine="m", commit="c" * 40))

    by_name = {result["benchmark"]: result for result in imported["results"]}
    assert by_name["broken"]["failed"] is True and "exit status 2" in by_name["broken"]["error"]
    assert "samples" not in by_name["broken"]
    assert "failed" not in by_name["ok"] and "failed" not in by_name["flaky"]


def test_a_pull_request_that_breaks_a_benchmark_shows_it_in_its_review(client):
    post_results([measured("parse", 1.0), measured("render", 3.0)], night=0, commit="b" * 40)
    head = post_results([measured("parse", 1.0, seed=1), failed("render", error="KeyError: 'width'")], night=1,
                        kind="pr", commit="c" * 40, base_commit="b" * 40, pull_request=7)
    comparisons.compare_run(run_id=head.pk)

    page = client.get(f"/runs/{head.pk}/pr/").content.decode()
    assert "1 failed" in page and "KeyError: &#x27;width&#x27;" in page
    summary = client.get(f"/api/v1/runs/{head.pk}/pr-summary").json()
    assert summary["summary"]["failed"] == ["render (time)"]
    assert "**1 failed** (no number on the head, not compared): `render`." in summary["markdown"]
