"""Coverage of 95% CIs of the mean of AR(1) data by estimators of the variance of the mean, at fixed n.

Run from the repository root::

    .venv/bin/python benchmarks/ar1_estimators.py [--repetitions 10000]

Why it exists: ``benchmarks/time_to_decision.py``'s AR(1) row (ρ = 0.7, 10% noise) asks for nominal
coverage at ≤ 1.3× the oracle n of 90 samples. This measures what any procedure that estimates the
variance from the data can reach at a FIXED n (no sequential stopping), against the exact variance:

- spec §2 subsessions (``results.stats.subsessions``: first q with |r_1| ≤ 0.1 and ≥ 10 blocks);
  replications where no q qualifies are left out and counted;
- batch means with 10 and with 20 batches (t with 9 / 19 df);
- the parametric AR(1) plug-in s²(1+r̂)/(1−r̂)/n, which knows the model;
- Newey–West with Bartlett weights, bandwidth ⌊n^(1/3)⌋;
- the exact variance of the mean (checks the generator: ≈ 0.95).

Each cell is coverage and, in brackets, the mean full CI width in % of the mean.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.stats import NotEnoughSamples, autocorrelation, subsessions

RHO, SD, MEAN = 0.7, 0.1, 1.0
SIZES = (117, 170, 300, 1000, 4000)  # 117 = 1.3 × the oracle n of 90


def ar1(rng, repetitions, n):
    """Stationary AR(1) rows: y_0 ~ N(0, 1), y_t = ρ y_{t−1} + √(1−ρ²) e_t."""
    shocks = rng.standard_normal((repetitions, n))
    shocks[:, 1:] *= np.sqrt(1 - RHO**2)
    return MEAN + SD * signal.lfilter([1.0], [1.0, -RHO], shocks, axis=1)


def exact_variance(n):
    lags = np.arange(1, n)
    return SD**2 / n**2 * (n + 2.0 * np.sum((n - lags) * RHO**lags))


def batch_means(x, batches):
    n = x.shape[1]
    size = n // batches
    means = x[:, n - batches * size:].reshape(x.shape[0], batches, size).mean(axis=2)
    return means.mean(axis=1), means.var(axis=1, ddof=1) / batches, batches - 1


def plug_in(x):
    r = np.minimum([autocorrelation(row) for row in x], 0.99)
    return x.mean(axis=1), x.var(axis=1, ddof=1) * (1 + r) / (1 - r) / x.shape[1], np.inf


def newey_west(x):
    n = x.shape[1]
    bandwidth = int(n ** (1 / 3))
    centred = x - x.mean(axis=1, keepdims=True)
    variance = (centred**2).sum(axis=1) / n
    for k in range(1, bandwidth + 1):
        variance += 2 * (1 - k / (bandwidth + 1)) * (centred[:, :-k] * centred[:, k:]).sum(axis=1) / n
    return x.mean(axis=1), variance / n, np.inf


def exact(x):
    return x.mean(axis=1), np.full(x.shape[0], exact_variance(x.shape[1])), np.inf


def section_2(x):
    means, variances, df = [], [], []
    for row in x:
        try:
            result = subsessions(row)
        except NotEnoughSamples:
            continue
        means.append(result.mean)
        variances.append(result.variance / result.n)
        df.append(result.n - 1)
    return np.array(means), np.array(variances), np.array(df, dtype=float)


ESTIMATORS = {
    "spec §2 subsessions (ρ_max 0.1)": section_2,
    "batch means, 10 batches": lambda x: batch_means(x, 10),
    "batch means, 20 batches": lambda x: batch_means(x, 20),
    "AR(1) plug-in (knows the model)": plug_in,
    "Newey-West, L = n^(1/3)": newey_west,
    "exact variance (generator check)": exact,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=10_000)
    args = parser.parse_args()
    started = time.perf_counter()
    cells = {name: [] for name in ESTIMATORS}
    missing = []
    for n in SIZES:
        x = ar1(np.random.default_rng(n), args.repetitions, n)
        for name, estimator in ESTIMATORS.items():
            means, variances, df = estimator(x)
            half_width = stats.t.ppf(0.975, df) * np.sqrt(variances)
            covered = np.abs(means - MEAN) <= half_width
            cells[name].append(f"{covered.mean():.3f} ({100 * np.mean(2 * half_width / means):.1f}%)")
            if estimator is section_2:
                missing.append(1 - means.size / args.repetitions)
    se = np.sqrt(0.95 * 0.05 / args.repetitions)
    print(f"AR(1) ρ = {RHO}, marginal sd {SD:.0%}; {args.repetitions} seeded series per n; coverage s.e. ≈ {se:.4f}")
    header = f"{'estimator':34}" + "".join(f"{'n = ' + str(n):>17}" for n in SIZES)
    print(header)
    print("-" * len(header))
    for name, row in cells.items():
        print(f"{name:34}" + "".join(f"{cell:>17}" for cell in row))
    print(f"{'§2: no valid q (left out)':34}" + "".join(f"{value:>17.3f}" for value in missing))
    print(f"\n{time.perf_counter() - started:.1f} s.")


if __name__ == "__main__":
    main()
