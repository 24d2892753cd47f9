"""summarize_samples: a result's stored statistics, checked against numpy computed by hand."""

import math

import numpy as np
import pytest
from scipy import signal

from results.stats import summarize_samples


def lag1(x):
    d = x - x.mean()
    return float(np.sum(d[:-1] * d[1:]) / np.sum(d * d))


def test_independent_readings_are_their_own_units():
    x = np.random.default_rng(1).normal(10.0, 1.0, size=200)
    assert abs(lag1(x)) <= 0.1
    summary = summarize_samples(x)
    assert (summary.subsession_size, summary.n, summary.sample_count, summary.independent) == (1, 200, 200, True)
    assert summary.mean == pytest.approx(x.mean()) and summary.variance == pytest.approx(x.var(ddof=1))
    assert summary.autocorrelation == pytest.approx(lag1(x))


def test_correlated_readings_are_merged_until_the_block_means_are_uncorrelated():
    # AR(1), x_i = 0.9 x_{i-1} + e_i, by scipy's recursive filter.
    x = signal.lfilter([1.0], [1.0, -0.9], np.random.default_rng(2).normal(size=3000))
    summary = summarize_samples(x)
    q = summary.subsession_size
    # The smallest size whose block means (oldest remainder dropped) have |r1| <= 0.1, found by hand.
    expected = next(size for size in range(1, 301)
                    if abs(lag1(x[x.size % size:].reshape(-1, size).mean(axis=1))) <= 0.1)
    means = x[x.size % q:].reshape(-1, q).mean(axis=1)
    assert q == expected > 1 and summary.n == means.size and summary.independent
    assert summary.mean == pytest.approx(means.mean()) and summary.variance == pytest.approx(means.var(ddof=1))


def test_readings_no_size_makes_independent_are_kept_but_marked():
    x = np.arange(40.0)  # a trend: every block size stays correlated
    summary = summarize_samples(x)
    assert (summary.subsession_size, summary.n, summary.independent) == (1, 40, False)
    assert summary.variance == pytest.approx(x.var(ddof=1))


def test_levelled_samples_take_the_top_level_means_as_units():
    samples = np.random.default_rng(3).normal(size=(6, 4, 5))
    summary = summarize_samples(samples)
    tops = samples.mean(axis=(1, 2))
    assert (summary.subsession_size, summary.n, summary.sample_count) == (20, 6, 120)
    assert summary.mean == pytest.approx(tops.mean()) and summary.variance == pytest.approx(tops.var(ddof=1))


def test_one_or_two_units_have_no_autocorrelation_and_one_no_variance():
    single = summarize_samples([3.0])
    assert single.variance == 0.0 and math.isnan(single.autocorrelation) and not single.independent
    assert math.isnan(summarize_samples(np.ones((2, 3))).autocorrelation)


@pytest.mark.parametrize(("samples", "options", "message"), [
    ([], {}, "`samples` must not be empty"),
    ([1.0, np.nan], {}, "`samples` must not contain NaN"),
    ([1.0, 2.0], {"max_autocorrelation": 1.0}, "`max_autocorrelation`"),
    ([1.0, 2.0], {"min_subsessions": 2}, "`min_subsessions`"),
])
def test_bad_input_names_the_parameter(samples, options, message):
    with pytest.raises(ValueError, match=message):
        summarize_samples(samples, **options)
