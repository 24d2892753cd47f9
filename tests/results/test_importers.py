"""The result importers, on real files made by running each tool (see tests/data/README.md).

Reference values are the tool's own: pyperf's ``Benchmark.mean()``/``stdev()`` through its
API, pytest-benchmark's ``stats.mean``/``stats.stddev``, Google Benchmark's ``_mean`` and
``_stddev`` aggregate rows, hyperfine's ``mean``/``stddev``, all read from the same file.
No database and no Django needed.
"""

import copy
import gzip
import json
import statistics
from datetime import datetime
from pathlib import Path

import pyperf
import pytest

from results.ingest import FORMATS, import_document, sniff, stated_overrides
from results.ingest.base import FormatMismatch, ImportFormatError
from results.ingest.google_benchmark import parse as parse_google_benchmark
from results.ingest.hyperfine import parse as parse_hyperfine
from results.ingest.pyperf import parse as parse_pyperf
from results.ingest.pytest_benchmark import parse as parse_pytest_benchmark
from results.schemas import RunIn


DATA = Path(__file__).resolve().parent.parent / "data"
REL = 1e-9  # the parsers only rescale the tool's numbers; anything looser would hide a bug


def read(name: str) -> bytes:
    return (DATA / name).read_bytes()


def load(name: str) -> dict:
    return json.loads(read(name))


def dumps(document: dict) -> bytes:
    return json.dumps(document).encode()


def flat(samples: list) -> list[float]:
    return [value for row in samples for value in row]


def by_benchmark(document: dict, metric: str = "time") -> dict[str, dict]:
    return {result["benchmark"]: result for result in document["results"] if result["metric"] == metric}


def assert_native_shape(document: dict) -> None:
    """What every importer promises: the partial native document, JSON-serialisable."""
    assert json.loads(json.dumps(document)) == document
    assert isinstance(document["source"], str) and document["source"]
    assert isinstance(document["environment"], dict)
    assert set(document.get("machine", {})) <= {"hostname", "cpu_model", "cores", "os"}
    for key in ("started_at", "finished_at"):
        if key in document:
            assert datetime.fromisoformat(document[key]).tzinfo is not None
    assert document["results"]
    for result in document["results"]:
        assert result["unit"] == "s"
        assert result["direction"] == "lower_is_better"
        assert ("samples" in result) != ("summary" in result)
        assert isinstance(result["metadata"], dict)


# --- pyperf ---------------------------------------------------------------------------------


def test_pyperf_single_benchmark_matches_pyperf_own_statistics():
    reference = pyperf.BenchmarkSuite.load(str(DATA / "pyperf_single.json")).get_benchmarks()[0]

    document = parse_pyperf(read("pyperf_single.json"))

    assert_native_shape(document)
    assert document["source"] == "pyperf 2.10.0"
    [result] = document["results"]
    assert result["benchmark"] == reference.get_name() == "sum_range"
    assert result["metric"] == "time"
    # --processes 4 --values 3 --warmups 1 --loops 2000: 4 processes x 3 values, warm-ups excluded
    assert [len(run) for run in result["samples"]] == [3, 3, 3, 3]
    assert result["samples"] == [list(run.values) for run in reference.get_runs()]
    assert result["warmup_removed"] == 4
    assert statistics.mean(flat(result["samples"])) == pytest.approx(reference.mean(), rel=REL)
    assert statistics.stdev(flat(result["samples"])) == pytest.approx(reference.stdev(), rel=REL)
    assert result["metadata"]["loops"] == reference.get_loops() == 2000
    assert result["metadata"]["calibration_runs"] == 0
    assert result["metadata"]["dropped_runs"] == 0


