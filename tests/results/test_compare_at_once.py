"""Comparing at once (issue 17, item 5): ``import_results --compare`` prints the imported run's verdicts,
``PILOTWEB_ANALYSIS_IN_PROCESS`` runs the analysis without a worker, and ``compare --files`` needs no Django."""

import json
import re
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from celery import Celery
from celery.app.task import Task
from django.core.management import CommandError, call_command

from results import comparisons, pairwise_rows, presentation, reports
from results.models import AlertGroup, Comparison, ComparisonMethod, Run
from results.queue import enqueue
from tests.factories import NIGHT_ZERO, compared_run, posted_run

HISTORY = {"sort": 1.0, "parse": 2.0}
TONIGHT = {"sort": 1.10, "parse": 2.0, "fresh": 0.5}
"""Night 5: sort 10% slower than its five earlier nights, parse unchanged, fresh measured for the first time."""


def night_document(night: int, means: dict[str, float], *, sd: float = 0.002, n: int = 20, **fields) -> dict:
    """The native document :func:`tests.factories.posted_run` would post for `night` (summaries of `n` seeded
    readings of relative sd `sd`), to import from a file."""
    rng = np.random.default_rng(night)
    results = []
    for name, mean in means.items():
        values = mean + rng.normal(0, sd * mean, n)
        results.append({"benchmark": name, "metric": "time", "unit": "s", "summary": {
            "mean": float(values.mean()), "subsession_size": 1, "variance": float(values.var(ddof=1)), "n": n}})
    return {"project": {"name": "Demo"}, "machine": {"name": "bench-1"}, "kind": "nightly",
            "revision": {"commit": f"{night:040x}", "branch": "main"},
            "started_at": (NIGHT_ZERO + timedelta(days=night)).isoformat(), "results": results, **fields}


