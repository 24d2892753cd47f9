"""The t and normal functions of the numerical core are scipy.stats' own, bit for bit (they call the same
scipy.special functions without importing scipy.stats), and so is Welch's test built on them."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from results.stats import _distributions as distributions
from results.stats import welch_test

ROOT = Path(__file__).resolve().parents[2]
rng = np.random.default_rng(20261124)
# Probabilities across (0, 1) with both tails and the edges; degrees of freedom from 1 to effectively normal.
PROBABILITIES = np.concatenate([rng.uniform(0, 1, 2000), 10.0 ** -rng.uniform(1, 300, 500),
                                1 - 10.0 ** -rng.uniform(1, 16, 500), [0.0, 0.5, 1.0, 0.975, 0.995, np.nan]])
POINTS = np.concatenate([rng.normal(0, 3, 2000), rng.normal(0, 200, 500), [0.0, -0.0, np.inf, -np.inf, np.nan]])
DEGREES = np.concatenate([rng.integers(1, 40, 1000).astype(float), rng.uniform(1, 1e6, 1000), [1.0, 1e12, np.inf]])


def same(ours, theirs) -> bool:
    return np.array_equal(np.asarray(ours), np.asarray(theirs), equal_nan=True)


@pytest.mark.parametrize(("ours", "theirs", "grid"), [
    (distributions.t_quantile, stats.t.ppf, PROBABILITIES),
    (distributions.t_inverse_survival, stats.t.isf, PROBABILITIES),
    (distributions.t_survival, stats.t.sf, POINTS),
])
def test_student_t_is_scipy_stats(ours, theirs, grid):
    values = np.resize(grid, DEGREES.size)

    assert same(ours(values, DEGREES), theirs(values, DEGREES))
    assert same(ours(values[:, None], DEGREES[None, :50]), theirs(values[:, None], DEGREES[None, :50]))
    assert same(ours(0.975, 7), theirs(0.975, 7)) and np.ndim(ours(0.975, 7)) == 0


@pytest.mark.parametrize(("ours", "theirs", "grid"), [
    (distributions.normal_quantile, stats.norm.ppf, PROBABILITIES),
    (distributions.normal_inverse_survival, stats.norm.isf, PROBABILITIES),
    (distributions.normal_survival, stats.norm.sf, POINTS),
])
def test_normal_is_scipy_stats(ours, theirs, grid):
    assert same(ours(grid), theirs(grid))
    assert same(ours(0.975), theirs(0.975))


def test_welch_test_is_scipy_stats_ttest_ind_from_stats():
    size = 5000
    means = rng.normal(0, 10, (2, size)) * 10.0 ** rng.integers(-6, 6, (2, size))
    variances = rng.uniform(0, 3, (2, size)) * 10.0 ** rng.integers(-12, 4, (2, size))
    counts = rng.integers(5, 400, (2, size))
    variances[1, :100] = 0.0  # one side without spread

    ours = welch_test(means[0], variances[0], counts[0], means[1], variances[1], counts[1])
    theirs = stats.ttest_ind_from_stats(means[0], np.sqrt(variances[0]), counts[0], means[1], np.sqrt(variances[1]),
                                        counts[1], equal_var=False)

    assert same(ours.statistic, theirs.statistic) and same(ours.pvalue, theirs.pvalue)


def test_the_numerical_core_leaves_scipy_stats_unimported():
    probe = ("import sys, numpy as np; from results import stats; "
             "stats.compare_summaries(1.1, 0.01, 20, 1.0, 0.01, 20); stats.summarize_samples(np.linspace(1, 2, 50)); "
             "print('scipy.stats' in sys.modules)")

    found = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)

    assert found.stdout.strip() == "False"
