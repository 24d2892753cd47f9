"""Every importer end to end: the real tool output (tests/data/README.md says how it was made) posted
through the API or the management command, stored, and checked against the tool's own reported means."""

import gzip
import json
from io import StringIO
from pathlib import Path

import pyperf
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from results.models import Result, Run

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data"
GOOGLE_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def pyperf_means(name: str) -> dict[tuple[str, str], float]:
    suite = pyperf.BenchmarkSuite.load(str(DATA / name))
    return {(bench.get_name(), "time"): bench.mean() for bench in suite.get_benchmarks()}


def pytest_benchmark_means(name: str) -> dict[tuple[str, str], float]:
    report = json.loads((DATA / name).read_text())
    return {(bench["fullname"], "time"): bench["stats"]["mean"] for bench in report["benchmarks"]}


def google_means(name: str) -> dict[tuple[str, str], float]:
    report = json.loads((DATA / name).read_text())
    return {
        (row["run_name"], metric): row[metric] * GOOGLE_UNITS[row["time_unit"]]
        for row in report["benchmarks"] if row.get("aggregate_name") == "mean"
        for metric in ("real_time", "cpu_time")
    }


def hyperfine_means(name: str) -> dict[tuple[str, str], float]:
    report = json.loads((DATA / name).read_text())
    return {(result["command"], "time"): result["mean"] for result in report["results"]}


CASES = [
    ("pyperf", "pyperf_single.json", pyperf_means),
    ("pyperf", "pyperf_suite.json", pyperf_means),
    ("pytest-benchmark", "pytest_benchmark_data.json", pytest_benchmark_means),
    ("pytest-benchmark", "pytest_benchmark_summary.json", pytest_benchmark_means),
    ("google-benchmark", "google_benchmark_repetitions.json", google_means),
    ("hyperfine", "hyperfine.json", hyperfine_means),
]


def stored_means(run_id: int) -> dict[tuple[str, str], float]:
    return {(r.metric.benchmark.name, r.metric.name): r.mean
            for r in Result.objects.filter(run_id=run_id).select_related("metric__benchmark")}


@pytest.mark.parametrize(("format_name", "file_name", "tool_means"), CASES)
def test_real_tool_output_posted_through_the_api_matches_the_tools_means(api, format_name, file_name, tool_means):
    response = api.post(
        f"/api/v1/runs/import?format={format_name}&project=Tools&machine=vm&commit=abc123&branch=main",
        data=(DATA / file_name).read_bytes(), content_type="application/octet-stream",
    )

    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.kind == "imported" and run.revision.commit == "abc123"
    expected = tool_means(file_name)
    results = {(r.metric.benchmark.name, r.metric.name): r
               for r in Result.objects.filter(run=run).select_related("metric__benchmark")}
    assert results.keys() == expected.keys()
    for key, tool_mean in expected.items():
        result = results[key]
        raw = result.samples_array()
        if raw is None:
            assert result.mean == pytest.approx(tool_mean, rel=1e-9)
            continue
        # Nothing is lost: the stored samples average to the tool's mean ...
        assert raw.mean() == pytest.approx(tool_mean, rel=1e-9)
        # ... and so does the summary (spec §2a: the variance of the mean of them all; levels: of their units).
        assert result.mean == pytest.approx(raw.mean(), rel=1e-12)


def test_a_multipart_upload_is_accepted(api):
    with open(DATA / "hyperfine.json", "rb") as upload:
        response = api.post("/api/v1/runs/import?format=hyperfine&project=Tools&machine=vm", {"file": upload})

    assert response.status_code == 201, response.content


def test_the_native_format_imports_as_is(api):
    document = {"project": {"name": "Native"}, "machine": {"name": "vm"}, "kind": "manual",
                "results": [{"benchmark": "b", "samples": [1.0, 2.0, 3.0]}]}

    response = api.post("/api/v1/runs/import?format=native", data=json.dumps(document),
                         content_type="application/json")

    assert response.status_code == 201
    assert Run.objects.get().kind == "manual"


@pytest.mark.parametrize(("query", "content", "status", "field"), [
    ("format=pyperf&project=P&machine=m", b"not json", 400, "file"),
    ("format=excel&project=P&machine=m", b"{}", 400, "file"),
    ("format=hyperfine&machine=m", (DATA / "hyperfine.json").read_bytes(), 422, "project"),
    ("format=hyperfine&project=P", (DATA / "hyperfine.json").read_bytes(), 422, "machine"),
])
def test_a_bad_import_is_refused_and_writes_nothing(api, query, content, status, field):
    response = api.post(f"/api/v1/runs/import?{query}", data=content, content_type="application/octet-stream")

    assert response.status_code == status, response.content
    assert response.json()["errors"][0]["field"] == field
    assert Run.objects.count() == 0