def test_pyperf_single_benchmark_environment_and_machine_come_from_suite_metadata():
    metadata = load("pyperf_single.json")["metadata"]

    document = parse_pyperf(read("pyperf_single.json"))

    assert document["machine"] == {
        "hostname": metadata["hostname"],
        "cpu_model": metadata["cpu_model_name"],
        "cores": metadata["cpu_count"],
        "os": metadata["platform"],
    }
    assert document["environment"]["python_version"] == metadata["python_version"]
    assert "python_config_args" not in document["environment"]  # large blob, left out
    assert "started_at" not in document  # pyperf dates are local time without a zone
    first_date = min(run["metadata"]["date"] for run in load("pyperf_single.json")["benchmarks"][0]["runs"])
    assert document["environment"]["date"] == first_date


def test_pyperf_suite_skips_calibration_runs_and_matches_each_benchmark():
    suite = pyperf.BenchmarkSuite.load(str(DATA / "pyperf_suite.json"))

    document = parse_pyperf(read("pyperf_suite.json"))

    assert_native_shape(document)
    results = by_benchmark(document)
    assert list(results) == suite.get_benchmark_names() == ["sum_range", "sorted_list"]
    for reference in suite.get_benchmarks():
        result = results[reference.get_name()]
        # automatic loops: the first run of each benchmark calibrates (warm-ups, no values)
        assert reference.get_runs()[0].values == ()
        assert result["metadata"]["calibration_runs"] == 1
        assert [len(run) for run in result["samples"]] == [3, 3, 3, 3]
        assert result["warmup_removed"] == 4
        assert result["metadata"]["loops"] == reference.get_loops()
        assert statistics.mean(flat(result["samples"])) == pytest.approx(reference.mean(), rel=REL)
        assert statistics.stdev(flat(result["samples"])) == pytest.approx(reference.stdev(), rel=REL)


def test_pyperf_unbalanced_processes_keep_the_modal_count_and_say_how_many_were_dropped():
    reference = pyperf.BenchmarkSuite.load(str(DATA / "pyperf_unbalanced.json")).get_benchmarks()[0]
    # two appended invocations: 3 processes x 3 values, then 2 processes x 2 values
    assert [len(run.values) for run in reference.get_runs()] == [3, 3, 3, 2, 2]

    [result] = parse_pyperf(read("pyperf_unbalanced.json"))["results"]

    kept = [list(run.values) for run in reference.get_runs() if len(run.values) == 3]
    assert result["samples"] == kept
    assert result["metadata"]["dropped_runs"] == 2
    assert result["metadata"]["runs"] == 3
    assert result["warmup_removed"] == 3
    # pyperf averages all 13 values; the import averages the 9 it keeps
    assert statistics.mean(flat(result["samples"])) == pytest.approx(statistics.mean(flat(kept)), rel=REL)
    assert len(reference.get_values()) == 13


def test_pyperf_accepts_text_and_gzip_compressed_content():
    content = read("pyperf_suite.json")

    expected = parse_pyperf(content)

    assert parse_pyperf(content.decode()) == expected
    assert parse_pyperf(gzip.compress(content)) == expected


def pyperf_without_values() -> bytes:
    suite = load("pyperf_single.json")
    for run in suite["benchmarks"][0]["runs"]:
        del run["values"]
    return dumps(suite)


def pyperf_without_name() -> bytes:
    suite = load("pyperf_single.json")
    del suite["metadata"]["name"]
    return dumps(suite)


def pyperf_with_text_value() -> bytes:
    suite = load("pyperf_single.json")
    suite["benchmarks"][0]["runs"][1]["values"][0] = "1.5e-06"
    return dumps(suite)


def pyperf_with_nan_value() -> bytes:
    suite = load("pyperf_single.json")
    suite["benchmarks"][0]["runs"][0]["values"][0] = float("nan")  # json.dumps writes NaN, json.loads reads it
    return dumps(suite)


