"""Speed of the numerical core, ``results.stats``.

Run from the repository root::

    .venv/bin/python benchmarks/stats_speed.py

Each entry of ``MEASUREMENTS`` is a function returning rows of (what, figure); the script prints
them as one table. Times are the best of a few repeats (wall clock, this machine).
Targets: ``ratio_bootstrap`` with 10^4 resamples on 20x10x50 data per side <= 1 s; Welch and
Fieller vectorized over 10,000 series >= 20x faster than a per-series loop.
"""

import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

# Import from this checkout whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.stats import (
    edm,
    ratio_bootstrap,
    ratio_fieller_from_stats,
    subsessions,
    variance_components,
    welch_test,
)

SERIES = 10_000


def best_time(function, repeats=5):
    """Best wall-clock time of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def hierarchical_pair():
    rng = np.random.default_rng(0)
    shape = (20, 10, 50)

    def side(mean):
        return mean * (
            1.0
            + 0.04 * rng.standard_normal((shape[0], 1, 1))
            + 0.06 * rng.standard_normal(shape[:2] + (1,))
            + 0.05 * rng.standard_normal(shape)
        )

    return side(1.05), side(1.0)


def summary_statistics():
    rng = np.random.default_rng(1)
    return (
        rng.normal(10.5, 1.0, SERIES), rng.gamma(2.0, size=SERIES), rng.integers(5, 40, SERIES),
        rng.normal(10.0, 1.0, SERIES), rng.gamma(2.0, size=SERIES), rng.integers(5, 40, SERIES),
    )


def measure_bootstrap():
    new, old = hierarchical_pair()
    seconds = best_time(lambda: ratio_bootstrap(new, old, n_resamples=10_000, rng=0), repeats=3)
    verdict = "meets" if seconds <= 1.0 else "MISSES"
    return [("ratio_bootstrap, 10^4 resamples, 20x10x50 per side", f"{seconds:.3f} s ({verdict} <= 1 s)")]


def measure_welch_and_fieller():
    args = summary_statistics()
    mean_a, var_a, n_a, mean_b, var_b, n_b = args

    def welch_loop():
        for i in range(SERIES):
            stats.ttest_ind_from_stats(
                mean_a[i], np.sqrt(var_a[i]), n_a[i], mean_b[i], np.sqrt(var_b[i]), n_b[i], equal_var=False
            )

    def fieller_loop():
        limits = []
        for i in range(SERIES):
            h2 = stats.t.ppf(0.975, n_a[i] + n_b[i] - 2) ** 2
            a = mean_b[i] ** 2 - h2 * var_b[i] / n_b[i]
            if a > 0:
                product = mean_a[i] * mean_b[i]
                root = np.sqrt(product**2 - a * (mean_a[i] ** 2 - h2 * var_a[i] / n_a[i]))
                limits.append(((product - root) / a, (product + root) / a))

    welch = best_time(lambda: welch_test(*args))
    fieller = best_time(lambda: ratio_fieller_from_stats(*args))
    welch_scalar = best_time(welch_loop, repeats=1)
    fieller_scalar = best_time(fieller_loop, repeats=1)
    both, both_scalar = welch + fieller, welch_scalar + fieller_scalar
    return [
        (f"welch_test, {SERIES} series vectorized", f"{welch * 1e3:.1f} ms"),
        (f"scipy ttest_ind_from_stats, {SERIES} series one by one", f"{welch_scalar * 1e3:.0f} ms"),
        (f"ratio_fieller_from_stats, {SERIES} series vectorized", f"{fieller * 1e3:.1f} ms"),
        (f"Fieller with scipy t.ppf, {SERIES} series one by one", f"{fieller_scalar * 1e3:.0f} ms"),
        ("Welch + Fieller speed-up, vectorized over loop", f"{both_scalar / both:.0f}x (target >= 20x)"),
    ]


def measure_subsessions_and_components():
    rng = np.random.default_rng(2)
    noise = rng.standard_normal(10_000)
    series = np.empty_like(noise)
    series[0] = noise[0]
    for i in range(1, series.size):
        series[i] = 0.7 * series[i - 1] + noise[i]
    new, _ = hierarchical_pair()
    result = subsessions(series)
    return [
        (
            f"subsessions, AR(1) rho=0.7, 10^4 samples (q = {result.subsession_size})",
            f"{best_time(lambda: subsessions(series)) * 1e3:.1f} ms",
        ),
        ("variance_components, 20x10x50", f"{best_time(lambda: variance_components(new)) * 1e3:.2f} ms"),
    ]


def warm_up_series(n, seed=0):
    """Cache-then-disk throughput: 160 for the first 20%, then 100, the last 10% at 80; noise sd 5."""
    level = np.full(n, 100.0)
    level[: n // 5] = 160.0
    level[9 * n // 10 :] = 80.0
    return level + np.random.default_rng(seed).normal(0.0, 5.0, n)


def measure_edm():
    """EDM at 10^3..10^5 readings (target: 10^5 <= 5 s); `--quick` skips the slow exact runs."""
    quick = "--quick" in sys.argv
    rows = []
    variants = [("multi", {}), ("percent (Pilot)", {"percent": 0.25, "rescale": False})]
    for n in (1_000, 10_000, 100_000):
        data = warm_up_series(n)
        for label, options in variants:
            result = edm(data, **options)
            seconds = best_time(
                lambda data=data, options=options: edm(data, **options),
                repeats=1 if n >= 100_000 else 3,
            )
            how = "exact" if result.exact else f"two-pass, grid {result.grid}"
            rows.append(
                (f"edm {label}, n = {n:,} ({how}) -> {list(result.change_points)}", f"{seconds:.2f} s")
            )
            if n == 10_000 and not quick:
                exact = edm(data, exact_limit=None, **options)
                seconds = best_time(
                    lambda data=data, options=options: edm(data, exact_limit=None, **options),
                    repeats=1,
                )
                rows.append(
                    (f"edm {label}, n = {n:,} (exact) -> {list(exact.change_points)}", f"{seconds:.2f} s")
                )
    return rows


MEASUREMENTS = [
    measure_bootstrap,
    measure_welch_and_fieller,
    measure_subsessions_and_components,
    measure_edm,
]


def main():
    rows = [row for measurement in MEASUREMENTS for row in measurement()]
    width = max(len(what) for what, _ in rows)
    for what, figure in rows:
        print(f"{what:<{width}}  {figure}")


if __name__ == "__main__":
    main()
