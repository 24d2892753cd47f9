"""``manage.py compare``: two stored runs or two result files, as a table, JSON or Markdown.

Reference values are computed here independently of the numerical core: Welch's p by
``scipy.stats.ttest_ind_from_stats(..., equal_var=False)``, Fieller's limits by the formula of
spec §6 (``(ȳ_N ȳ_O ∓ √((ȳ_N ȳ_O)² − a(ȳ_N² − h² s_N²))) / a`` with ``h = t_{0.975, n_N+n_O−2}``),
mean half-widths by ``t_{0.975, n−1} · s/√n`` (spec §3), q-values by
``scipy.stats.false_discovery_control`` over those p-values.
"""

import json
import re
import shutil
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats as scipy_stats

from results import comparisons, stats
from results.models import Metric, Run
from results.rows import ComparisonRow, Side
from results.series import PLAIN, Series, detect_format
from tests.expected import bh_qvalues, fieller, percent, welch_p
from tests.factories import post_results

DATA = Path(__file__).resolve().parent.parent / "data"
# Means, subsession variances and counts stated exactly, so the references need no samples.
BASELINE = {
    "slower": (1.00, 0.0004, 20), "faster": (1.00, 0.0004, 20), "same": (1.00, 0.0001, 30),
    "noisy": (1.00, 0.04, 10), "throughput": (100.0, 1.0, 20), "gone": (1.0, 0.01, 10), "single": (1.0, 0.0, 1),
}
CANDIDATE = {
    "slower": (1.10, 0.0004, 20), "faster": (0.90, 0.0009, 25), "same": (1.001, 0.0001, 30),
    "noisy": (1.05, 0.05, 10), "throughput": (90.0, 1.0, 20), "new": (1.0, 0.01, 10), "single": (1.0, 0.0, 1),
}
EXPECTED_VERDICTS = {"slower": "regression", "faster": "improvement", "same": "no change", "noisy": "inconclusive",
                     "throughput": "regression"}


def summaries(series: dict[str, tuple[float, float, int]], samples: dict | None = None) -> list[dict]:
    """Native results with the given summaries (``throughput`` higher-is-better), or samples."""
    results = [
        {"benchmark": name, "metric": "time", "unit": "MB/s" if name == "throughput" else "s",
         "direction": "higher_is_better" if name == "throughput" else "lower_is_better",
         "summary": {"mean": mean, "subsession_size": 1, "variance": variance, "n": n}}
        for name, (mean, variance, n) in series.items()
    ]
    return results + [{"benchmark": name, "metric": "time", "unit": "s", "samples": values}
                      for name, values in (samples or {}).items()]


def compare(*arguments: object) -> str:
    out = StringIO()
    call_command("compare", *[str(argument) for argument in arguments], stdout=out)
    return out.getvalue()


def compare_json(*arguments: object) -> dict[str, dict]:
    return {row["benchmark"]: row for row in json.loads(compare(*arguments, "--format", "json"))}


def welch_q(name: str) -> float:
    """The BH q-value of a series among the five the two runs share with at least 2 subsessions."""
    names = sorted(EXPECTED_VERDICTS)
    return bh_qvalues([welch_p(CANDIDATE[n], BASELINE[n]) for n in names])[names.index(name)]


def table_line(table: str, benchmark: str) -> str:
    (line,) = [line for line in table.splitlines() if line.startswith(f"{benchmark} ")]
    return line


@pytest.fixture
def runs(db) -> tuple[Run, Run]:
    return post_results(summaries(BASELINE), commit="a" * 40), post_results(summaries(CANDIDATE), commit="b" * 40)


# Stored runs.