def pyperf_with_version(version: str) -> bytes:
    suite = load("pyperf_single.json")
    suite["version"] = version
    return dumps(suite)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"sum_range: Mean +- std dev: 1.45 us", r"pyperf: the file is not valid JSON", id="not-json"),
        pytest.param(b"\x1f\x8b\x08\x00broken", r"pyperf: the gzip-compressed file is damaged", id="bad-gzip"),
        pytest.param(b"[1, 2]", r"must be a JSON object with a 'benchmarks' list", id="wrong-shape"),
        pytest.param(b'{"version": "1.0"}', r"must be a JSON object with a 'benchmarks' list", id="no-benchmarks"),
        pytest.param(b'{"version": "1.0", "benchmarks": []}', r"holds no benchmark", id="empty"),
        pytest.param(pyperf_with_version("6"), r"format version '6' is not supported", id="old-version"),
        pytest.param(pyperf_without_name(), r"benchmark #0 has no 'name' metadata", id="missing-name"),
        pytest.param(pyperf_without_values(), r"'sum_range' has no values \(only calibration runs\)", id="no-values"),
        pytest.param(pyperf_with_text_value(), r"run #1 'values' must be a list of finite numbers", id="text-value"),
        pytest.param(pyperf_with_nan_value(), r"run #0 'values' must be a list of finite numbers", id="nan-value"),
    ],
)
def test_pyperf_rejects_bad_input_naming_the_problem(content, message):
    with pytest.raises(ImportFormatError, match=message):
        parse_pyperf(content)


# --- pytest-benchmark -----------------------------------------------------------------------


def test_pytest_benchmark_with_data_imports_each_round_and_matches_its_stats():
    report = load("pytest_benchmark_data.json")

    document = parse_pytest_benchmark(read("pytest_benchmark_data.json"))

    assert_native_shape(document)
    assert document["source"] == f"pytest-benchmark {report['version']}" == "pytest-benchmark 5.3.1"
    results = by_benchmark(document)
    assert list(results) == [benchmark["fullname"] for benchmark in report["benchmarks"]]
    assert len(results) == 4
    for benchmark in report["benchmarks"]:
        stats = benchmark["stats"]
        samples = results[benchmark["fullname"]]["samples"]
        assert samples == stats["data"]
        assert len(samples) == stats["rounds"]
        assert statistics.mean(samples) == pytest.approx(stats["mean"], rel=REL)
        assert statistics.stdev(samples) == pytest.approx(stats["stddev"], rel=REL)


def test_pytest_benchmark_metadata_keeps_group_params_and_pedantic_iterations():
    results = by_benchmark(parse_pytest_benchmark(read("pytest_benchmark_data.json")))

    sorted_small = results["bench_sample.py::test_sorted[20000]"]["metadata"]
    assert sorted_small["group"] == "sorting"
    assert sorted_small["params"] == {"size": 20000}
    pedantic = results["bench_sample.py::test_sleep_pedantic"]
    # pedantic(rounds=6, iterations=2, warmup_rounds=1): warm-up rounds are not in stats.data
    assert len(pedantic["samples"]) == 6
    assert pedantic["metadata"]["iterations"] == 2
    assert pedantic["metadata"]["extra_info"] == {"note": "fixed rounds"}


def test_pytest_benchmark_environment_machine_and_finish_time():
    report = load("pytest_benchmark_data.json")

    document = parse_pytest_benchmark(read("pytest_benchmark_data.json"))

    # 'datetime' is written when the session ends
    assert document["finished_at"] == report["datetime"]
    assert "started_at" not in document
    cpu = report["machine_info"]["cpu"]
    assert document["machine"] == {
        "hostname": report["machine_info"]["node"],
        "cpu_model": cpu["brand_raw"],
        "cores": cpu["count"],
        "os": f"{report['machine_info']['system']} {report['machine_info']['release']}",
    }
    assert "cpu_flags" not in document["environment"]
    assert document["environment"]["commit"]["id"] == report["commit_info"]["id"]


