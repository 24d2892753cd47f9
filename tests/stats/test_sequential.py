"""The anytime-valid A/B comparison (spec §5; Johari et al. 2017, Howard et al. 2021): the mixture likelihood
ratio against a numerical integral, its error rate under continuous monitoring against simulations with a known
truth, and its decisions."""

import numpy as np
import pytest
from scipy import integrate, stats

from results.stats import sequential_comparison, sequential_half_width, welch_test


def test_the_likelihood_ratio_is_the_normal_mixture_integrated_numerically():
    # Λ = ∫ N(D; δ, V) N(δ; 0, τ²) dδ / N(D; 0, V), on the normal scale (large df: t and normal agree).
    mean_a, mean_b, variance, n = 1.0, 1.03, 0.02, 10_000_000
    result = sequential_comparison(mean_a, variance * n / 2, n, mean_b, variance * n / 2, n, mixture_scale=0.02)
    v, tau = variance, 0.02 * (mean_a + mean_b) / 2
    d = mean_b - mean_a
    numerator = integrate.quad(lambda delta: stats.norm.pdf(d, delta, np.sqrt(v)) * stats.norm.pdf(delta, 0, tau),
                               -1, 1, points=[0.0, d], limit=200)[0]
    assert result.likelihood_ratio == pytest.approx(numerator / stats.norm.pdf(d, 0, np.sqrt(v)), rel=1e-6)
    assert result.pvalue == pytest.approx(min(1.0, 1.0 / result.likelihood_ratio))


def test_the_sequence_is_the_set_of_differences_the_test_would_not_reject():
    result = sequential_comparison(1.0, 0.04, 50, 1.06, 0.05, 60, alpha=0.01, mixture_scale=0.02)
    for edge in (result.low, result.high):
        # Testing "difference = edge" is testing B − edge against A with the same τ (the scale is relative to
        # the mean of the two means, so it is rescaled); at an edge of the sequence Λ is exactly 1/α.
        shifted = sequential_comparison(1.0, 0.04, 50, 1.06 - edge, 0.05, 60, alpha=0.01,
                                        mixture_scale=0.02 * 2.06 / (2.06 - edge))
        assert shifted.likelihood_ratio == pytest.approx(100.0, rel=1e-6)
    assert result.different == (result.low > 0 or result.high < 0) == (result.pvalue <= 0.01)


def test_half_width_formula():
    v, tau2, alpha = 0.3, 0.5, 0.05
    expected = np.sqrt((v + tau2) / tau2 * (2 * np.log(1 / alpha) + np.log((v + tau2) / v)))
    assert sequential_half_width(v, tau2, alpha=alpha) == pytest.approx(expected)
    with pytest.raises(ValueError, match="`variance`"):
        sequential_half_width(0.0, tau2, alpha=alpha)
    with pytest.raises(ValueError, match="`alpha`"):
        sequential_half_width(v, tau2, alpha=1.5)


def monitored(delta, *, sd=0.1, sessions=4000, looks=500, first_look=10, seed=0, scale=0.02):
    """Looking after every pair of readings (i.i.d. normal, B = A + delta): for each session, the first look at
    which the rule decides a difference (or -1), the anytime rule and the one-look Welch test at the same α."""
    rng = np.random.default_rng(seed)
    a = 1.0 + sd * rng.standard_normal((sessions, looks))
    b = 1.0 + delta + sd * rng.standard_normal((sessions, looks))
    n = np.arange(1, looks + 1)
    ma, mb = np.cumsum(a, 1) / n, np.cumsum(b, 1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        va = (np.cumsum(a**2, 1) - n * ma**2) / (n - 1)
        vb = (np.cumsum(b**2, 1) - n * mb**2) / (n - 1)
    at = slice(first_look - 1, None)
    counts = n[at]
    anytime = sequential_comparison(ma[:, at], va[:, at], counts, mb[:, at], vb[:, at], counts, alpha=0.01,
                                     mixture_scale=scale)
    welch = welch_test(mb[:, at], vb[:, at], counts, ma[:, at], va[:, at], counts).pvalue < 0.01
    return anytime, welch


def test_identical_workloads_are_declared_different_at_most_alpha_of_the_time_however_often_one_looks():
    anytime, welch = monitored(0.0)
    false_rate = anytime.different.any(axis=1).mean()
    # 4,000 sessions of 491 looks: the rule's rate must stay below α = 1% (Wilson upper bound well under 1.5%);
    # Welch's p at every look, Pilot's rule, exceeds it several times over.
    assert false_rate <= 0.01
    assert welch.any(axis=1).mean() > 0.05
    # The sequence covers the true difference (0) at every look at once.
    assert ((anytime.low > 0) | (anytime.high < 0)).any(axis=1).mean() <= 0.01


def test_a_five_percent_difference_is_decided_right_sooner_than_the_fixed_sample_test_needs():
    anytime, _ = monitored(0.05, sessions=2000)
    decided = anytime.different.any(axis=1)
    first = np.where(decided, anytime.different.argmax(axis=1) + 10, 10**6)
    right = decided & (anytime.difference[np.arange(first.size), np.minimum(first - 10, 490)] > 0)
    assert right.mean() >= 0.99
    # The fixed-sample Welch test at α = 1% with 90% power needs 2·(z₀.₉₉₅ + z₀.₉)²·(0.1/0.05)² ≈ 119 per side.
    oracle = 2 * (stats.norm.ppf(0.995) + stats.norm.ppf(0.9)) ** 2 * 4
    assert np.median(first) <= oracle


def test_equivalence_is_declared_only_inside_the_band():
    tight = sequential_comparison(1.0, 0.0001, 1000, 1.001, 0.0001, 1000, threshold=0.02)
    assert tight.equivalent and not tight.different
    shifted = sequential_comparison(1.0, 0.0001, 1000, 1.03, 0.0001, 1000, threshold=0.02)
    assert shifted.different and not shifted.equivalent
    assert shifted.ratio_low > 1.02


def test_broadcasts_and_handles_certain_differences():
    result = sequential_comparison([1.0, 1.0, 1.0], [0.0, 0.0, 0.01], 10, [1.0, 2.0, 1.0], [0.0, 0.0, 0.01], 10)
    np.testing.assert_array_equal(result.different, [False, True, False])
    np.testing.assert_array_equal(result.pvalue[:2], [1.0, 0.0])
    with pytest.raises(ValueError, match="`mixture_scale`"):
        sequential_comparison(1.0, 0.01, 10, 1.0, 0.01, 10, mixture_scale=0.0)
    with pytest.raises(ValueError, match="`n_b`"):
        sequential_comparison(1.0, 0.01, 10, 1.0, 0.01, 1)
