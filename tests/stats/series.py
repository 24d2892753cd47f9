"""Simulated series with a known truth, shared by the statistics' tests."""

import math

from scipy import signal


def ar1(rng, size, length, rho):
    """`size` stationary AR(1) series x_i = rho x_{i-1} + e_i with standard normal innovations (mean 0)."""
    noise = rng.standard_normal((size, length))
    noise[:, 0] /= math.sqrt(1.0 - rho**2)
    return signal.lfilter([1.0], [1.0, -rho], noise, axis=-1)
