"""The ingestion and read API: atomic writes, idempotency, authentication, clear errors."""

import json

import numpy as np
import pytest
from django.test import Client
from scipy import stats as scipy_stats

from results import comparisons
from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run
from tests.expected import lugsail_variance_of_mean
from tests.factories import posted_run, run_document

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/runs"


def post(client: Client, document: dict, path: str = RUNS):
    return client.post(path, data=json.dumps(document), content_type="application/json")


def stored_rows() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Project, Machine, Revision, Benchmark, Metric, Run,
                                                                 Result)}


def test_a_run_is_stored_with_its_results(api):
    response = post(api, run_document(run_key="n1"))

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["created"] is True and body["results"] == 2
    run = Run.objects.get(pk=body["id"])
    assert (run.project.slug, run.machine.name, run.kind, run.revision.branch) == ("demo", "bench-1", "nightly", "main")
    assert run.created_by.username.startswith("user")


def test_raw_samples_are_summarised_and_kept_with_their_shape(api):
    samples = np.random.default_rng(3).normal(800, 5, (4, 10))
    document = run_document(results=[{"benchmark": "sha256", "metric": "throughput", "unit": "MB/s",
                                      "direction": "higher_is_better", "samples": samples.tolist()}])

    post(api, document)

    result = Result.objects.get()
    unit_means = samples.mean(axis=1)
    # Top-level units are the subsessions (spec §6): checked against numpy and scipy's t interval.
    assert result.mean == pytest.approx(samples.mean(), rel=1e-12)
    assert (result.subsession_size, result.n, result.sample_count) == (10, 4, 40)
    assert result.variance == pytest.approx(np.var(unit_means, ddof=1), rel=1e-12)
    low, high = scipy_stats.t.interval(0.95, 3, loc=unit_means.mean(), scale=scipy_stats.sem(unit_means))
    assert (result.ci_low, result.ci_high) == (pytest.approx(low), pytest.approx(high))
    np.testing.assert_array_equal(result.samples_array(), samples)
    assert result.metric.direction == "higher_is_better"


def test_one_level_samples_store_the_variance_of_their_mean_with_pilots_subsessions_beside_it(api):
    rng = np.random.default_rng(7)
    # AR(1) with rho = 0.7: adjacent samples are correlated, so subsessions must merge them.
    noise = rng.normal(0, 1, 2000)
    x = np.empty_like(noise)
    x[0] = noise[0]
    for i in range(1, len(x)):
        x[i] = 0.7 * x[i - 1] + noise[i]
    document = run_document(results=[{"benchmark": "ar1", "samples": (100 + x).tolist()}])

    post(api, document)

    result = Result.objects.get()
    variance_of_mean, df = lugsail_variance_of_mean(100 + x)
    assert (result.variance_method, result.independent, result.n) == ("lugsail", True, df + 1)
    assert result.variance / result.n == pytest.approx(variance_of_mean, rel=1e-9)
    low, high = scipy_stats.t.interval(0.95, df, loc=(100 + x).mean(), scale=np.sqrt(variance_of_mean))
    assert (result.ci_low, result.ci_high) == (pytest.approx(low), pytest.approx(high))
    # Pilot's subsession analysis, beside it: q > 1 merges the correlated samples until |r1| <= 0.1.
    assert result.subsession_size > 1 and abs(result.autocorrelation) <= 0.1
    assert result.subsessions * result.subsession_size <= 2000 == result.sample_count


def test_a_summary_without_samples_is_stored_as_given(api):
    document = run_document(results=[{"benchmark": "old", "summary": {"mean": 2.0, "subsession_size": 4,
                                                                       "variance": 0.09, "n": 25}}])

    post(api, document)

    result = Result.objects.get()
    assert (result.mean, result.subsession_size, result.variance, result.n, result.samples) == (2.0, 4, 0.09, 25, None)
    half_width = scipy_stats.t.ppf(0.975, 24) * np.sqrt(0.09 / 25)
    assert result.ci_high - result.mean == pytest.approx(half_width)