def test_pytest_benchmark_without_data_gives_a_summary_from_its_stats():
    report = load("pytest_benchmark_summary.json")
    assert all("data" not in benchmark["stats"] for benchmark in report["benchmarks"])

    document = parse_pytest_benchmark(read("pytest_benchmark_summary.json"))

    assert_native_shape(document)
    results = by_benchmark(document)
    for benchmark in report["benchmarks"]:
        stats = benchmark["stats"]
        result = results[benchmark["fullname"]]
        assert "samples" not in result
        assert result["summary"] == {
            "mean": stats["mean"],
            "subsession_size": 1,
            "variance": pytest.approx(stats["stddev"] ** 2, rel=REL),
            "n": stats["rounds"],
        }


def test_pytest_benchmark_summary_and_data_files_of_one_session_agree():
    with_data = by_benchmark(parse_pytest_benchmark(read("pytest_benchmark_data.json")))

    summary_only = by_benchmark(parse_pytest_benchmark(read("pytest_benchmark_summary.json")))

    for name, result in with_data.items():
        summary = summary_only[name]["summary"]
        assert summary["mean"] == pytest.approx(statistics.mean(result["samples"]), rel=REL)
        assert summary["variance"] == pytest.approx(statistics.variance(result["samples"]), rel=REL)
        assert summary["n"] == len(result["samples"])


def test_pytest_benchmark_reads_a_zone_less_datetime_as_utc():
    report = load("pytest_benchmark_summary.json")
    report["datetime"] = "2026-11-21T10:31:11.869654"  # as datetime.utcnow().isoformat() wrote it

    document = parse_pytest_benchmark(dumps(report))

    assert document["finished_at"] == "2026-11-21T10:31:11.869654+00:00"


def drop_stats(benchmark: dict, *keys: str, **changes) -> None:
    for key in keys:
        del benchmark["stats"][key]
    benchmark["stats"].update(changes)


def pytest_benchmark_edited(edit) -> bytes:
    report = load("pytest_benchmark_data.json")
    edit(report["benchmarks"][0])
    return dumps(report)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"<html>", r"pytest-benchmark: the file is not valid JSON", id="not-json"),
        pytest.param(b'{"results": []}', r"must be a JSON object with a 'benchmarks' list", id="wrong-shape"),
        pytest.param(b'{"benchmarks": []}', r"holds no benchmark", id="empty"),
        pytest.param(
            pytest_benchmark_edited(lambda benchmark: (benchmark.pop("fullname"), benchmark.pop("name"))),
            r"benchmark #0 has no 'fullname'",
            id="missing-fullname",
        ),
        pytest.param(
            pytest_benchmark_edited(lambda benchmark: benchmark.pop("stats")),
            r"'bench_sample.py::test_sum_range' has no 'stats' object",
            id="missing-stats",
        ),
        pytest.param(
            pytest_benchmark_edited(lambda benchmark: benchmark["stats"].update(data=[])),
            r"'bench_sample.py::test_sum_range' has no values \('stats.data' is empty\)",
            id="no-values",
        ),
        pytest.param(
            pytest_benchmark_edited(lambda benchmark: benchmark["stats"].update(data=[0.1, None])),
            r"'stats.data' must be a list of finite numbers",
            id="null-value",
        ),
        pytest.param(
            pytest_benchmark_edited(lambda benchmark: drop_stats(benchmark, "data", "stddev")),
            r"neither 'stats.data' nor the summary key 'stats.stddev'",
            id="summary-missing-stddev",
        ),
        pytest.param(
            pytest_benchmark_edited(lambda benchmark: drop_stats(benchmark, "data", rounds=0)),
            r"has no values \('stats.rounds' is 0\)",
            id="summary-zero-rounds",
        ),
    ],
)
def test_pytest_benchmark_rejects_bad_input_naming_the_problem(content, message):
    with pytest.raises(ImportFormatError, match=message):
        parse_pytest_benchmark(content)


def test_pytest_benchmark_rejects_a_bad_datetime():
    report = load("pytest_benchmark_summary.json")
    report["datetime"] = "yesterday"

    with pytest.raises(ImportFormatError, match=r"'datetime' must be an ISO-8601 timestamp, not 'yesterday'"):
        parse_pytest_benchmark(dumps(report))


# --- Google Benchmark -----------------------------------------------------------------------

SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def aggregate_rows(report: dict, aggregate: str) -> dict[str, dict]:
    return {
        row["run_name"]: row
        for row in report["benchmarks"]
        if row["run_type"] == "aggregate" and row["aggregate_name"] == aggregate
    }


def test_google_benchmark_repetitions_match_its_mean_and_stddev_aggregates():
    report = load("google_benchmark_repetitions.json")
    means, stddevs = aggregate_rows(report, "mean"), aggregate_rows(report, "stddev")

    document = parse_google_benchmark(read("google_benchmark_repetitions.json"))

    assert_native_shape(document)
    assert [(result["benchmark"], result["metric"]) for result in document["results"]] == [
        ("BM_StringCopy/4096", "real_time"),
        ("BM_StringCopy/4096", "cpu_time"),
        ("BM_SortVector/10000", "real_time"),
        ("BM_SortVector/10000", "cpu_time"),
    ]
    for result in document["results"]:
        mean, stddev = means[result["benchmark"]], stddevs[result["benchmark"]]
        scale = SECONDS[mean["time_unit"]]
        metric = result["metric"]
        assert len(result["samples"]) == mean["repetitions"] == 5
        assert statistics.mean(result["samples"]) == pytest.approx(mean[metric] * scale, rel=REL)
        assert statistics.stdev(result["samples"]) == pytest.approx(stddev[metric] * scale, rel=REL)


def test_google_benchmark_converts_each_time_unit_to_seconds():
    report = load("google_benchmark_repetitions.json")
    iteration_rows = [row for row in report["benchmarks"] if row["run_type"] == "iteration"]
    assert {row["time_unit"] for row in iteration_rows} == {"ns", "us"}

    document = parse_google_benchmark(read("google_benchmark_repetitions.json"))

    for result in document["results"]:
        rows = [row for row in iteration_rows if row["run_name"] == result["benchmark"]]
        expected = [row[result["metric"]] * SECONDS[row["time_unit"]] for row in rows]
        assert result["samples"] == pytest.approx(expected, rel=REL)
        assert result["metadata"]["time_unit"] == rows[0]["time_unit"]
        assert result["metadata"]["iterations"] == rows[0]["iterations"]


def test_google_benchmark_keeps_user_counters_context_and_start_time():
    report = load("google_benchmark_repetitions.json")

    document = parse_google_benchmark(read("google_benchmark_repetitions.json"))

    results = by_benchmark(document, metric="cpu_time")
    assert results["BM_SortVector/10000"]["metadata"]["counters"] == {"elements": [10000.0] * 5}
    assert len(results["BM_StringCopy/4096"]["metadata"]["counters"]["bytes_per_second"]) == 5
    assert document["started_at"] == datetime.fromisoformat(report["context"]["date"]).isoformat()
    assert document["machine"] == {"hostname": report["context"]["host_name"], "cores": report["context"]["num_cpus"]}
    assert document["environment"]["library_build_type"] == "debug"  # Debian's libbenchmark 1.7.1
    assert document["source"] == "google-benchmark"  # 1.7.1 does not write its version


def test_google_benchmark_without_repetitions_gives_one_sample_per_metric():
    report = load("google_benchmark_single.json")

    document = parse_google_benchmark(read("google_benchmark_single.json"))

    assert_native_shape(document)
    assert len(document["results"]) == 2 * len(report["benchmarks"]) == 4
    for row in report["benchmarks"]:
        for metric in ("real_time", "cpu_time"):
            [sample] = by_benchmark(document, metric=metric)[row["run_name"]]["samples"]
            assert sample == pytest.approx(row[metric] * SECONDS[row["time_unit"]], rel=REL)


