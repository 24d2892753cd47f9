"""Two stored summaries compared: Welch (checked against scipy), Fieller (the spec §6 formula), verdicts."""

import numpy as np
import pytest
from scipy import stats

from results.stats import Verdict, compare_summaries


def test_welch_and_fieller_agree_with_independent_computations():
    result = compare_summaries(1.06, 0.004, 30, 1.00, 0.003, 25)

    scipy_welch = stats.ttest_ind_from_stats(1.06, np.sqrt(0.004), 30, 1.00, np.sqrt(0.003), 25, equal_var=False)
    assert (result.statistic, result.pvalue) == (pytest.approx(scipy_welch.statistic, rel=1e-12),
                                                 pytest.approx(scipy_welch.pvalue, rel=1e-10))
    errors = np.array([0.004 / 30, 0.003 / 25])
    satterthwaite = errors.sum() ** 2 / (errors[0] ** 2 / 29 + errors[1] ** 2 / 24)
    assert result.df == pytest.approx(satterthwaite)
    h2 = stats.t.ppf(0.975, satterthwaite) ** 2  # the test's ν, not n + n_b − 2 (spec §5)
    a = 1.0 - h2 * 0.003 / 25
    product = 1.06
    root = np.sqrt(product**2 - a * (1.06**2 - h2 * 0.004 / 30))
    assert (result.low, result.high) == (pytest.approx((product - root) / a), pytest.approx((product + root) / a))
    assert result.verdict is Verdict.REGRESSION


def test_each_series_uses_its_own_threshold_and_direction():
    result = compare_summaries([1.06, 1.06, 1.06], [0.004] * 3, [30] * 3, [1.0] * 3, [0.003] * 3, [25] * 3,
                               threshold=[0.02, 0.2, 0.02],
                               direction=["lower_is_better", "lower_is_better", "higher_is_better"])

    assert list(result.verdict) == [Verdict.REGRESSION, Verdict.NO_CHANGE, Verdict.IMPROVEMENT]


def test_a_baseline_indistinguishable_from_zero_gives_an_unbounded_inconclusive_ratio():
    result = compare_summaries(1.0, 0.01, 5, 0.01, 1.0, 3)

    assert not result.bounded
    assert (result.low, result.high) == (-np.inf, np.inf)
    assert result.verdict is Verdict.INCONCLUSIVE


def test_invalid_direction_is_named():
    with pytest.raises(ValueError, match="direction"):
        compare_summaries(1.0, 0.01, 5, 1.0, 0.01, 5, direction="sideways")


# --- Two runs: the run-to-run component carried in (spec §8, revision 2026-11-26 on pull requests) ---------


def test_a_zero_run_to_run_component_is_welchs_test():
    plain = compare_summaries(1.06, 0.004, 30, 1.00, 0.003, 25)
    carried = compare_summaries(1.06, 0.004, 30, 1.00, 0.003, 25, run_variance=0.0, run_df=9)

    assert (carried.statistic, carried.pvalue, carried.df) == (pytest.approx(plain.statistic),
                                                               pytest.approx(plain.pvalue), pytest.approx(plain.df))
    assert (carried.low, carried.high) == (pytest.approx(plain.low), pytest.approx(plain.high))


def test_the_run_component_enters_both_means_and_satterthwaites_df():
    run_variance, run_df = 0.0009, 13
    result = compare_summaries(1.06, 0.004, 30, 1.00, 0.003, 25, run_variance=run_variance, run_df=run_df)

    within = 0.004 / 30 + 0.003 / 25
    welch_nu = within**2 / ((0.004 / 30) ** 2 / 29 + (0.003 / 25) ** 2 / 24)
    total = within + 2 * run_variance
    nu = total**2 / (within**2 / welch_nu + (2 * run_variance) ** 2 / run_df)
    assert result.df == pytest.approx(nu)
    assert result.statistic == pytest.approx(0.06 / np.sqrt(total))
    assert result.pvalue == pytest.approx(2 * stats.t.sf(0.06 / np.sqrt(total), nu))


def test_an_unchanged_head_against_its_base_is_rarely_a_regression_with_the_run_component():
    """A/A through the core: 3% run-to-run sd, 1% within-run sd of 20 subsessions, σ_b² estimated from 14
    nights of history (method of moments, written here), 4,000 pull requests. Within-run variance alone calls
    most of them changed (the failure the spec's revision records); with the component the interval covers
    the true ratio at its level and few are called regressions."""
    rng = np.random.default_rng(20261126)
    reps, nights, units, run_sd, unit_sd = 4_000, 14, 20, 0.03, 0.01

    def runs(count):
        levels = 1.0 + rng.normal(0.0, run_sd, size=(reps, count, 1))
        values = levels + rng.normal(0.0, unit_sd, size=(reps, count, units))
        return values.mean(axis=-1), values.var(axis=-1, ddof=1)

    history_means, history_variances = runs(nights)
    estimate = np.maximum(history_means.var(axis=1, ddof=1) - (history_variances / units).mean(axis=1), 0.0)
    (head, head_var), (base, base_var) = (tuple(side[:, 0] for side in runs(1)) for _ in range(2))

    plain = compare_summaries(head, head_var, units, base, base_var, units)
    carried = compare_summaries(head, head_var, units, base, base_var, units, run_variance=estimate,
                                run_df=nights - 1)

    assert np.mean((plain.low <= 1) & (1 <= plain.high)) < 0.5
    covered = np.mean((carried.low <= 1) & (1 <= carried.high))
    assert 0.93 <= covered <= 0.975
    assert np.mean(carried.verdict == Verdict.REGRESSION) <= 0.03
    assert np.mean(carried.pvalue < 0.05) == pytest.approx(0.05, abs=0.02)


def test_a_run_component_needs_its_degrees_of_freedom():
    with pytest.raises(ValueError, match="run_df"):
        compare_summaries(1.0, 0.01, 5, 1.0, 0.01, 5, run_variance=0.001)
    with pytest.raises(ValueError, match="run_variance"):
        compare_summaries(1.0, 0.01, 5, 1.0, 0.01, 5, run_variance=-0.001, run_df=9)