def import_compare(path, *options: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_results", str(path), "--format", "native", "--compare", *options, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def tonight(tmp_path):
    """Five nights of history posted, and night 5 written to a file to import."""
    for night in range(5):
        posted_run(night, HISTORY, sd=0.002)
    path = tmp_path / "night5.json"
    path.write_text(json.dumps(night_document(5, TONIGHT)))
    return path


def table_line(table: str, benchmark: str) -> str:
    (line,) = [line for line in table.splitlines() if line.startswith(f"{benchmark} ")]
    return line


# import_results --compare

@pytest.mark.django_db(transaction=True)
def test_import_with_compare_prints_the_runs_verdicts_against_its_history(tonight):
    table, err = import_compare(tonight)

    run = Run.objects.get(revision__commit=f"{5:040x}")
    assert err == f"Imported run #{run.pk} with 3 results.\n"
    stored = {c.candidate.metric.benchmark.name: c for c in Comparison.objects.filter(
        candidate__run=run, method=ComparisonMethod.HISTORY).select_related("candidate__metric__benchmark")}
    assert table_line(table, "sort").endswith("regression") and stored["sort"].verdict == "regression"
    assert presentation.format_change(stored["sort"].ratio, stored["sort"].ci_low, stored["sort"].ci_high) \
        in table_line(table, "sort")
    assert table_line(table, "parse").endswith("no change")
    # A series first measured tonight has no baseline yet: shown, with nothing to compare it with.
    cells = re.split(r"\s{2,}", table_line(table, "fresh"))
    assert cells[2] == "—" and cells[4:] == ["—", "—", "—", "—+20", "insufficient history"]
    # The rows of a run have q-values, and the table is the one manage.py compare prints for two runs.
    assert table.splitlines()[0].split()[-4:] == ["p", "q", "n", "verdict"]
    assert table.rstrip().splitlines()[-1].startswith("change: candidate/baseline − 1 with Fieller's interval")


@pytest.mark.django_db(transaction=True)
def test_import_with_compare_prints_json_and_markdown(tonight):
    rows, _ = import_compare(tonight, "--compare-format", "json")
    markdown, _ = import_compare(tonight, "--compare-format", "markdown")

    by_name = {row["benchmark"]: row for row in json.loads(rows)}
    assert set(by_name) == set(TONIGHT)
    assert (by_name["sort"]["verdict"], by_name["sort"]["method"]) == ("regression", "history")
    assert by_name["sort"]["qvalue"] is not None and by_name["sort"]["significant"] is True
    assert by_name["fresh"]["verdict"] == "insufficient history" and by_name["fresh"]["ratio"] is None
    assert markdown.startswith("| Benchmark | Change [95% CI] | p | q | Verdict |\n")
    assert "| `sort (time)` |" in markdown and "▲ regression |" in markdown


@pytest.mark.django_db(transaction=True)
def test_a_run_imported_again_shows_its_stored_comparison_without_comparing_it_again(tonight):
    first, _ = import_compare(tonight)
    ids = set(Comparison.objects.values_list("pk", flat=True))

    again, err = import_compare(tonight)

    assert again == first and err.startswith("Already imported run #")
    assert set(Comparison.objects.values_list("pk", flat=True)) == ids


@pytest.mark.django_db(transaction=True)
def test_a_pull_request_is_compared_with_its_base_run(tmp_path):
    for night in range(5):
        compared_run(night, HISTORY, sd=0.002)
    path = tmp_path / "pr.json"
    document = night_document(5, {"sort": 1.10, "parse": 2.0}, kind="pr", revision={
        "commit": "c" * 40, "branch": "feature", "pull_request": 7, "base_commit": f"{4:040x}"})
    path.write_text(json.dumps(document))

    rows = {row["benchmark"]: row for row in json.loads(import_compare(path, "--compare-format", "json")[0])}

    assert (rows["sort"]["method"], rows["sort"]["verdict"]) == ("pairwise", "regression")
    assert rows["parse"]["verdict"] in ("no change", "inconclusive")


def test_compare_shows_one_run_so_a_directory_is_refused(db, tmp_path):
    with pytest.raises(CommandError, match=r"^--compare shows the comparison of one run: give it a results file"):
        call_command("import_results", str(tmp_path), "--format", "asv", "--compare", stdout=StringIO())
    assert not Run.objects.exists()


def test_without_compare_the_import_prints_its_line_alone(db, tmp_path):
    path = tmp_path / "night0.json"
    path.write_text(json.dumps(night_document(0, HISTORY)))
    out = StringIO()

    call_command("import_results", str(path), "--format", "native", stdout=out)

    assert out.getvalue() == f"Imported run #{Run.objects.get().pk} with 2 results.\n"


# PILOTWEB_ANALYSIS_IN_PROCESS

@pytest.fixture
def no_broker(monkeypatch, settings):
    """The analysis runs in-process, and any message sent to a broker fails the test."""
    settings.PILOTWEB_ANALYSIS_IN_PROCESS = True

    def refuse(task, *args, **kwargs):
        raise AssertionError(f"{task.name} was sent to the broker")

    monkeypatch.setattr(Task, "apply_async", refuse)


def test_a_run_posted_through_the_api_is_compared_with_no_broker(uploader_api, no_broker,
                                                                 django_capture_on_commit_callbacks):
    # Ten nights: the fewest a nightly's shift test, which opens its alerts, is run against.
    for night in range(10):
        posted_run(night, HISTORY, sd=0.002)
    document = night_document(10, {"sort": 1.10, "parse": 2.0})

    with django_capture_on_commit_callbacks(execute=True):
        response = uploader_api.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")

    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.compared_at is not None
    verdicts = dict(Comparison.objects.filter(candidate__run=run, method=ComparisonMethod.HISTORY)
                    .values_list("candidate__metric__benchmark__name", "verdict"))
    assert verdicts == {"sort": "regression", "parse": "no change"}
    # The tasks the comparison sends in turn run here too: its alert group is notified.
    assert AlertGroup.objects.get(run=run).notified_at is not None


def test_a_session_still_goes_to_its_machines_queue(no_broker, monkeypatch):
    sent = []
    monkeypatch.setattr(Task, "apply_async", lambda task, args, **options: sent.append((task.name, args,
                                                                                        options["queue"])))
    nowhere = Celery("nowhere", broker="redis://127.0.0.1:1/0", set_as_current=False)

    @nowhere.task(name="tests.session")
    def session(session_id: int) -> None:
        """Runs on a benchmark machine's worker, never in the process that sends it."""

    assert enqueue(session, 3, queue="bench-1") is True
    assert sent == [("tests.session", (3,), "bench-1")]


# The comparison's pure part

def test_the_pure_part_names_the_pairwise_method_as_the_models_do():
    assert pairwise_rows.METHOD_PAIRWISE == ComparisonMethod.PAIRWISE
    assert comparisons.compare_series is pairwise_rows.compare_series


# compare --files without Django

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PAIRS = [("pytest_benchmark_data.json", "pytest_benchmark_summary.json"),
         ("google_benchmark_repetitions.json", "google_benchmark_aggregates_only.json"),
         ("hyperfine.json", "hyperfine.json"), ("pyperf_suite.json", "pyperf_suite.json")]


def manage(*arguments: object) -> subprocess.CompletedProcess:
    """``manage.py`` in a child process, with the modules it imports listed on stderr (``-X importtime``)."""
    return subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "manage.py"), *map(str, arguments)],
                          cwd=ROOT, capture_output=True, text=True)