def test_google_benchmark_aggregates_only_gives_a_summary_from_mean_and_stddev():
    report = load("google_benchmark_aggregates_only.json")
    assert {row["run_type"] for row in report["benchmarks"]} == {"aggregate"}
    means, stddevs = aggregate_rows(report, "mean"), aggregate_rows(report, "stddev")

    document = parse_google_benchmark(read("google_benchmark_aggregates_only.json"))

    assert_native_shape(document)
    assert len(document["results"]) == 4
    for result in document["results"]:
        mean, stddev = means[result["benchmark"]], stddevs[result["benchmark"]]
        scale = SECONDS[mean["time_unit"]]
        assert result["summary"] == {
            "mean": pytest.approx(mean[result["metric"]] * scale, rel=REL),
            "subsession_size": 1,
            "variance": pytest.approx((stddev[result["metric"]] * scale) ** 2, rel=REL),
            "n": 3,
        }
        assert result["metadata"]["from_aggregates"] is True


def test_google_benchmark_maps_a_benchmark_that_reported_an_error_to_failed_results():
    report = load("google_benchmark_single.json")
    failed = copy.deepcopy(report["benchmarks"][0])
    failed.update(name="BM_Broken", run_name="BM_Broken", error_occurred=True, error_message="no input file")
    skipped = copy.deepcopy(report["benchmarks"][0])
    skipped.update(name="BM_Later", run_name="BM_Later", skipped=2, skip_message="not on this CPU")
    report["benchmarks"] += [failed, skipped]

    document = parse_google_benchmark(dumps(report))

    assert [result for result in document["results"] if result["benchmark"] == "BM_Broken"] == [
        {"benchmark": "BM_Broken", "metric": metric, "failed": True, "error": "no input file"}
        for metric in ("real_time", "cpu_time")]
    assert document["environment"]["skipped_benchmarks"] == {"BM_Later": "not on this CPU"}
    RunIn.model_validate({**document, "project": {"name": "p"}, "machine": {"name": "m"}})


def test_google_benchmark_turns_non_finite_counters_into_null():
    report = load("google_benchmark_single.json")
    report["benchmarks"][0]["bytes_per_second"] = float("inf")  # the library writes Infinity

    document = parse_google_benchmark(json.dumps(report))

    assert "Infinity" in json.dumps(report)
    counters = by_benchmark(document, metric="real_time")["BM_StringCopy/4096"]["metadata"]["counters"]
    assert counters == {"bytes_per_second": [None]}
    json.dumps(document, allow_nan=False)


def google_benchmark_edited(edit, name: str = "google_benchmark_repetitions.json") -> bytes:
    report = load(name)
    edit(report["benchmarks"])
    return dumps(report)


def only_a_median(rows: list[dict]) -> None:
    rows[:] = [row for row in rows if row["name"] == "BM_StringCopy/4096_median"]


def all_skipped(rows: list[dict]) -> None:
    for row in rows:
        row.update(skipped=2, skip_message="setup failed")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"BM_StringCopy/4096  1392 ns", r"google-benchmark: the file is not valid JSON", id="not-json"),
        pytest.param(b'{"context": {}}', r"must be a JSON object with a 'benchmarks' list", id="wrong-shape"),
        pytest.param(b'{"context": {}, "benchmarks": []}', r"holds no benchmark", id="empty"),
        pytest.param(
            google_benchmark_edited(lambda rows: rows[0].pop("cpu_time")),
            r"row 'BM_StringCopy/4096' of benchmark 'BM_StringCopy/4096' has no 'cpu_time'",
            id="missing-cpu-time",
        ),
        pytest.param(
            google_benchmark_edited(lambda rows: rows[1].update(time_unit="fortnight")),
            r"'BM_StringCopy/4096' has time_unit 'fortnight'",
            id="unknown-unit",
        ),
        pytest.param(
            google_benchmark_edited(only_a_median),
            r"'BM_StringCopy/4096' has no values \(neither iteration rows nor '_mean' and '_stddev' aggregates\)",
            id="no-values",
        ),
        pytest.param(
            google_benchmark_edited(all_skipped, "google_benchmark_single.json"),
            r"no benchmark has values \(all were skipped: BM_StringCopy/4096: setup failed",
            id="all-skipped",
        ),
    ],
)
def test_google_benchmark_rejects_bad_input_naming_the_problem(content, message):
    with pytest.raises(ImportFormatError, match=message):
        parse_google_benchmark(content)