def test_a_summary_given_with_samples_is_stored_as_given_and_the_samples_kept(api):
    samples = [1.0, 1.2, 0.9, 1.1, 1.0, 1.05]
    document = run_document(results=[{"benchmark": "wps", "samples": samples, "warmup_removed": 3, "converged": True,
                                      "summary": {"mean": 1.04, "subsession_size": 2, "variance": 0.01, "n": 3}}])

    post(api, document)

    result = Result.objects.get()
    assert (result.mean, result.subsession_size, result.variance, result.n) == (1.04, 2, 0.01, 3)
    assert (result.warmup_removed, result.converged, result.sample_count) == (3, True, 6)
    assert result.samples_array().tolist() == samples


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["results"][1].update(samples=[1.0, "fast"]), "results[1].samples"),
        (lambda d: d["results"][1].update(samples=[[1.0, 2.0], [3.0]]), "results[1].samples"),
        (lambda d: d["results"][1].update(confidence_level=1.5), "results[1].confidence_level"),
        (lambda d: d["results"][1].update(direction="sideways"), "results[1].direction"),
        (lambda d: d["results"][1].update(summary={"mean": 1, "subsession_size": 1, "variance": -1, "n": 3},
                                          samples=None), "results[1].summary.variance"),
        (lambda d: d["results"][1].pop("samples"), "results[1]"),
        (lambda d: d["results"].append(dict(d["results"][0])), "results[2]"),
        (lambda d: d.update(kind="weekly"), "kind"),
        (lambda d: d.pop("machine"), "machine"),
        (lambda d: d.update(results=[]), "results"),
    ],
)
def test_an_invalid_part_rejects_the_whole_run_and_names_the_field(api, change, field):
    document = run_document()
    change(document)
    before = stored_rows()

    response = post(api, document)

    assert 400 <= response.status_code < 500
    body = response.json()
    assert any(error["field"] == field for error in body["errors"]), body
    assert field in body["detail"]
    assert stored_rows() == before


def test_non_finite_samples_are_rejected(api):
    # JSON has no NaN, but Python's encoder writes it; the API must not store it.
    document = run_document()
    document["results"][0]["samples"][5] = float("nan")
    before = stored_rows()

    response = api.post(RUNS, data=json.dumps(document), content_type="application/json")

    assert response.status_code in (400, 422)
    assert "results[0].samples" in response.json()["detail"]
    assert stored_rows() == before


def test_a_metric_whose_unit_contradicts_the_stored_one_rejects_the_run(api):
    post(api, run_document(commit="1" * 40))
    before = stored_rows()
    document = run_document(commit="2" * 40)
    document["results"][0]["unit"] = "ms"

    response = post(api, document)

    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "results[0].unit"
    assert stored_rows() == before


def test_a_metric_whose_direction_contradicts_the_stored_one_rejects_the_run(api):
    post(api, run_document(commit="1" * 40))
    document = run_document(commit="2" * 40)
    document["results"][1]["direction"] = "lower_is_better"

    response = post(api, document)

    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "results[1].direction"


def test_reposting_with_the_same_run_key_does_not_duplicate(api):
    first = post(api, run_document(run_key="nightly-2026-11-20"))
    again = post(api, run_document(run_key="nightly-2026-11-20"))

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["created"] is False
    run_id = first.json()["id"]
    for reply in (first.json(), again.json()):
        assert reply["url"] == f"http://testserver/api/v1/runs/{run_id}"
        assert reply["page_url"] == f"http://testserver/runs/{run_id}/"
    assert Run.objects.count() == 1 and Result.objects.count() == 2


def test_reusing_a_run_key_for_different_content_is_a_conflict(api):
    post(api, run_document(run_key="k"))

    response = post(api, run_document(run_key="k", seed=1))

    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "run_key"
    assert Run.objects.count() == 1


def test_existing_projects_benchmarks_and_metrics_are_reused(api):
    post(api, run_document(commit="1" * 40))
    post(api, run_document(commit="2" * 40))

    assert (Project.objects.count(), Benchmark.objects.count(), Metric.objects.count(), Run.objects.count()) == (
        1, 2, 2, 2)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer pw_not-a-token"}, {"Authorization": "Basic eDp5"}])
