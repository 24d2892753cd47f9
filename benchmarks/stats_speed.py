"""Speed of the numerical core, ``results.stats``.

Run from the repository root::

    .venv/bin/python benchmarks/stats_speed.py            # --quick skips EDM's slow exact runs

Baseline: each vectorized core function against the same computation written directly with vectorized
numpy/scipy calls and no validation, measured in the same run, turn about, on the same 10,000 series (each
with its own confidence level, threshold and direction); the script checks both give the same numbers. The
ratio core / direct is what the core adds: validation, broadcasting of levels and directions, degenerate cases.
A per-series Python loop over scipy is printed only as a labelled extra, not as a baseline.

Targets: core / direct reported (no target; 1x is the floor); ``ratio_bootstrap`` with 10^4 resamples on
20x10x50 data per side <= 1 s and EDM at 10^5 readings <= 5 s (absolute: no same-work baseline yet).
Times are min / median of at least 5 repeats (wall clock), with the 1-minute load before and after.
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from scipy import stats

# Import from this checkout whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.databases import REPEATS, interleaved, load, spread  # noqa: E402
from results.stats import (  # noqa: E402
    SMALL_SIDE,
    compare_summaries,
    compare_with_history,
    edm,
    ratio_bootstrap,
    ratio_fieller_from_stats,
    subsessions,
    variance_components,
    welch_test,
)

SERIES = 10_000
HISTORY = 10
FAST_REPEATS = 21
"""Repeats of a call of a few milliseconds; slower calls get ``REPEATS``."""


def timings(function, repeats=REPEATS):
    """(min, median) wall-clock seconds of `repeats` calls."""
    return spread(interleaved({"call": function}, repeats=repeats)["call"])


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
    """Two sides of SERIES series (some with fewer than SMALL_SIDE units) and each series' level,
    threshold and direction."""
    rng = np.random.default_rng(1)
    sides = (
        rng.normal(10.5, 1.0, SERIES), rng.gamma(2.0, size=SERIES), rng.integers(3, 40, SERIES),
        rng.normal(10.0, 1.0, SERIES), rng.gamma(2.0, size=SERIES), rng.integers(3, 40, SERIES),
    )
    options = {"threshold": rng.choice([0.0, 0.02, 0.05], SERIES),
               "direction": rng.choice(np.array(["lower_is_better", "higher_is_better"], dtype=object), SERIES),
               "confidence": rng.choice([0.9, 0.95, 0.99], SERIES)}
    return sides, options


def histories():
    """Tonight and the last HISTORY nights of SERIES series, one in twenty with only 4 nights (NaN-padded)."""
    rng = np.random.default_rng(3)
    tonight = (rng.normal(1.0, 0.02, SERIES), rng.gamma(2.0, 1e-4, SERIES), rng.integers(1, 40, SERIES))
    shape = (SERIES, HISTORY)
    past = [rng.normal(1.0, 0.02, shape), rng.gamma(2.0, 1e-4, shape), rng.integers(1, 40, shape).astype(float)]
    for array in past:
        array[::20, 4:] = np.nan
    return tonight, past


# --- The same computations written directly: vectorized numpy/scipy, no validation ------------------------


def direct_df(error_a, n_a, error_b, n_b):
    """Welch-Satterthwaite's df from the variances of the two means; Hsu's min(n) - 1 below SMALL_SIDE units."""
    smaller = np.minimum(n_a, n_b)
    return np.where(smaller < SMALL_SIDE, smaller - 1.0,
                    (error_a + error_b) ** 2 / (error_a**2 / (n_a - 1) + error_b**2 / (n_b - 1)))


def direct_welch(mean_a, variance_a, n_a, mean_b, variance_b, n_b):
    """Welch's t, its two-sided p and df."""
    error_a, error_b = variance_a / n_a, variance_b / n_b
    statistic = (mean_a - mean_b) / np.sqrt(error_a + error_b)
    df = direct_df(error_a, n_a, error_b, n_b)
    return statistic, 2.0 * stats.t.sf(np.abs(statistic), df), df


def direct_fieller(mean_new, error_new, mean_old, error_old, h2):
    """Fieller's limits of mean_new / mean_old from the variances of the two means (±inf where unbounded)."""
    a = mean_old**2 - h2 * error_old
    bounded = a > 0.0
    safe_a = np.where(bounded, a, 1.0)
    product = mean_new * mean_old
    root = np.sqrt(np.clip(product**2 - safe_a * (mean_new**2 - h2 * error_new), 0.0, None))
    return np.where(bounded, (product - root) / safe_a, -np.inf), np.where(bounded, (product + root) / safe_a, np.inf)


def direct_verdict(low, high, threshold, direction):
    lower_is_better = direction == "lower_is_better"
    above, below = low > 1.0 + threshold, high < 1.0 - threshold
    inside = (threshold > 0.0) & (low >= 1.0 - threshold) & (high <= 1.0 + threshold)
    return np.select([np.where(lower_is_better, above, below), np.where(lower_is_better, below, above), inside],
                     ["regression", "improvement", "no change"], "inconclusive")