# --- hyperfine ------------------------------------------------------------------------------


def test_hyperfine_times_are_the_samples_and_match_its_mean_and_stddev():
    report = load("hyperfine.json")

    document = parse_hyperfine(read("hyperfine.json"))

    assert_native_shape(document)
    assert document["source"] == "hyperfine"  # the export names no version
    results = by_benchmark(document)
    # --command-name short-sleep 'sleep 0.01' 'true': the name replaces the command line
    assert list(results) == ["short-sleep", "true"]
    for entry in report["results"]:
        result = results[entry["command"]]
        assert result["samples"] == entry["times"]
        assert len(result["samples"]) == 5  # --runs 5; the 2 warm-up runs are not exported
        assert statistics.mean(result["samples"]) == pytest.approx(entry["mean"], rel=REL)
        assert statistics.stdev(result["samples"]) == pytest.approx(entry["stddev"], rel=REL)
        assert result["metadata"]["exit_codes"] == [0] * 5
        assert result["metadata"]["user"] == entry["user"]
        assert result["metadata"]["system"] == entry["system"]


def test_hyperfine_parameter_list_keeps_the_parameters():
    document = parse_hyperfine(read("hyperfine_parameters.json"))

    results = by_benchmark(document)
    assert list(results) == ["sleep 0.002", "sleep 0.004"]
    assert results["sleep 0.004"]["metadata"]["parameters"] == {"delay": "0.004"}
    assert [len(result["samples"]) for result in results.values()] == [3, 3]


def hyperfine_edited(edit) -> bytes:
    report = load("hyperfine.json")
    edit(report["results"])
    return dumps(report)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"Benchmark 1: true", r"hyperfine: the file is not valid JSON", id="not-json"),
        pytest.param(b'{"benchmarks": []}', r"must be a JSON object with a 'results' list", id="wrong-shape"),
        pytest.param(b'{"results": []}', r"holds no command", id="empty"),
        pytest.param(
            hyperfine_edited(lambda results: results[0].pop("command")),
            r"result #0 has no 'command'",
            id="missing-command",
        ),
        pytest.param(
            hyperfine_edited(lambda results: results[1].pop("times")),
            r"command 'true' has no 'times'",
            id="missing-times",
        ),
        pytest.param(
            hyperfine_edited(lambda results: results[1].update(times=[])),
            r"command 'true' has no values \('times' is empty\)",
            id="no-values",
        ),
        pytest.param(
            hyperfine_edited(lambda results: results[1].update(times=[0.1, "0.2"])),
            r"'times' must be a list of finite numbers",
            id="text-value",
        ),
        pytest.param(
            hyperfine_edited(lambda results: results[1].update(command="short-sleep")),
            r"command 'short-sleep' appears more than once",
            id="duplicate-command",
        ),
    ],
)
def test_hyperfine_rejects_bad_input_naming_the_problem(content, message):
    with pytest.raises(ImportFormatError, match=message):
        parse_hyperfine(content)


# --- which format a file looks like ------------------------------------------------------------------

NATIVE_RUN = dumps({"project": {"name": "P"}, "machine": {"name": "m"}, "revision": {"commit": "abc123"},
                    "results": [{"benchmark": "sort", "samples": [1.0, 1.1, 0.9]}]})
FILES = {
    "native": [NATIVE_RUN],
    "pyperf": [read("pyperf_single.json"), read("pyperf_suite.json"), read("pyperf_unbalanced.json")],
    "pytest-benchmark": [read("pytest_benchmark_data.json"), read("pytest_benchmark_summary.json")],
    "google-benchmark": [read("google_benchmark_repetitions.json"), read("google_benchmark_single.json"),
                         read("google_benchmark_aggregates_only.json")],
    "hyperfine": [read("hyperfine.json"), read("hyperfine_parameters.json")],
    "asv": [read("asv/results/vm/8c101b15-virtualenv-py3.11.json"),
            read("asv/results/vm/3d6a229c-virtualenv-py3.11.json")],
}