def imported(child: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in child.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize(("baseline", "candidate"), PAIRS)
@pytest.mark.parametrize("output", reports.OUTPUT_FORMATS)
def test_compare_files_prints_what_the_django_command_prints_without_importing_django(baseline, candidate, output):
    arguments = ("--files", DATA / baseline, DATA / candidate, "--format", output)
    expected = StringIO()
    call_command("compare", *map(str, arguments), stdout=expected)

    child = manage("compare", *arguments)

    assert child.returncode == 0 and child.stdout == expected.getvalue()
    assert not {name for name in imported(child) if name == "django" or name.startswith("django.")}
    assert "scipy.stats" not in imported(child)


def test_plain_numbers_and_the_bootstrap_need_no_django_either(tmp_path):
    rng = np.random.default_rng(5)
    (tmp_path / "old.txt").write_text("\n".join(map(str, rng.normal(10.0, 0.1, 40))))
    (tmp_path / "new.txt").write_text("\n".join(map(str, rng.normal(10.5, 0.1, 40))))
    arguments = ("--files", tmp_path / "old.txt", tmp_path / "new.txt", "--bootstrap", "--seed", "3", "--resamples",
                 "500", "--threshold", "0.01", "--alpha", "0.01")
    expected = StringIO()
    call_command("compare", *map(str, arguments), stdout=expected)

    child = manage("compare", *arguments)

    assert child.stdout == expected.getvalue() and "old vs new" in child.stdout
    assert "django" not in imported(child)


def test_compare_files_imports_only_the_comparisons_part_of_the_numerical_core():
    child = manage("compare", "--files", DATA / "pyperf_single.json", DATA / "pyperf_single.json")

    core = {name for name in imported(child) if name.startswith("results.stats.")}
    assert child.returncode == 0 and {"results.stats._compare", "results.stats._ratio"} <= core
    # Warm-up removal, history, planning and the sequential test are for stored runs and sessions.
    assert not core & {f"results.stats.{name}" for name in (
        "_edm", "_stable_phase", "_transient", "_wps", "_history", "_hierarchical", "_sequential", "_recent_shift",
        "_rank_shifts")}


@pytest.mark.parametrize(("arguments", "message"), [
    (("--files", DATA / "absent.json", DATA / "hyperfine.json"), "CommandError: cannot read "),
    (("--files", DATA / "hyperfine.json", DATA / "hyperfine_parameters.json"), "CommandError: no common series"),
    (("--files", DATA / "hyperfine.json", DATA / "hyperfine.json", "--alpha", "2"), "CommandError: --alpha must"),
    (("--files", DATA / "hyperfine.json", DATA / "hyperfine.json", "--no-color", "--fomat", "json"),
     "manage.py compare: error: argument RUN: invalid int value: 'json'"),
])
def test_what_the_fast_path_does_not_take_django_reports_as_always(arguments, message):
    child = manage("compare", *arguments)

    assert child.returncode != 0 and child.stdout == ""
    assert message in child.stderr and "django" in imported(child)


def test_the_import_line_names_the_failed_benchmarks_and_why(db, tmp_path):
    document = night_document(0, HISTORY)
    document["results"].append({"benchmark": "broken", "failed": True,
                                "error": "Traceback (most recent call last):\n  ...\nValueError: no such table"})
    path = tmp_path / "night0.json"
    path.write_text(json.dumps(document))
    out = StringIO()

    call_command("import_results", str(path), "--format", "native", stdout=out)

    assert out.getvalue() == (f"Imported run #{Run.objects.get().pk} with 2 results; 1 failed: broken (time): "
                              "ValueError: no such table.\n")
