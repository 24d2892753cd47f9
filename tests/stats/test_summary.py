"""summarize_samples: a result's stored statistics, checked against numpy computed by hand."""

import math

import numpy as np
import pytest
from scipy import signal

from results.stats import summarize_samples


def lag1(x):
    d = x - x.mean()
    return float(np.sum(d[:-1] * d[1:]) / np.sum(d * d))


def obm(x, b):
    """Overlapping batch means (Meketon & Schmeiser), batch by batch."""
    n = x.size
    batches = np.array([x[i:i + b].mean() for i in range(n - b + 1)])
    return n * b / ((n - b) * (n - b + 1)) * np.sum((batches - x.mean()) ** 2)


def test_readings_pilots_diagnostic_finds_independent_keep_their_sample_variance():
    x = np.random.default_rng(1).normal(10.0, 1.0, size=200)
    assert abs(lag1(x)) <= 0.1  # Pilot's q = 1
    summary = summarize_samples(x)
    assert (summary.variance_method, summary.n, summary.sample_count, summary.independent) == \
        ("independent", 200, 200, True)
    assert summary.mean == pytest.approx(x.mean()) and summary.variance == pytest.approx(x.var(ddof=1))
    # Pilot's diagnostic beside it: q = 1, m = 200, r₁ of the readings.
    assert (summary.subsession_size, summary.subsessions) == (1, 200)
    assert summary.autocorrelation == pytest.approx(lag1(x))


def test_correlated_readings_store_the_lugsail_variance_of_the_mean_with_pilots_subsessions_beside_it():
    # AR(1), x_i = 0.9 x_{i-1} + e_i, by scipy's recursive filter.
    x = signal.lfilter([1.0], [1.0, -0.9], np.random.default_rng(2).normal(size=3000))
    summary = summarize_samples(x)
    b = 54  # ⌊√3000⌋
    lugsail = 2 * obm(x, b) - obm(x, b // 3)
    df = 3 * (3000 - b) // (2 * b)  # ⌊1.5 (n/b − 1)⌋
    assert summary.variance_method == "lugsail" and summary.n == df + 1 and summary.independent
    assert summary.variance / summary.n == pytest.approx(lugsail / 3000)
    assert summary.mean == pytest.approx(x.mean())
    # Pilot's q: the smallest size whose block means (oldest remainder dropped) have |r1| <= 0.1, by hand.
    q = summary.subsession_size
    expected = next(size for size in range(1, 301)
                    if abs(lag1(x[x.size % size:].reshape(-1, size).mean(axis=1))) <= 0.1)
    means = x[x.size % q:].reshape(-1, q).mean(axis=1)
    assert q == expected > 1 and summary.subsessions == means.size
    assert summary.subsession_variance == pytest.approx(means.var(ddof=1))
    pilot = summarize_samples(x, method="pilot")
    assert (pilot.variance_method, pilot.n, pilot.mean) == ("pilot", means.size, pytest.approx(means.mean()))
    assert pilot.variance == pytest.approx(means.var(ddof=1))


def test_too_few_readings_are_kept_as_units_but_marked():
    x = np.arange(10.0)
    summary = summarize_samples(x)
    assert (summary.n, summary.independent, summary.variance_method) == (10, False, "readings")
    assert summary.variance == pytest.approx(x.var(ddof=1))


def test_the_sample_variance_is_a_floor_where_pilots_diagnostic_sees_correlation():
    # Alternating blocks of ±1: Pilot merges them (q > 1), and batches of ⌊√n⌋ average to nearly nothing, so
    # the lugsail estimate falls below s², which is used instead.
    x = np.tile([1.0, 1.0, 1.0, -1.0, -1.0, -1.0], 40) + np.random.default_rng(4).normal(0.0, 0.01, 240)
    summary = summarize_samples(x)
    b = 15  # ⌊√240⌋
    assert summary.subsession_size > 1 and 2 * obm(x, b) - obm(x, b // 3) < x.var(ddof=1)
    assert (summary.variance_method, summary.n) == ("independent", 240)
    assert summary.variance == pytest.approx(x.var(ddof=1))


def test_a_trend_pilots_rule_cannot_merge_still_gets_a_variance_of_the_mean():
    # Spec §2a: "not yet valid" only when the estimator cannot work; Pilot's rule refuses every size here.
    x = np.arange(40.0)
    summary = summarize_samples(x)
    assert (summary.subsession_size, summary.subsessions, summary.independent) == (1, 0, True)
    assert summary.variance_method == "lugsail" and summary.variance / summary.n > x.var(ddof=1) / 40


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
    ([1.0, 2.0], {"method": "geyer"}, "`method`"),
])
def test_bad_input_names_the_parameter(samples, options, message):
    with pytest.raises(ValueError, match=message):
        summarize_samples(samples, **options)