def test_writes_without_a_valid_token_are_refused_and_write_nothing(db, headers):
    before = stored_rows()

    response = post(Client(headers=headers), run_document())

    assert response.status_code == 401
    assert stored_rows() == before


def test_a_revoked_token_is_refused(api, user):
    user.api_tokens.update(revoked=True)

    assert post(api, run_document()).status_code == 401


def test_runs_are_listed_with_filters(api):
    post(api, run_document(commit="1" * 40, branch="main", kind="nightly"))
    post(api, run_document(commit="2" * 40, branch="feature", kind="pr", machine="bench-2"))

    def ids(query: str) -> list:
        return [run["commit"] for run in api.get(f"{RUNS}?{query}").json()["items"]]

    assert ids("") == ["2" * 40, "1" * 40]
    assert ids("branch=feature") == ["2" * 40]
    assert ids("kind=nightly") == ["1" * 40]
    assert ids("machine=bench-2&kind=pr") == ["2" * 40]
    assert ids("project=nope") == []


def test_runs_are_found_by_the_start_of_their_commit(api):
    post(api, run_document(commit="abcd1234" + "0" * 32))
    post(api, run_document(commit="abce5678" + "0" * 32))

    def commits(prefix: str) -> list:
        response = api.get(f"{RUNS}?commit={prefix}")
        assert response.status_code == 200, response.content
        return [run["commit"][:8] for run in response.json()["items"]]

    assert commits("abcd") == ["abcd1234"]
    assert commits("ABCD1234") == ["abcd1234"]
    assert commits("abce5") == ["abce5678"]
    assert commits("abcf") == []


@pytest.mark.parametrize("prefix", ["abc", "abcx", "main", "a" * 65])
def test_a_commit_filter_that_is_not_the_start_of_a_hash_is_refused(api, prefix):
    response = api.get(f"{RUNS}?commit={prefix}")

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["commit"]


def test_one_run_is_read_with_its_results(api):
    run_id = post(api, run_document()).json()["id"]

    body = api.get(f"{RUNS}/{run_id}").json()

    assert body["id"] == run_id
    assert {(r["benchmark"], r["metric"]) for r in body["results"]} == {("sort", "time"), ("sha256", "throughput")}
    assert api.get(f"{RUNS}/999999").status_code == 404


def test_a_runs_results_name_their_metric_and_benchmark_so_their_series_can_be_read(api):
    run_id = post(api, run_document()).json()["id"]

    results = api.get(f"{RUNS}/{run_id}").json()["results"]

    for result in results:
        metric = Metric.objects.get(pk=result["metric_id"])
        assert (metric.benchmark_id, metric.benchmark.name, metric.name) == (
            result["benchmark_id"], result["benchmark"], result["metric"])
        series = api.get(f"/api/v1/metrics/{result['metric_id']}/series")
        assert series.status_code == 200
        assert series.json()["metric_id"] == result["metric_id"]
        assert [point["run_id"] for point in series.json()["points"]] == [run_id]


