"""The asv importer, on a real asv results directory (tests/data/asv, made by tests/data/asv/make_asv_data.sh; see
tests/data/README.md): one file or the whole directory, parsed, posted and imported by the command.

Reference values are asv's own, read from the same files: the samples it recorded, its median and quartiles,
its parameter lists and its machine.json.
"""

import itertools
import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from results.ingest import import_document
from results.ingest.asv import IQR_PER_SIGMA, load_benchmarks, parse, read_directory
from results.ingest.base import FormatMismatch, ImportFormatError
from results.models import FailedResult, Result, Run
from results.schemas import RunIn

RESULTS = Path(__file__).resolve().parents[1] / "data" / "asv" / "results"
MACHINE = RESULTS / "vm"
SORT = "benchmarks.TimeSort.time_sort"
COLUMNS = ("result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile")


def result_files() -> list[Path]:
    return sorted(path for path in MACHINE.glob("*.json") if path.name != "machine.json")


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def file_with_samples(kept: bool) -> Path:
    """A results file made with (``kept``) or without ``asv run --record-samples``."""
    return next(path for path in result_files()
                if (row(load(path), "benchmarks.time_sum_range")["samples"] is not None) == kept)


def row(data: dict, name: str) -> dict:
    """A benchmark's row of a results file as column -> value, as asv itself reads it."""
    return dict(itertools.zip_longest(data["result_columns"], data["results"][name]))


def combinations(data: dict, name: str) -> list[str]:
    """The names asv gives a parameterized benchmark's combinations (asv.commands.compare)."""
    return [f"{name}({', '.join(values)})" for values in itertools.product(*row(data, name)["params"])]


def by_name(document: dict) -> dict[str, dict]:
    return {result["benchmark"]: result for result in document["results"]}


def benchmarks() -> dict:
    return load_benchmarks((RESULTS / "benchmarks.json").read_bytes())


def test_the_suite_made_the_files_the_tests_rely_on():
    assert load(result_files()[0])["result_columns"] == list(COLUMNS)
    assert len(result_files()) == 4
    assert row(load(file_with_samples(True)), "benchmarks.time_sum_range")["samples"]
    assert row(load(file_with_samples(False)), "benchmarks.time_sum_range")["samples"] is None


def test_recorded_samples_become_the_results_samples():
    data = load(file_with_samples(True))
    results = by_name(parse(file_with_samples(True).read_bytes(), benchmarks=benchmarks()))

    plain = row(data, "benchmarks.time_sum_range")
    assert results["benchmarks.time_sum_range"]["samples"] == plain["samples"][0]
    assert "summary" not in results["benchmarks.time_sum_range"]
    assert results["benchmarks.time_sum_range"]["metadata"]["median"] == plain["result"][0]
    assert results["benchmarks.time_sum_range"]["metadata"]["number"] == plain["stats_number"][0]
    sort = row(data, SORT)
    for index, name in enumerate(combinations(data, SORT)):
        if sort["samples"][index] is not None:
            assert results[name]["samples"] == sort["samples"][index]


def test_without_samples_the_summary_is_asvs_median_iqr_and_sample_count():
    data = load(file_with_samples(False))
    results = by_name(parse(file_with_samples(False).read_bytes(), benchmarks=benchmarks()))

    plain = row(data, "benchmarks.time_sum_range")
    summary = results["benchmarks.time_sum_range"]["summary"]
    assert "samples" not in results["benchmarks.time_sum_range"]
    assert summary["mean"] == plain["result"][0]
    assert summary["variance"] == pytest.approx(((plain["stats_q_75"][0] - plain["stats_q_25"][0])
                                                 / IQR_PER_SIGMA) ** 2, rel=1e-12)
    assert summary["n"] == plain["stats_repeat"][0] and summary["subsession_size"] == 1
    metadata = results["benchmarks.time_sum_range"]["metadata"]
    assert metadata["ci_99"] == [plain["stats_ci_99_a"][0], plain["stats_ci_99_b"][0]]
    assert (metadata["q_25"], metadata["q_75"]) == (plain["stats_q_25"][0], plain["stats_q_75"][0])
    document = import_document(format_name="asv", content=file_with_samples(False).read_bytes(),
                               overrides={"project": {"name": "tinysort"}})
    RunIn.model_validate(document)


def test_a_parameterized_benchmark_is_one_series_per_combination_named_as_asv_names_it():
    data = load(file_with_samples(True))
    results = by_name(parse(file_with_samples(True).read_bytes(), benchmarks=benchmarks()))

    names = combinations(data, SORT)
    assert names[0] == "benchmarks.TimeSort.time_sort(100, 'quick')"
    measured = [name for name, value in zip(names, row(data, SORT)["result"], strict=True)
                if isinstance(value, float) and value == value]
    assert measured and all("samples" in results[name] for name in measured)
    assert results["benchmarks.TimeSort.time_sort(400, 'quick')"]["metadata"]["params"] == {
        "n": "400", "method": "'quick'"}