def test_stored_runs_table_shows_each_verdict_with_scipy_p_values_and_fieller_intervals(runs):
    baseline, candidate = runs

    table = compare(baseline.pk, candidate.pk)

    for name, verdict in EXPECTED_VERDICTS.items():
        line = table_line(table, name)
        low, high = fieller(CANDIDATE[name], BASELINE[name])
        p = welch_p(CANDIDATE[name], BASELINE[name])
        assert line.endswith(verdict)
        assert percent(CANDIDATE[name][0] / BASELINE[name][0], low, high) in line
        assert (f"{p:.3f}" if p >= 0.001 else "<0.001") in line
        assert f"{BASELINE[name][2]}+{CANDIDATE[name][2]}" in line
    # The flags of benchstat: "~" for not significant (q ≥ α: two runs have q-values), and the unit scaled.
    assert "~" in table_line(table, "noisy") and "~" not in table_line(table, "slower")
    assert "1.00 ± 0.0094 s" in table_line(table, "slower")
    assert "100 ± 0.47 MB/s" in table_line(table, "throughput")


def test_stored_runs_json_has_every_number(runs):
    baseline, candidate = runs

    rows = compare_json(baseline.pk, candidate.pk)

    assert set(rows) == set(EXPECTED_VERDICTS)
    for name, row in rows.items():
        low, high = fieller(CANDIDATE[name], BASELINE[name])
        assert row["ratio"] == pytest.approx(CANDIDATE[name][0] / BASELINE[name][0], rel=1e-12)
        assert (row["low"], row["high"]) == pytest.approx((low, high), rel=1e-12)
        assert row["bounded"] is True
        assert row["pvalue"] == pytest.approx(welch_p(CANDIDATE[name], BASELINE[name]), rel=1e-9)
        assert row["verdict"] == EXPECTED_VERDICTS[name]
        assert row["verdict_from"] == "fieller" and row["bootstrap"] is None
        for side, given in (("baseline", BASELINE[name]), ("candidate", CANDIDATE[name])):
            mean, variance, n = given
            assert (row[side]["mean"], row[side]["variance"], row[side]["n"]) == (mean, variance, n)
            assert row[side]["half_width"] == pytest.approx(
                scipy_stats.t.ppf(0.975, n - 1) * np.sqrt(variance / n), rel=1e-12)
    slower = rows["slower"]
    # Welch's t of candidate minus baseline, with the Welch–Satterthwaite df (equal variances and n: 2n − 2).
    assert slower["statistic"] == pytest.approx(0.1 / np.sqrt(2 * 0.0004 / 20), rel=1e-9)
    assert slower["df"] == pytest.approx(38, rel=1e-9)
    assert (slower["threshold"], slower["confidence_level"], slower["alpha"]) == (0.02, 0.95, 0.05)
    assert rows["noisy"]["qvalue"] == pytest.approx(welch_q("noisy"), rel=1e-9)
    assert (slower["high_p"], rows["noisy"]["high_p"]) == (False, True)
    assert (slower["unit"], slower["direction"]) == ("s", "lower_is_better")


def test_series_on_one_side_only_or_too_short_are_listed_after_the_table(runs):
    baseline, candidate = runs

    table = compare(baseline.pk, candidate.pk)

    assert "only in baseline: gone (time)" in table
    assert "only in candidate: new (time)" in table
    assert "not compared (fewer than 2 subsessions): single (time)" in table
    assert table.rstrip().splitlines()[-1].startswith("change: candidate/baseline − 1 with Fieller's interval")


def test_each_metric_threshold_decides_and_threshold_overrides_all(runs):
    baseline, candidate = runs
    Metric.objects.filter(benchmark__name="slower").update(threshold=0.2)

    assert compare_json(baseline.pk, candidate.pk)["slower"]["verdict"] == "no change"
    overridden = compare_json(baseline.pk, candidate.pk, "--threshold", "0.01")
    assert overridden["slower"]["verdict"] == "regression"
    # Fieller's interval for "same" is about ±0.5% around +0.1%: inside ±2%, not inside ±0.2%.
    assert overridden["same"]["threshold"] == 0.01
    assert compare_json(baseline.pk, candidate.pk, "--threshold", "0.002")["same"]["verdict"] == "inconclusive"