def direct_summaries(mean, variance, n, base_mean, base_variance, base_n, *, threshold, direction, confidence):
    statistic, pvalue, df = direct_welch(mean, variance, n, base_mean, base_variance, base_n)
    h2 = stats.t.ppf((1.0 + confidence) / 2.0, df) ** 2
    low, high = direct_fieller(mean, variance / n, base_mean, base_variance / base_n, h2)
    return mean / base_mean, low, high, pvalue, direct_verdict(low, high, threshold, direction)


def direct_history(mean, variance, n, history_mean, history_variance, history_n, *, threshold, direction,
                   confidence):
    size = np.sum(~np.isnan(history_mean), axis=-1)
    baseline = np.nanmean(history_mean, axis=-1)
    spread_ = np.nanvar(history_mean, axis=-1, ddof=1)
    between = np.maximum(spread_ - np.nanmean(history_variance / history_n, axis=-1), 0.0)
    candidate_error = between + variance / n
    statistic = (mean - baseline) / np.sqrt(candidate_error + spread_ / size)
    pvalue = 2.0 * stats.t.sf(np.abs(statistic), size - 1)
    h = stats.t.ppf((1.0 + confidence) / 2.0, size - 1)
    low, high = direct_fieller(mean, candidate_error, baseline, spread_ / size, h**2)
    half_prediction = h * np.sqrt(spread_ * (1.0 + 1.0 / size))
    return (mean / baseline, low, high, pvalue, direct_verdict(low, high, threshold, direction),
            baseline - half_prediction)


def direct_variance_components(data):
    biased, means = [], data
    for _ in range(data.ndim):
        biased.append(means.var(axis=-1, ddof=1).mean())
        means = means.mean(axis=-1)
    return np.array(biased)


def _same(core, direct, what):
    """Both ways computed the same numbers (verdicts as text)."""
    for a, b in zip(core, direct):
        a, b = np.asarray(a), np.asarray(b)
        same = (np.array_equal(a.astype(str), b.astype(str)) if a.dtype == object or b.dtype.kind == "U"
                else np.allclose(a, b, rtol=1e-10, atol=0.0))
        if not same:
            raise SystemExit(f"{what}: the direct computation differs from the core")


# --- Measurements ---------------------------------------------------------------------------------------


def core_against_direct():
    """Rows (what, core (min, median) seconds, direct (min, median) seconds): each core call against its direct
    computation."""
    (mean_a, var_a, n_a, mean_b, var_b, n_b), options = summary_statistics()
    sides = (mean_a, var_a, n_a, mean_b, var_b, n_b)
    tonight, past = histories()

    def welch_core():
        result = welch_test(*sides)
        return result.statistic, result.pvalue, result.df

    def fieller_core():
        result = ratio_fieller_from_stats(*sides, confidence=options["confidence"])
        return result.low, result.high

    def fieller_direct():
        error_a, error_b = var_a / n_a, var_b / n_b
        h2 = stats.t.ppf((1.0 + options["confidence"]) / 2.0, direct_df(error_a, n_a, error_b, n_b)) ** 2
        return direct_fieller(mean_a, error_a, mean_b, error_b, h2)

    def summaries_core():
        result = compare_summaries(*sides, **options)
        return result.ratio, result.low, result.high, result.pvalue, result.verdict

    def history_core():
        result = compare_with_history(*tonight, *past, **options)
        return result.ratio, result.low, result.high, result.pvalue, result.verdict, result.prediction_low

    new, _ = hierarchical_pair()
    pairs = [
        (f"welch_test, {SERIES:,} series", welch_core, lambda: direct_welch(*sides)),
        (f"ratio_fieller_from_stats, {SERIES:,} series, a level each", fieller_core, fieller_direct),
        (f"compare_summaries (Welch, Fieller, verdict), {SERIES:,} series", summaries_core,
         lambda: direct_summaries(*sides, **options)),
        (f"compare_with_history, {SERIES:,} series x {HISTORY} nights, some padded", history_core,
         lambda: direct_history(*tonight, *past, **options)),
        ("variance_components, 20x10x50", lambda: (variance_components(new).biased,),
         lambda: (direct_variance_components(new),)),
    ]
    rows = []
    for what, core, direct in pairs:
        _same(core(), direct(), what)
        seconds = interleaved({"core": core, "direct": direct}, repeats=FAST_REPEATS)
        rows.append((what, spread(seconds["core"]), spread(seconds["direct"])))
    return rows