def test_failed_benchmarks_and_combinations_are_failed_results_and_skipped_ones_are_listed():
    for path in result_files():
        document = parse(path.read_bytes(), benchmarks=benchmarks())
        results = by_name(document)
        failed = {name for name, result in results.items() if result.get("failed")}

        assert failed == {"benchmarks.time_broken", f"{SORT}(100, 'bogo')", f"{SORT}(400, 'bogo')"}
        assert row(load(path), "benchmarks.time_broken")["result"] is None
        for name in failed:
            assert results[name] == {"benchmark": name, "metric": "time", "unit": "s",
                                     "direction": "lower_is_better", "failed": True}
        # NaN is asv's "n/a": setup raised NotImplementedError for that combination.
        assert document["environment"]["skipped_benchmarks"] == [f"{SORT}(400, 'insertion')"]
        assert f"{SORT}(400, 'insertion')" not in results


def test_the_machine_is_asvs_machine_json_and_the_revision_the_files_commit():
    machine = load(MACHINE / "machine.json")
    path = result_files()[0]
    data = load(path)
    document = parse(path.read_bytes())

    assert document["machine"] == {"name": machine["machine"], "cpu_model": machine["cpu"], "os": machine["os"],
                                   "cores": int(machine["num_cpu"]), "memory_bytes": int(machine["ram"]),
                                   "hardware": {"arch": machine["arch"]}}
    assert document["revision"]["commit"] == data["commit_hash"]
    committed = datetime.fromtimestamp(data["date"] / 1000, tz=UTC)
    assert datetime.fromisoformat(document["started_at"]) == committed
    assert datetime.fromisoformat(document["revision"]["timestamp"]) == committed
    started = min(row(data, name)["started_at"] for name in data["results"])
    assert datetime.fromisoformat(document["environment"]["benchmarked_from"]) == \
        datetime.fromtimestamp(started / 1000, tz=UTC)
    assert document["environment"]["env_name"] == data["env_name"] and document["source"] == "asv"


def test_units_and_directions_from_benchmarks_json_or_else_from_the_name():
    content = file_with_samples(True).read_bytes()
    described = by_name(parse(content, benchmarks=benchmarks()))
    alone = by_name(parse(content))

    expected = {"benchmarks.time_sum_range": ("time", "s"), "benchmarks.peakmem_sorted_copy": ("peak_memory", "B"),
                f"{SORT}(100, 'quick')": ("time", "s")}
    for name, metric_unit in expected.items():
        assert (described[name]["metric"], described[name]["unit"]) == metric_unit
        assert (alone[name]["metric"], alone[name]["unit"]) == metric_unit
    assert benchmarks()["benchmarks.track_comparisons"]["unit"] == "comparisons"
    assert (described["benchmarks.track_comparisons"]["metric"], described["benchmarks.track_comparisons"]["unit"]) \
        == ("value", "comparisons")
    assert alone["benchmarks.track_comparisons"]["unit"] == "unit"  # asv's default: the file does not say
    assert {result["direction"] for result in [*described.values(), *alone.values()]} == {"lower_is_better"}
    data = load(file_with_samples(True))
    assert described["benchmarks.track_comparisons"]["samples"] == \
        row(data, "benchmarks.track_comparisons")["result"]
    assert described["benchmarks.peakmem_sorted_copy"]["samples"] == \
        row(data, "benchmarks.peakmem_sorted_copy")["result"]


def test_a_mem_benchmark_without_benchmarks_json_is_bytes():
    data = load(file_with_samples(True))
    data["results"] = {"suite.mem_list": [[1024], []]}

    (result,) = parse(json.dumps(data))["results"]
    assert (result["metric"], result["unit"], result["direction"], result["samples"]) == (
        "memory", "B", "lower_is_better", [1024.0])


def test_the_directory_is_read_machine_by_machine_in_commit_date_order():
    found = read_directory(RESULTS)

    assert list(found.machines) == ["vm"]
    dates = [load(file.path)["date"] for file in found.machines["vm"]]
    assert dates == sorted(dates) and len(dates) == 4
    assert found.benchmarks == benchmarks()


@pytest.mark.django_db
def test_the_command_imports_a_results_directory_one_run_per_commit_in_order_and_only_once():
    out = StringIO()
    call_command("import_results", str(RESULTS), "--format", "asv", "--project", "tinysort", stdout=out)

    runs = list(Run.objects.order_by("pk").select_related("revision", "machine"))
    by_date = sorted(result_files(), key=lambda path: load(path)["date"])
    assert [run.revision.commit for run in runs] == [load(path)["commit_hash"] for path in by_date]
    assert [run.started_at for run in runs] == sorted(run.started_at for run in runs)
    assert {run.machine.name for run in runs} == {"vm"} and {run.kind for run in runs} == {"imported"}
    assert runs[0].machine.cpu_model == load(MACHINE / "machine.json")["cpu"]
    assert FailedResult.objects.count() == 3 * len(runs)
    track = Result.objects.filter(metric__benchmark__name="benchmarks.track_comparisons")
    assert {result.metric.unit for result in track} == {"comparisons"}
    assert out.getvalue() == "vm: 4 runs stored, 0 already there, 12 failed results in the runs stored.\n"

    again = StringIO()
    call_command("import_results", str(RESULTS), "--format", "asv", "--project", "tinysort", stdout=again)

    assert again.getvalue() == "vm: 0 runs stored, 4 already there, 0 failed results in the runs stored.\n"
    assert Run.objects.count() == 4


