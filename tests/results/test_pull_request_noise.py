"""A pull request is one run against one run (spec §8, revision 2026-11-26): its interval carries the run-to-run
noise its series' nightly history measured; without such history it claims nothing; its alerts stay suspected;
its comment names every undecided change beyond the threshold."""

from datetime import timedelta

import numpy as np
import pytest
from django.test import Client
from scipy import stats

from results import comparisons, decisions, reports, selectors
from results.models import Alert, AlertState, Comparison, ComparisonMethod, Result, Run, Verdict
from tests.factories import NIGHT_ZERO, posted_run

RUN_SD = 0.03
BENCHMARKS = [f"bench {i}" for i in range(8)]


def nights_with_run_noise(count: int, *, seed: int = 7) -> None:
    """`count` nightly runs of main, each series at its own level tonight (3% run-to-run sd, 1% within), each
    compared as the worker does."""
    rng = np.random.default_rng(seed)
    for night in range(count):
        run = posted_run(night, {name: 1.0 + rng.normal(0.0, RUN_SD) for name in BENCHMARKS}, sd=0.01, n=30)
        comparisons.compare_run(run_id=run.pk)


def pull_request(night: int, factors: dict[str, float], *, level: float) -> int:
    head = posted_run(night, {name: factors.get(name, 1.0) * level for name in BENCHMARKS}, sd=0.01, n=30,
                      seed=1000 + night, kind="pr", branch="feature", commit="c" * 40,
                      base_commit=f"{night - 1:040x}", pull_request=12)
    comparisons.compare_run(run_id=head.pk)
    return head.pk


def pairwise(run_id: int) -> dict[str, Comparison]:
    return {c.candidate.metric.benchmark.name: c for c in Comparison.objects.filter(
        candidate__run_id=run_id, method=ComparisonMethod.PAIRWISE).select_related("candidate__metric__benchmark")}


@pytest.mark.django_db
def test_a_head_whose_run_landed_6_percent_off_its_base_is_no_regression_once_the_runs_own_level_is_in():
    nights_with_run_noise(14)
    base = Result.objects.get(run__started_at=NIGHT_ZERO + timedelta(days=13), metric__benchmark__name="bench 0")
    # The whole head run lands 6% above the base: two standard deviations of one run's level.
    head = pull_request(14, {}, level=base.mean * 1.06)

    stored = pairwise(head)["bench 0"]
    within_run = stats.ttest_ind_from_stats(stored.candidate.mean, np.sqrt(stored.candidate.variance),
                                            stored.candidate.n, base.mean, np.sqrt(base.variance), base.n,
                                            equal_var=False)
    assert stored.baseline_id == base.pk
    assert within_run.pvalue < 1e-6, "the subsessions alone call this a certain change"
    assert stored.verdict not in (Verdict.REGRESSION, decisions.SUSPECTED_REGRESSION)
    assert stored.pvalue > 0.01
    assert stored.inputs["run_variance"] > 0 and stored.inputs["run_df"] >= 2
    assert stored.inputs["run_noise_from"] == base.run_id


@pytest.mark.django_db
def test_a_15_percent_slowdown_is_still_found_and_its_alert_stays_suspected():
    nights_with_run_noise(14)
    head = pull_request(14, {"bench 0": 1.15, "bench 1": 1.15, "bench 2": 1.15}, level=1.0)

    stored = pairwise(head)
    found = [name for name in ("bench 0", "bench 1", "bench 2")
             if stored[name].verdict in (Verdict.REGRESSION, decisions.SUSPECTED_REGRESSION)]
    assert len(found) >= 2
    states = set(Alert.objects.filter(comparison__candidate__run_id=head).values_list("state", flat=True))
    assert states == {AlertState.SUSPECTED}


@pytest.mark.django_db
def test_without_nightly_history_a_pull_request_claims_nothing_and_says_why():
    posted_run(0, dict.fromkeys(BENCHMARKS, 1.0), sd=0.01, n=30)
    head = pull_request(1, {"bench 0": 1.2}, level=1.0)

    stored = pairwise(head)["bench 0"]
    assert stored.verdict == Verdict.INCONCLUSIVE and stored.pvalue is None
    assert stored.inputs["within_run_pvalue"] < 1e-6
    assert not Alert.objects.filter(comparison__candidate__run_id=head).exists()
    review = selectors.pr_review(run_id=head, viewer=None)
    summary = reports.pr_summary(review)
    assert summary["regressions"] == 0
    assert "bench 0 (time)" in summary["beyond_threshold"]
    assert len(summary["run_noise_unknown"]) == len(BENCHMARKS)
    markdown = reports.pr_markdown(review)
    assert "`bench 0 (time)`" in markdown
    assert "one run each, run-to-run noise unknown" in markdown
    page = Client().get(f"/runs/{head}/pr/").content.decode()
    assert "run-to-run noise unknown" in page and "Undecided, estimate beyond its threshold" in page


@pytest.mark.django_db
def test_an_undecided_change_beyond_the_threshold_is_named_in_the_comment_and_the_summary():
    nights_with_run_noise(14)
    # +7% at 3% run-to-run noise: beyond ±2%, but one run each cannot decide it.
    head = pull_request(14, {"bench 3": 1.07}, level=1.0)

    review = selectors.pr_review(run_id=head, viewer=None)
    row = next(row for row in review.rows if row.benchmark == "bench 3")
    assert row.verdict == Verdict.INCONCLUSIVE and row.ratio > 1.04
    assert "bench 3 (time)" in reports.pr_summary(review)["beyond_threshold"]
    markdown = reports.pr_markdown(review)
    assert "`bench 3 (time)`" in markdown and "What would decide the suspected and undecided ones" in markdown
    quiet = [row.label for row in review.rows if abs(row.ratio - 1) <= row.threshold]
    assert quiet and not any(f"`{label}`" in markdown for label in quiet)


@pytest.mark.django_db
def test_a_busier_machine_for_the_head_is_said_on_the_page_the_comment_the_summary_and_compare():
    nights_with_run_noise(4)
    head = pull_request(4, {}, level=1.0)
    base = Result.objects.filter(run__started_at=NIGHT_ZERO + timedelta(days=3)).first().run
    Run.objects.filter(pk=base.pk).update(environment={"load_avg_1min": 3.3, "cpu_count": 4})
    Run.objects.filter(pk=head).update(environment={"load_avg_1min": 4.7, "cpu_count": 4})

    review = selectors.pr_review(run_id=head, viewer=None)
    said = "the machine's load differed: 3.3 for the base, 4.7 for the head"
    assert reports.pr_summary(review)["machine_state"][0].startswith(said)
    assert "⚠ The machine's load differed: 3.3 for the base, 4.7 for the head" in reports.pr_markdown(review)
    assert "The machine&#x27;s load differed: 3.3 for the base" in Client().get(f"/runs/{head}/pr/").content.decode()
    compare = Client().get("/compare/", {"baseline": base.pk, "candidate": head}).content.decode()
    assert "The machine&#x27;s load differed: 3.3 for the baseline, 4.7 for the candidate" in compare