def test_alpha_moves_the_high_p_value_flag_which_follows_q(runs):
    baseline, candidate = runs
    p, q = welch_p(CANDIDATE["noisy"], BASELINE["noisy"]), welch_q("noisy")
    assert p < q

    between = compare_json(baseline.pk, candidate.pk, "--alpha", str((p + q) / 2))["noisy"]
    above = compare_json(baseline.pk, candidate.pk, "--alpha", str(min(q * 1.5, 0.99)))["noisy"]

    assert between["high_p"] is True and between["significant"] is False
    assert above["high_p"] is False and above["alpha"] == min(q * 1.5, 0.99)


def test_markdown_lists_decided_series_worst_first_and_inconclusive_ones_apart(runs):
    baseline, candidate = runs

    markdown = compare(baseline.pk, candidate.pk, "--format", "markdown")

    decided, inconclusive = markdown.split("**Inconclusive**")
    lines = [line for line in decided.splitlines() if line.startswith("|")]
    assert lines[0] == "| Benchmark | Change [95% CI] | p | q | Verdict |"
    assert lines[1] == "| --- | ---: | ---: | ---: | --- |"
    assert [line.split(" | ")[-1] for line in lines[2:]] == ["▲ regression |", "▲ regression |", "▼ improvement |",
                                                            "≈ no change |"]
    assert all(line.count("|") == 6 for line in lines)
    low, high = fieller(CANDIDATE["slower"], BASELINE["slower"])
    assert f"| `slower (time)` | {percent(1.1, low, high)} | <0.001 | <0.001 | ▲ regression |" in lines
    noisy = [line for line in inconclusive.splitlines() if line.startswith("| `noisy")]
    assert len(noisy) == 1 and noisy[0].endswith(f"{welch_q('noisy'):.3f} ~ | ? inconclusive |")
    assert "~ q ≥ α = 0.05: not statistically significant." in markdown
    assert "Only in the baseline: `gone (time)`" in markdown


def test_markdown_escapes_pipes_in_names():
    from results import reports

    side = Side(mean=1.0, variance=0.01, n=10, subsession_size=1, half_width=0.07)
    row = ComparisonRow(benchmark="a|b", metric="time", unit="s", direction="lower_is_better", method="files",
                        baseline=side, candidate=side, ratio=1.0, low=0.99, high=1.01, bounded=True, statistic=0.0,
                        df=18.0, pvalue=1.0, qvalue=None, verdict="no change", threshold=0.02, confidence_level=0.95)

    markdown = reports.markdown_table([row])

    assert "| `a\\|b (time)` | +0.0% [-1.0%, +1.0%] | 1.000 ~ | ≈ no change |" in markdown
    assert "Inconclusive" not in markdown


# The bootstrap.

@pytest.fixture
def sampled_runs(db) -> tuple[Run, Run]:
    """Runs with raw samples: 6 process runs x 8 values (hierarchical), and a summary-only series."""
    rng = np.random.default_rng(20261121)
    old = 1.0 + rng.normal(0, 0.02, (6, 1)) + rng.normal(0, 0.01, (6, 8))
    new = 1.1 + rng.normal(0, 0.02, (6, 1)) + rng.normal(0, 0.01, (6, 8))
    summary = {"summarised": (1.0, 0.0004, 20)}
    return (post_results(summaries(summary, {"sampled": old.tolist()}), commit="a" * 40),
            post_results(summaries(summary, {"sampled": new.tolist()}), commit="b" * 40))


def test_bootstrap_is_reproducible_with_a_seed(sampled_runs):
    baseline, candidate = sampled_runs
    arguments = (baseline.pk, candidate.pk, "--bootstrap", "--resamples", 2000)

    first = compare_json(*arguments, "--seed", 7)
    again = compare_json(*arguments, "--seed", 7)
    other = compare_json(*arguments, "--seed", 8)

    assert first == again
    assert first["sampled"]["bootstrap"] != other["sampled"]["bootstrap"]
    assert compare(*arguments, "--seed", 7) == compare(*arguments, "--seed", 7)