@pytest.mark.django_db
def test_one_results_file_imports_with_the_benchmarks_json_of_its_directory():
    out = StringIO()
    call_command("import_results", str(result_files()[0]), "--format", "asv", "--project", "tinysort", stdout=out)

    assert out.getvalue().startswith("Imported run #")
    assert Result.objects.get(metric__benchmark__name="benchmarks.track_comparisons").metric.unit == "comparisons"


@pytest.mark.django_db
def test_a_single_file_posted_to_the_api_takes_units_from_the_names(api):
    path = file_with_samples(False)
    response = api.post("/api/v1/runs/import?format=asv&project=tinysort&branch=main", data=path.read_bytes(),
                        content_type="application/octet-stream")

    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.revision.commit == load(path)["commit_hash"] and run.machine.name == "vm"
    assert run.source == "asv" and run.failures.count() == 3
    assert Result.objects.get(metric__benchmark__name="benchmarks.track_comparisons").metric.unit == "unit"


def test_another_format_declared_for_an_asv_file_names_asv():
    content = result_files()[0].read_bytes()

    with pytest.raises(FormatMismatch, match=r"^this looks like an asv file \(read as pyperf: .*\)$"):
        import_document(format_name="pyperf", content=content, overrides={})
    with pytest.raises(FormatMismatch, match=r"^this looks like an asv file \(read as native: the file is not a run "
                                             r"document\)$"):
        import_document(format_name="native", content=content, overrides={})


@pytest.mark.django_db
def test_the_command_tells_to_import_an_asv_file_with_format_asv():
    with pytest.raises(CommandError, match=r"this looks like an asv file: import it with --format asv \(read as"):
        call_command("import_results", str(result_files()[0]), "--format", "hyperfine", "--project", "P",
                     stdout=StringIO())
    assert not Run.objects.exists()


def test_benchmarks_json_is_no_results_file():
    with pytest.raises(ImportFormatError, match=r"this is asv's benchmarks\.json .*not a results file"):
        parse((RESULTS / "benchmarks.json").read_bytes())


def broken(change) -> bytes:
    data = load(file_with_samples(True))
    change(data)
    return json.dumps(data).encode()


@pytest.mark.parametrize(("change", "message"), [
    (lambda data: data.update(version=1), r"results format version 1 is not supported.*'asv update'"),
    (lambda data: data.pop("commit_hash"), r"the file has no 'commit_hash'"),
    (lambda data: data["results"][SORT][0].pop(), rf"benchmark '{SORT}' 'result' must be null or a list of 6 values"),
    (lambda data: data["results"]["benchmarks.time_sum_range"][11][0].append("fast"),
     r"benchmark 'benchmarks.time_sum_range': 'samples' must be a non-empty list of finite numbers"),
    (lambda data: data["results"]["benchmarks.time_sum_range"].extend([None] * 20),
     r"benchmark 'benchmarks.time_sum_range' must be a list of at most 13 values"),
    (lambda data: data.update(results={}), r"the file holds no benchmark"),
])
def test_a_malformed_file_is_refused_whole_saying_what_is_wrong(change, message):
    with pytest.raises(ImportFormatError, match=message):
        import_document(format_name="asv", content=broken(change), overrides={})


@pytest.mark.django_db
def test_a_directory_with_a_malformed_file_stores_nothing_and_names_the_file(tmp_path):
    copy_of = tmp_path / "results"
    (copy_of / "vm").mkdir(parents=True)
    for path in [RESULTS / "benchmarks.json", MACHINE / "machine.json", *result_files()]:
        (copy_of / path.relative_to(RESULTS)).write_bytes(path.read_bytes())
    last = copy_of / "vm" / result_files()[-1].name
    data = load(last)
    data["results"]["benchmarks.time_sum_range"][0] = ["fast"]
    last.write_text(json.dumps(data))

    with pytest.raises(CommandError, match=rf"^vm/{last.name}: asv: benchmark 'benchmarks.time_sum_range': the "
                                           r"result must be a finite number, NaN or null, not 'fast'\.$"):
        call_command("import_results", str(copy_of), "--format", "asv", "--project", "tinysort", stdout=StringIO())
    assert not Run.objects.exists()


def test_a_directory_is_refused_for_other_formats_and_with_a_stated_commit(tmp_path):
    with pytest.raises(CommandError, match=r"only --format asv imports a directory"):
        call_command("import_results", str(RESULTS), "--format", "pyperf", "--project", "P", stdout=StringIO())
    with pytest.raises(CommandError, match=r"give no --commit or --run-key with a directory"):
        call_command("import_results", str(RESULTS), "--format", "asv", "--project", "P", "--commit", "abc123",
                     stdout=StringIO())
    with pytest.raises(CommandError, match=r"holds no machine folder"):
        call_command("import_results", str(tmp_path), "--format", "asv", "--project", "P", stdout=StringIO())