def test_imports_need_a_token(db):
    response = Client().post("/api/v1/runs/import?format=hyperfine&project=P&machine=m",
                             data=(DATA / "hyperfine.json").read_bytes(), content_type="application/octet-stream")

    assert response.status_code == 401
    assert Run.objects.count() == 0


def test_the_management_command_imports_a_file_once_per_run_key():
    arguments = [str(DATA / "pyperf_suite.json"), "--format", "pyperf", "--project", "Tools", "--machine", "vm",
                 "--run-key", "suite-1"]
    out = StringIO()
    call_command("import_results", *arguments, stdout=out)
    call_command("import_results", *arguments, stdout=out)

    assert "Imported run" in out.getvalue() and "Already imported run" in out.getvalue()
    assert Run.objects.count() == 1
    assert stored_means(Run.objects.get().pk) == pytest.approx(pyperf_means("pyperf_suite.json"), rel=1e-9)


@pytest.mark.parametrize(("arguments", "message"), [
    (["missing.json", "--format", "pyperf", "--project", "P", "--machine", "m"], "cannot read"),
    ([str(DATA / "hyperfine.json"), "--format", "pyperf", "--project", "P", "--machine", "m"], "pyperf"),
    ([str(DATA / "hyperfine.json"), "--format", "hyperfine", "--machine", "m"], "project"),
])
def test_the_management_command_explains_what_is_wrong(arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("import_results", *arguments, stdout=StringIO())
    assert Run.objects.count() == 0


def post_file(client: Client, query: str, content: bytes):
    return client.post(f"/api/v1/runs/import?{query}", data=content, content_type="application/octet-stream")


def test_an_import_reply_gives_the_api_address_and_the_runs_page(api):
    response = post_file(api, "format=hyperfine&project=Tools&machine=vm", (DATA / "hyperfine.json").read_bytes())

    assert response.status_code == 201, response.content
    run_id = response.json()["id"]
    assert response.json()["url"] == f"http://testserver/api/v1/runs/{run_id}"
    assert response.json()["page_url"] == f"http://testserver/runs/{run_id}/"
    assert api.get(response.json()["page_url"]).status_code == 200


def test_a_pull_request_run_is_imported_with_its_number_and_base_commit(api):
    response = post_file(api, "format=pytest-benchmark&project=Tools&machine=vm&kind=pr&commit=f00d&branch=fix"
                              "&pull_request=42&base_commit=beef", (DATA / "pytest_benchmark_data.json").read_bytes())

    assert response.status_code == 201, response.content
    run = Run.objects.select_related("revision").get(pk=response.json()["id"])
    assert (run.kind, run.revision.commit, run.revision.branch) == ("pr", "f00d", "fix")
    assert (run.revision.pull_request, run.revision.base_commit) == (42, "beef")
    assert api.get(f"/api/v1/runs/{run.pk}").json()["pull_request"] == 42


def test_the_management_command_imports_a_pull_request_run():
    call_command("import_results", str(DATA / "hyperfine.json"), "--format", "hyperfine", "--project", "Tools",
                 "--machine", "vm", "--kind", "pr", "--commit", "f00d", "--pull-request", "7", "--base-commit",
                 "beef", stdout=StringIO())

    revision = Run.objects.select_related("revision").get().revision
    assert (revision.commit, revision.pull_request, revision.base_commit) == ("f00d", 7, "beef")


@pytest.mark.parametrize(("query", "status", "field"), [
    ("pull_request=42", 422, "revision.commit"),
    ("base_commit=beef", 422, "revision.commit"),
    ("commit=f00d&base_commit=--upload-pack%3Dx", 422, "base_commit"),
    ("commit=f00d&pull_request=0", 422, "pull_request"),
])
def test_a_pull_request_part_without_a_commit_or_invalid_is_refused(api, query, status, field):
    response = post_file(api, f"format=hyperfine&project=Tools&machine=vm&kind=pr&{query}",
                         (DATA / "hyperfine.json").read_bytes())

    assert response.status_code == status, response.content
    assert [error["field"] for error in response.json()["errors"]] == [field]
    assert not Run.objects.exists()


def test_a_native_files_revision_is_completed_by_the_stated_pull_request(api):
    document = {"project": {"name": "Native"}, "machine": {"name": "vm"}, "kind": "pr",
                "revision": {"commit": "f00d", "branch": "fix", "author": "someone"},
                "results": [{"benchmark": "b", "samples": [1.0, 2.0, 3.0]}]}

    response = post_file(api, "format=native&pull_request=9&base_commit=beef", json.dumps(document).encode())

    assert response.status_code == 201, response.content
    revision = Run.objects.get().revision
    assert (revision.commit, revision.branch, revision.author, revision.pull_request, revision.base_commit) == (
        "f00d", "fix", "someone", 9, "beef")


def test_importing_the_same_file_again_answers_with_the_stored_run(api):
    content = (DATA / "pyperf_suite.json").read_bytes()
    query = "format=pyperf&project=Tools&machine=vm&commit=abc123"

    first = post_file(api, query, content)
    again = post_file(api, query, content)
    compressed = post_file(api, query, gzip.compress(content))

    assert (first.status_code, again.status_code, compressed.status_code) == (201, 200, 200)
    assert first.json()["id"] == again.json()["id"] == compressed.json()["id"]
    assert again.json()["created"] is False and again.json()["page_url"] == first.json()["page_url"]
    assert Run.objects.count() == 1


@pytest.mark.parametrize(("query", "file_name"), [
    ("format=pyperf&project=Tools&machine=vm&commit=abc124", "pyperf_suite.json"),
    ("format=pyperf&project=Tools&machine=vm2&commit=abc123", "pyperf_suite.json"),
    ("format=pyperf&project=Other&machine=vm&commit=abc123", "pyperf_suite.json"),
    ("format=pyperf&project=Tools&machine=vm&commit=abc123&kind=nightly", "pyperf_suite.json"),
    ("format=pyperf&project=Tools&machine=vm&commit=abc123", "pyperf_single.json"),
])
def test_another_file_or_another_run_of_the_same_file_is_a_new_run(api, query, file_name):
    stored = post_file(api, "format=pyperf&project=Tools&machine=vm&commit=abc123",
                       (DATA / "pyperf_suite.json").read_bytes())

    response = post_file(api, query, (DATA / file_name).read_bytes())

    assert response.status_code == 201, response.content
    assert response.json()["id"] != stored.json()["id"] and Run.objects.count() == 2


def test_a_stated_run_key_still_names_the_run(api):
    content = (DATA / "hyperfine.json").read_bytes()

    first = post_file(api, "format=hyperfine&project=Tools&machine=vm&run_key=night-1", content)
    second = post_file(api, "format=hyperfine&project=Tools&machine=vm&run_key=night-2", content)

    assert (first.status_code, second.status_code) == (201, 201)
    assert sorted(Run.objects.values_list("run_key", flat=True)) == ["night-1", "night-2"]


def test_the_management_command_imports_a_file_once_without_a_run_key():
    arguments = [str(DATA / "hyperfine.json"), "--format", "hyperfine", "--project", "Tools", "--machine", "vm"]
    out = StringIO()
    call_command("import_results", *arguments, stdout=out)
    call_command("import_results", *arguments, stdout=out)
    call_command("import_results", *arguments, "--commit", "abc123", stdout=out)

    assert out.getvalue().count("Already imported run") == 1 and out.getvalue().count("Imported run") == 2
    assert Run.objects.count() == 2


def test_a_file_posted_as_another_format_is_refused_naming_the_format_it_looks_like(api):
    response = post_file(api, "format=pyperf&project=Tools&machine=vm",
                         (DATA / "pytest_benchmark_data.json").read_bytes())

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("this looks like a pytest-benchmark file: post it with format=pytest-benchmark (read as "
                             "pyperf: file format version '5.3.1' is not supported")
    assert response.json()["errors"] == [{"field": "file", "message": detail}]
    assert not Run.objects.exists()


def test_the_management_command_names_the_format_a_file_looks_like():
    with pytest.raises(CommandError, match=r"this looks like a hyperfine file: import it with --format hyperfine "):
        call_command("import_results", str(DATA / "hyperfine.json"), "--format", "google-benchmark", "--project",
                     "P", "--machine", "m", stdout=StringIO())
    assert not Run.objects.exists()