def test_bootstrap_decides_where_both_sides_kept_samples(sampled_runs):
    baseline, candidate = sampled_runs
    old = baseline.results.get(metric__benchmark__name="sampled").samples_array()
    new = candidate.results.get(metric__benchmark__name="sampled").samples_array()

    rows = compare_json(baseline.pk, candidate.pk, "--bootstrap", "--seed", 1, "--resamples", 2000)
    table = compare(baseline.pk, candidate.pk, "--bootstrap", "--seed", 1, "--resamples", 2000)

    sampled = rows["sampled"]
    assert sampled["verdict_from"] == "bootstrap" and sampled["verdict"] == "regression"
    assert sampled["bootstrap"]["ratio"] == pytest.approx(new.mean() / old.mean(), rel=1e-12)
    assert sampled["bootstrap"]["low"] < sampled["bootstrap"]["ratio"] < sampled["bootstrap"]["high"]
    # The process runs are the subsessions: the two intervals measure the same variation.
    assert sampled["bootstrap"]["high"] - sampled["bootstrap"]["low"] == pytest.approx(
        sampled["high"] - sampled["low"], rel=0.5)
    assert rows["summarised"]["bootstrap"] is None and rows["summarised"]["verdict_from"] == "fieller"
    assert "bootstrap [95% CI]" in table and re.search(r"\]\s+-\s", table_line(table, "summarised"))


def test_bootstrap_resamples_one_level_samples_by_subsession():
    rng = np.random.default_rng(3)
    # AR(1) samples: subsession analysis merges them, and the bootstrap must resample those blocks.
    values = np.empty(400)
    values[0] = 0.0
    for i in range(1, values.size):
        values[i] = 0.9 * values[i - 1] + rng.normal(0, 0.01)
    samples = 1.0 + values
    summary = stats.summarize_samples(samples)
    series = Series(benchmark="ar", metric="time", unit="s", direction="lower_is_better", threshold=0.02,
                    confidence_level=0.95, summary=summary, samples=samples)

    result = comparisons.compare_series([series], [series], bootstrap=comparisons.Bootstrap(resamples=2000, seed=1))

    assert summary.subsession_size > 1
    (row,) = result.rows
    naive = stats.ratio_bootstrap(samples, samples, n_resamples=2000, rng=1)
    assert row.bootstrap.high - row.bootstrap.low > 2 * (naive.high - naive.low)


def test_bootstrap_takes_runs_of_one_value_as_the_top_level():
    samples = np.array([[1.00], [1.02], [0.98], [1.01], [0.99]])
    series = Series(benchmark="one", metric="time", unit="s", direction="lower_is_better", threshold=0.02,
                    confidence_level=0.95, summary=stats.summarize_samples(samples), samples=samples)

    (row,) = comparisons.compare_series([series], [series],
                                        bootstrap=comparisons.Bootstrap(resamples=500, seed=1)).rows

    assert row.bootstrap.ratio == 1.0 and row.bootstrap.low < 1.0 < row.bootstrap.high


# Files.