@pytest.mark.parametrize(("format_name", "content"), [(name, content) for name, files in FILES.items()
                                                      for content in files])
def test_every_real_file_looks_like_its_own_format(format_name, content):
    assert sniff(content) == format_name
    assert sniff(gzip.decompress(gzip.compress(content))) == format_name


@pytest.mark.parametrize("content", [b"not json", b"[]", b"{}", b'{"benchmarks": []}', b'{"results": [1]}', b"\xff"])
def test_a_file_of_no_known_format_looks_like_none(content):
    assert sniff(content) is None


@pytest.mark.parametrize(("declared", "actual"), [(declared, actual) for declared in FORMATS for actual in FORMATS
                                                  if declared != actual])
def test_a_file_declared_in_another_format_is_refused_naming_the_one_it_looks_like(declared, actual):
    with pytest.raises(FormatMismatch) as refused:
        import_document(format_name=declared, content=FILES[actual][0], overrides={})

    assert refused.value.detected == actual
    assert str(refused.value).startswith(f"this looks like {'an' if actual == 'asv' else 'a'} {actual} file "
                                         f"(read as {declared}: ")


def test_the_pytest_benchmark_file_posted_as_pyperf_says_why_and_what_it_is():
    with pytest.raises(FormatMismatch, match=r"^this looks like a pytest-benchmark file \(read as pyperf: file format "
                                             r"version '5\.3\.1' is not supported; expected '1\.0' .*\)\)$"):
        import_document(format_name="pyperf", content=read("pytest_benchmark_data.json"), overrides={})


def test_a_broken_file_of_the_declared_format_gets_no_other_format_named():
    content = pyperf_without_name()

    with pytest.raises(ImportFormatError) as refused:
        import_document(format_name="pyperf", content=content, overrides={})

    assert not isinstance(refused.value, FormatMismatch) and "looks like" not in str(refused.value)


# --- the run key of a file imported without one -----------------------------------------------------

def imported(content: bytes = read("hyperfine.json"), format_name: str = "hyperfine", **stated) -> dict:
    overrides = stated_overrides(**{"project": "P", "machine": "m", "commit": "abc123", **stated})
    return import_document(format_name=format_name, content=content, overrides=overrides)


def test_a_file_imported_without_a_run_key_gets_one_from_its_content_and_its_run():
    key = imported()["run_key"]

    assert key.startswith("content:") and len(key) <= 200
    assert imported()["run_key"] == key
    assert imported(gzip.compress(read("hyperfine.json")))["run_key"] == key
    others = [imported(commit="abc124"), imported(machine="m2"), imported(project="Q"), imported(kind="pr"),
              imported(branch="main"), imported(pull_request=3), imported(read("hyperfine_parameters.json"))]
    assert len({key, *(document["run_key"] for document in others)}) == 1 + len(others)


def test_a_stated_or_native_run_key_is_kept():
    assert imported(run_key="night-1")["run_key"] == "night-1"
    native = dumps({**json.loads(NATIVE_RUN), "run_key": "own"})
    assert import_document(format_name="native", content=native, overrides={})["run_key"] == "own"


def test_stated_revision_parts_replace_or_complete_the_files_revision():
    document = json.loads(NATIVE_RUN)
    document["revision"] = {"commit": "abc123", "branch": "fix", "author": "someone"}

    completed = import_document(format_name="native", content=dumps(document),
                                overrides=stated_overrides(pull_request=5, base_commit="beef"))
    replaced = import_document(format_name="native", content=dumps(document),
                               overrides=stated_overrides(commit="f00d", pull_request=5))

    assert completed["revision"] == {"commit": "abc123", "branch": "fix", "author": "someone", "pull_request": 5,
                                     "base_commit": "beef"}
    assert replaced["revision"] == {"commit": "f00d", "pull_request": 5}
