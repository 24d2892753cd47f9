"""Simulated coverage of the confidence intervals in ``results.stats`` (spec §9).

Run from the repository root::

    .venv/bin/python benchmarks/coverage.py [--replications 10000] [--bootstrap-replications 500]

Each row draws seeded data with a known true value, builds a 95% interval per replication and prints
the fraction of intervals that contain the truth, with its binomial standard error. A correct method
should be near 0.950; rows marked "wrong" show what ignoring autocorrelation or the hierarchy does.
The last table is the A/A false-alarm rate (K&J §8.3) of the verdict for several thresholds.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# Import from this checkout whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.stats import (
    NotEnoughSamples,
    Verdict,
    mean_interval,
    ratio_bootstrap,
    ratio_fieller_from_stats,
    subsessions,
    verdict,
)

SHAPE = (20, 5, 5)  # builds x executions x measurements
# Relative standard deviations of the random effects, bottom-up: measurement, execution, build.
HIERARCHIES = {
    "3-level normal, balanced (5%/5%/3%)": (0.05, 0.05, 0.03),
    "3-level normal, build-dominated (1%/1%/5%)": (0.01, 0.01, 0.05),
    "3-level normal, measurement-dominated (10%/2%/0.5%)": (0.10, 0.02, 0.005),
}


def ar1(rng, size, length, rho):
    noise = rng.standard_normal((size, length))
    series = np.empty_like(noise)
    series[:, 0] = noise[:, 0] / np.sqrt(1 - rho**2)
    for i in range(1, length):
        series[:, i] = rho * series[:, i - 1] + noise[:, i]
    return series


def hierarchical(rng, mean, deviations, size, *, lognormal=False):
    levels = len(SHAPE)
    effects = np.zeros((size,) + SHAPE)
    for level, deviation in enumerate(deviations):
        effects = effects + deviation * rng.standard_normal((size,) + SHAPE[: levels - level] + (1,) * level)
    if lognormal:
        # Multiplicative effects; E[exp(sum)] = exp(sum of variances / 2), the same on both sides.
        return mean * np.exp(effects - np.sum(np.square(deviations)) / 2)
    return mean * (1.0 + effects)


def top_statistics(data):
    top = data.reshape(data.shape[0], data.shape[1], -1).mean(axis=2)
    return top.mean(axis=1), top.var(axis=1, ddof=1), top.shape[1]


def flat_statistics(data):
    flat = data.reshape(data.shape[0], -1)
    return flat.mean(axis=1), flat.var(axis=1, ddof=1), flat.shape[1]


def subsession_intervals(series, **options):
    lows, highs = [], []
    for x in series:
        try:
            interval = subsessions(x, **options).confidence_interval()
        except NotEnoughSamples:
            continue
        lows.append(interval.low)
        highs.append(interval.high)
    return np.array(lows), np.array(highs)


def mean_rows(replications):
    rng = np.random.default_rng(1)
    rows = []
    for name, series, truth in [
        ("i.i.d. normal, n=300", rng.normal(10.0, 2.0, (replications, 300)), 10.0),
        ("i.i.d. log-normal (sigma 0.5), n=300", rng.lognormal(0.0, 0.5, (replications, 300)), np.exp(0.125)),
    ]:
        rows.append((f"mean, {name}, subsessions", *subsession_intervals(series), truth, replications))
    series = ar1(rng, replications, 1000, 0.7)
    rows.append(("mean, AR(1) rho=0.7, n=1000, subsessions (rho_max 0.1)", *subsession_intervals(series), 0.0,
                 replications))
    rows.append(("mean, AR(1) rho=0.7, n=1000, subsessions (rho_max 0.05)",
                 *subsession_intervals(series, max_autocorrelation=0.05), 0.0, replications))
    naive = mean_interval(series.mean(axis=1), series.var(axis=1, ddof=1), series.shape[1])
    rows.append(("mean, AR(1) rho=0.7, n=1000, raw samples q=1 (wrong)", naive.low, naive.high, 0.0, replications))
    # Four times the data does not bring §2 to 0.95: the first q with |r_1| <= 0.1 leaves block means whose
    # true lag-1 correlation is up to 0.1, so s_q^2/m underestimates Var(mean) by about 1 + 2 * 0.1 and the
    # coverage tends to P(|Z| < 1.96 / sqrt(1.19)) = 0.93 however long the series.
    series = ar1(rng, replications, 4000, 0.7)
    rows.append(("mean, AR(1) rho=0.7, n=4000, subsessions (rho_max 0.1)", *subsession_intervals(series), 0.0,
                 replications))
    return rows


def fieller_rows(replications):
    rng = np.random.default_rng(2)
    rows = []
    scenarios = [(name, deviations, False) for name, deviations in HIERARCHIES.items()]
    scenarios.append(("3-level log-normal (5%/5%/3%)", HIERARCHIES["3-level normal, balanced (5%/5%/3%)"], True))
    for name, deviations, lognormal in scenarios:
        new = hierarchical(rng, 1.1, deviations, replications, lognormal=lognormal)
        old = hierarchical(rng, 1.0, deviations, replications, lognormal=lognormal)
        result = ratio_fieller_from_stats(*top_statistics(new), *top_statistics(old))
        rows.append((f"ratio Fieller, {name}", result.low, result.high, 1.1, replications))
        if not lognormal:
            flat = ratio_fieller_from_stats(*flat_statistics(new), *flat_statistics(old))
            rows.append((f"ratio Fieller, {name}, levels ignored (wrong)", flat.low, flat.high, 1.1, replications))
    new = ar1(rng, replications, 1000, 0.7) + 110.0
    old = ar1(rng, replications, 1000, 0.7) + 100.0
    lows, highs = [], []
    for a, b in zip(new, old):
        try:
            first, second = subsessions(a), subsessions(b)
        except NotEnoughSamples:
            continue
        result = ratio_fieller_from_stats(first.mean, first.variance, first.n, second.mean, second.variance, second.n)
        lows.append(result.low)
        highs.append(result.high)
    rows.append(("ratio Fieller, AR(1) rho=0.7 (sd 1.4 around 110/100), subsession means",
                 np.array(lows), np.array(highs), 1.1, replications))
    return rows


def bootstrap_rows(replications):
    rng = np.random.default_rng(3)
    rows = []
    for name, deviations in HIERARCHIES.items():
        new = hierarchical(rng, 1.1, deviations, replications)
        old = hierarchical(rng, 1.0, deviations, replications)
        results = [ratio_bootstrap(new[i], old[i], n_resamples=999, rng=i) for i in range(replications)]
        rows.append((f"ratio bootstrap RRR (999 resamples), {name}",
                     np.array([r.low for r in results]), np.array([r.high for r in results]), 1.1, replications))
    return rows


def false_alarm_rows(replications):
    rng = np.random.default_rng(4)
    deviations = HIERARCHIES["3-level normal, balanced (5%/5%/3%)"]
    a = hierarchical(rng, 1.0, deviations, replications)
    b = hierarchical(rng, 1.0, deviations, replications)
    result = ratio_fieller_from_stats(*top_statistics(a), *top_statistics(b))
    rows = []
    for threshold in (0.0, 0.01, 0.02, 0.05):
        verdicts = verdict(result.low, result.high, threshold=threshold)
        alarms = np.isin(verdicts, [Verdict.REGRESSION, Verdict.IMPROVEMENT])
        no_change = verdicts == Verdict.NO_CHANGE
        rows.append((threshold, alarms.mean(), no_change.mean()))
    return rows


def print_coverage(rows):
    print(f"{'scenario':<84} {'reps':>6} {'valid':>6} {'coverage':>9} {'s.e.':>6}")
    for name, low, high, truth, replications in rows:
        covered = (low <= truth) & (truth <= high)
        coverage = covered.mean()
        error = np.sqrt(coverage * (1 - coverage) / covered.size)
        print(f"{name:<84} {replications:>6} {covered.size:>6} {coverage:>9.4f} {error:>6.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=10_000)
    parser.add_argument("--bootstrap-replications", type=int, default=500)
    options = parser.parse_args()
    start = time.perf_counter()
    print("95% interval coverage (seeded; 'valid' = replications where subsession analysis succeeded)\n")
    rows = mean_rows(options.replications) + fieller_rows(options.replications)
    rows += bootstrap_rows(options.bootstrap_replications)
    print_coverage(rows)
    print(f"\nA/A false alarms, Fieller, 3-level normal 5%/5%/3%, {SHAPE}, {options.replications} replications")
    print(f"{'threshold':>9} {'alarm rate':>11} {'no change':>10}")
    for threshold, alarms, no_change in false_alarm_rows(options.replications):
        print(f"{threshold:>9.0%} {alarms:>11.4f} {no_change:>10.4f}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