def test_projects_benchmarks_metrics_and_machines_are_listed_with_filters(api):
    post(api, run_document(project="Alpha", machine="bench-1"))
    post(api, run_document(project="Beta", machine="bench-2", results=[
        {"benchmark": "parse", "metric": "time", "unit": "s", "samples": [1.0, 1.1, 0.9]},
        {"benchmark": "parse", "metric": "memory", "unit": "B", "samples": [10.0, 11.0, 9.0]}]))
    parse = Benchmark.objects.get(name="parse")

    def listed(path: str) -> list[tuple]:
        response = api.get(f"/api/v1/{path}")
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["count"] == len(body["items"])
        return body["items"]

    assert [(p["name"], p["slug"]) for p in listed("projects")] == [("Alpha", "alpha"), ("Beta", "beta")]
    assert [(m["name"], m["cores"]) for m in listed("machines")] == [("bench-1", 2), ("bench-2", 2)]
    assert [(b["project"], b["name"]) for b in listed("benchmarks")] == [
        ("alpha", "sha256"), ("alpha", "sort"), ("beta", "parse")]
    assert [(b["id"], b["project"]) for b in listed("benchmarks?project=beta")] == [(parse.pk, "beta")]
    assert listed("benchmarks?project=nope") == []
    assert [(m["project"], m["benchmark"], m["name"], m["unit"]) for m in listed("metrics?project=alpha")] == [
        ("alpha", "sha256", "throughput", "MB/s"), ("alpha", "sort", "time", "s")]
    by_benchmark = listed(f"metrics?benchmark_id={parse.pk}")
    assert [(m["name"], m["benchmark_id"]) for m in by_benchmark] == [("memory", parse.pk), ("time", parse.pk)]
    assert {m["id"] for m in by_benchmark} == set(Metric.objects.filter(benchmark=parse).values_list("pk", flat=True))
    assert listed(f"metrics?benchmark_id={parse.pk}&project=alpha") == []


def test_the_lists_are_paginated_by_limit_and_offset(api):
    for name in ("a", "b", "c"):
        post(api, run_document(project=name, machine=f"m-{name}"))

    for path in ("projects", "machines", "benchmarks", "metrics", "runs"):
        everything = api.get(f"/api/v1/{path}").json()
        page = api.get(f"/api/v1/{path}?limit=2&offset=1").json()
        assert page["count"] == everything["count"] >= 3
        assert page["items"] == everything["items"][1:3]
        assert api.get(f"/api/v1/{path}?limit=0").status_code == 422


@pytest.mark.parametrize("query", ["benchmark_id=x", "benchmark_id=0", f"benchmark_id={2**63}"])
def test_a_bad_metric_filter_is_refused(api, query):
    response = api.get(f"/api/v1/metrics?{query}")

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["benchmark_id"]


def test_a_runs_comparisons_are_paginated_worst_first_and_name_their_metric(api):
    for night in range(10):
        posted_run(night, {"sort": 1.0, "hash": 1.0, "zip": 1.0}, sd=0.002)
    run = posted_run(10, {"sort": 1.2, "hash": 1.0, "zip": 1.0}, sd=0.002)
    comparisons.compare_run(run_id=run.pk)
    path = f"{RUNS}/{run.pk}/comparisons?method=history"

    everything = api.get(path).json()
    page = api.get(f"{path}&limit=1&offset=1").json()

    assert everything["count"] == page["count"] == 3
    assert everything["items"][0]["benchmark"] == "sort" and everything["items"][0]["verdict"] == "regression"
    assert page["items"] == everything["items"][1:2]
    for row in everything["items"]:
        assert Metric.objects.get(pk=row["metric_id"]).benchmark.name == row["benchmark"]


def test_a_metric_series_is_read_in_time_order(api):
    for night in range(3):
        document = run_document(commit=f"{night:040d}", seed=night)
        document["started_at"] = f"2026-11-{10 + night}T02:00:00Z"
        post(api, document)
    metric = Metric.objects.get(name="time")

    body = api.get(f"/api/v1/metrics/{metric.pk}/series").json()

    assert [point["commit"] for point in body["points"]] == [f"{night:040d}" for night in range(3)]
    assert body["unit"] == "s"


def test_reads_follow_the_public_read_setting(db, settings, api):
    post(api, run_document())
    settings.PILOTWEB_PUBLIC_READ = False
    assert Client().get(RUNS).status_code == 401
    settings.PILOTWEB_PUBLIC_READ = True
    assert Client().get(RUNS).status_code == 200


def test_the_openapi_schema_is_served(db):
    schema = Client().get("/api/v1/openapi.json").json()

    assert "/api/v1/runs" in schema["paths"] and "/api/v1/runs/import" in schema["paths"]
    assert {"/api/v1/projects", "/api/v1/benchmarks", "/api/v1/metrics", "/api/v1/machines"} <= schema["paths"].keys()