def test_two_plain_number_files_are_compared_with_each_other(tmp_path):
    rng = np.random.default_rng(11)
    old, new = rng.normal(10.0, 0.1, 40), rng.normal(10.5, 0.1, 40)
    (tmp_path / "old.txt").write_text("# seconds\n" + "\n".join(map(str, old)) + "\n\n")
    (tmp_path / "new.txt").write_text("\n".join(map(str, new)))

    rows = compare_json("--files", tmp_path / "old.txt", tmp_path / "new.txt")
    table = compare("--files", tmp_path / "old.txt", tmp_path / "new.txt")

    row = rows["old vs new"]
    assert (row["metric"], row["unit"], row["direction"]) == ("value", "", "lower_is_better")
    assert row["verdict"] == "regression"
    assert row["pvalue"] == pytest.approx(welch_p(
        tuple(row["candidate"][key] for key in ("mean", "variance", "n")),
        tuple(row["baseline"][key] for key in ("mean", "variance", "n"))), rel=1e-9)
    # Independent samples: Pilot's diagnostic finds q = 1, so the variance of the mean is the sample variance's
    # with n − 1 degrees of freedom (spec §2a's batch means are for correlated readings).
    assert row["baseline"]["subsession_size"] == 1
    baseline = row["baseline"]
    assert (baseline["mean"], baseline["variance"] / baseline["n"], baseline["n"] - 1) == \
        pytest.approx((old.mean(), old.var(ddof=1) / old.size, old.size - 1))
    assert table_line(table, "old vs new").endswith("regression")


def test_two_copies_of_a_real_file_show_no_change(tmp_path):
    copy = tmp_path / "copy.json"
    shutil.copy(DATA / "pytest_benchmark_data.json", copy)

    rows = compare_json("--files", DATA / "pytest_benchmark_data.json", copy)

    identical = rows["bench_sample.py::test_sum_range"]
    assert (identical["ratio"], identical["statistic"], identical["pvalue"]) == (1.0, 0.0, 1.0)
    # Two files stand alone: no q-value, the p-value decides.
    assert identical["verdict"] == "no change" and identical["high_p"] is True and identical["qvalue"] is None
    assert identical["baseline"] == identical["candidate"]


def test_files_of_different_formats_match_by_benchmark_and_metric():
    rows = json.loads(compare("--files", DATA / "google_benchmark_repetitions.json",
                              DATA / "google_benchmark_aggregates_only.json", "--format", "json"))

    names = ("BM_SortVector/10000", "BM_StringCopy/4096")
    assert sorted((row["benchmark"], row["metric"]) for row in rows) == [
        (name, metric) for name in names for metric in ("cpu_time", "real_time")]
    # The aggregates-only file holds summaries (n = 3 repetitions): used as given.
    assert {row["candidate"]["n"] for row in rows} == {3}


@pytest.mark.parametrize(("name", "expected"), [
    ("hyperfine.json", "hyperfine"), ("pyperf_suite.json", "pyperf"), ("pytest_benchmark_summary.json",
                                                                     "pytest-benchmark"),
    ("google_benchmark_single.json", "google-benchmark"),
])
def test_the_format_is_told_by_the_keys(name, expected):
    assert detect_format((DATA / name).read_bytes()) == expected


def test_native_documents_and_single_numbers_are_detected():
    native = json.dumps({"project": {"name": "x"}, "results": [{"benchmark": "b", "samples": [1.0, 2.0]}]})

    assert detect_format(native.encode()) == "native"
    assert detect_format(b"1.5\n") == PLAIN
    assert detect_format(b"1.5\n1.6\n") == PLAIN


def test_native_summaries_are_used_as_given(tmp_path):
    def write(name: str, mean: float) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"results": [{"benchmark": "b", "metric": "rss", "unit": "B",
                                                 "summary": {"mean": mean, "subsession_size": 4,
                                                             "variance": 4.0, "n": 12}}]}))
        return path

    rows = compare_json("--files", write("a.json", 1000.0), write("b.json", 1100.0), "--format-a", "native")

    assert rows["b"]["baseline"] == pytest.approx({"mean": 1000.0, "variance": 4.0, "n": 12, "subsession_size": 4,
                                                   "half_width": scipy_stats.t.ppf(0.975, 11) * np.sqrt(4.0 / 12),
                                                   "independent": True})
    assert rows["b"]["pvalue"] == pytest.approx(welch_p((1100.0, 4.0, 12), (1000.0, 4.0, 12)), rel=1e-9)


# Errors.