def loop_extra():
    """Welch and Fieller one series at a time with scipy's scalar calls, against the core's two vectorized calls."""
    (mean_a, var_a, n_a, mean_b, var_b, n_b), _ = summary_statistics()

    def loop():
        for i in range(SERIES):
            stats.ttest_ind_from_stats(
                mean_a[i], np.sqrt(var_a[i]), n_a[i], mean_b[i], np.sqrt(var_b[i]), n_b[i], equal_var=False
            )
            h2 = stats.t.ppf(0.975, n_a[i] + n_b[i] - 2) ** 2
            a = mean_b[i] ** 2 - h2 * var_b[i] / n_b[i]
            if a > 0:
                product = mean_a[i] * mean_b[i]
                np.sqrt(product**2 - a * (mean_a[i] ** 2 - h2 * var_a[i] / n_a[i]))

    def core():
        welch_test(mean_a, var_a, n_a, mean_b, var_b, n_b)
        ratio_fieller_from_stats(mean_a, var_a, n_a, mean_b, var_b, n_b)

    seconds = interleaved({"loop": loop, "core": core}, repeats=REPEATS)
    return spread(seconds["loop"]), spread(seconds["core"])


def measure_bootstrap():
    new, old = hierarchical_pair()
    seconds = timings(lambda: ratio_bootstrap(new, old, n_resamples=10_000, rng=0))
    verdict = "meets" if seconds[1] <= 1.0 else "MISSES"
    return [("ratio_bootstrap, 10^4 resamples, 20x10x50 per side", f"{_pair(seconds)} s ({verdict} <= 1 s)")]


def measure_subsessions():
    rng = np.random.default_rng(2)
    noise = rng.standard_normal(10_000)
    series = np.empty_like(noise)
    series[0] = noise[0]
    for i in range(1, series.size):
        series[i] = 0.7 * series[i - 1] + noise[i]
    result = subsessions(series)
    seconds = timings(lambda: subsessions(series), repeats=FAST_REPEATS)
    return [(f"subsessions, AR(1) rho=0.7, 10^4 samples (q = {result.subsession_size})",
             f"{_pair(seconds, 1e3, 2)} ms")]


def warm_up_series(n, seed=0):
    """Cache-then-disk throughput: 160 for the first 20%, then 100, the last 10% at 80; noise sd 5."""
    level = np.full(n, 100.0)
    level[: n // 5] = 160.0
    level[9 * n // 10 :] = 80.0
    return level + np.random.default_rng(seed).normal(0.0, 5.0, n)


def measure_edm(*, quick):
    """EDM at 10^3..10^5 readings (target: 10^5 <= 5 s); `quick` skips the slow exact runs."""
    rows = []
    variants = [("multi", {}), ("percent (Pilot)", {"percent": 0.25, "rescale": False})]
    for n in (1_000, 10_000, 100_000):
        data = warm_up_series(n)
        for label, options in variants:
            result = edm(data, **options)
            seconds = timings(lambda data=data, options=options: edm(data, **options))
            how = "exact" if result.exact else f"two-pass, grid {result.grid}"
            target = f" ({'meets' if seconds[1] <= 5.0 else 'MISSES'} <= 5 s)" if n == 100_000 else ""
            rows.append(
                (f"edm {label}, n = {n:,} ({how}) -> {list(result.change_points)}", f"{_pair(seconds)} s{target}")
            )
            if n == 10_000 and not quick:
                exact = edm(data, exact_limit=None, **options)
                seconds = timings(lambda data=data, options=options: edm(data, exact_limit=None, **options))
                rows.append(
                    (f"edm {label}, n = {n:,} (exact) -> {list(exact.change_points)}", f"{_pair(seconds)} s")
                )
    return rows


def _pair(seconds, scale=1.0, digits=3):
    """'min / median', scaled (1e3: milliseconds)."""
    return f"{seconds[0] * scale:.{digits}f} / {seconds[1] * scale:.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip EDM's slow exact runs")
    quick = parser.parse_args().quick
    load_before = load()
    print(f"Core against the same computation written directly (vectorized numpy/scipy, no validation); "
          f"ms min / median of {FAST_REPEATS}; {os.cpu_count()} CPUs, load {load_before:.2f} (1 min)")
    print(f"{'':<66}{'core ms':>17}{'direct ms':>17}{'core/direct':>13}")
    for what, core, direct in core_against_direct():
        print(f"{what:<66}{_pair(core, 1e3, 2):>17}{_pair(direct, 1e3, 2):>17}{core[1] / direct[1]:>12.2f}x")
    print("core/direct: median over median; what the core adds (validation, broadcasting of levels and "
          "directions, degenerate cases)")
    loop, core = loop_extra()
    print(f"extra, not a baseline: a per-series Python loop over scipy (Welch + Fieller, {SERIES:,} series) takes "
          f"{_pair(loop, 1e3, 0)} ms, {loop[1] / core[1]:.0f}x the core's vectorized calls")
    print("\nAbsolute times (no same-work baseline yet), s or ms min / median of 5 (21 for ms)")
    rows = measure_bootstrap() + measure_subsessions() + measure_edm(quick=quick)
    width = max(len(what) for what, _ in rows)
    for what, figure in rows:
        print(f"{what:<{width}}  {figure}")
    print(f"load (1 min) {load_before:.2f} before, {load():.2f} after")


if __name__ == "__main__":
    main()
