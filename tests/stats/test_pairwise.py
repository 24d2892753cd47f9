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