def test_unknown_run_ids_are_named(runs):
    baseline, _ = runs

    with pytest.raises(CommandError, match=r"^unknown run ids: #999998, #999999\.$"):
        compare(999998, 999999)
    with pytest.raises(CommandError, match=r"^unknown run id: #999999\.$"):
        compare(baseline.pk, 999999)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(CommandError, match=r"^cannot read .*absent\.json: No such file or directory\.$"):
        compare("--files", tmp_path / "absent.json", DATA / "hyperfine.json")


@pytest.mark.parametrize(("content", "options", "message"), [
    (b"1.0\n2.0\nfast\n", [], r"bad\.txt: numbers: line 3: 'fast' is not a number\.$"),
    (b"1.0\nnan\n", [], r"bad\.txt: numbers: the values must be finite numbers"),
    (b"\xff\xfe\x00", [], r"bad\.txt: numbers: the file is neither JSON nor UTF-8 text\.$"),
    (b'{"something": []}', [], (r"bad\.txt: cannot tell the format from the file's keys; name it \(one of "
                               r"asv, google-benchmark, hyperfine, native, pyperf, pytest-benchmark, numbers\)\.$")),
    (b"1.0\n2.0\n", ["--format-a", "hyperfine"], r"bad\.txt: hyperfine: the file is not valid JSON"),
    (b'{"results": [{"benchmark": "b"}]}', [], r"bad\.txt: native: results\[0\]: Value error, give 'samples'"),
    (b'{"results": [{"benchmark": "b", "samples": [[1, 2], [3]]}]}', [],
     r"bad\.txt: native: results\[0\]\.samples: Value error, nested lists must be balanced"),
])
def test_a_file_that_cannot_be_parsed_is_named_with_its_format(tmp_path, content, options, message):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)

    with pytest.raises(CommandError, match=r"^cannot parse .*" + message):
        compare("--files", bad, DATA / "hyperfine.json", *options)


def test_no_common_series_is_an_error():
    with pytest.raises(CommandError, match=r"^no common series: the baseline has short-sleep \(time\), true \(time\); "
                                           r"the candidate has sleep 0\.002 \(time\), sleep 0\.004 \(time\)"):
        compare("--files", DATA / "hyperfine.json", DATA / "hyperfine_parameters.json")


def test_common_series_too_short_to_compare_is_an_error():
    with pytest.raises(CommandError, match=r"^no common series has at least 2 subsessions on both sides: "
                                           r"BM_SortVector/10000 \(cpu_time\)"):
        compare("--files", DATA / "google_benchmark_single.json", DATA / "google_benchmark_single.json")


@pytest.mark.parametrize(("arguments", "message"), [
    (["1", "2", "--files", "a", "b"], r"^give two run ids or --files BASELINE CANDIDATE, not both\.$"),
    ([], r"^give two run ids \(baseline, candidate\) or --files BASELINE CANDIDATE; got 0 run ids\.$"),
    (["1"], r"got 1 run id\.$"),
    (["1", "2", "--format-a", "pyperf"], r"^--format-a and --format-b describe files: they need --files\.$"),
    (["1", "2", "--alpha", "1"], r"^--alpha must be strictly between 0 and 1; got 1\.$"),
    (["1", "2", "--threshold", "-0.1"], r"^--threshold must be a finite number at least 0 .*got -0\.1\.$"),
    (["1", "2", "--seed", "3"], r"^--resamples and --seed set up the bootstrap: they need --bootstrap\.$"),
    (["1", "2", "--bootstrap", "--resamples", "10"], r"^--resamples must be at least 100; got 10\.$"),
    (["one", "2"], r"argument RUN: invalid int value: 'one'"),
    (["--files", "a"], r"argument --files: expected 2 arguments"),
    (["1", "2", "--format", "csv"], r"argument --format: invalid choice: 'csv'"),
    (["--files", "a", "b", "--format-b", "xml"], r"argument --format-b: invalid choice: 'xml'"),
])
def test_bad_options_are_refused_before_any_work(arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("compare", *arguments, stdout=StringIO())
