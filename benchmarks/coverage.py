"""Simulated coverage of every interval Pilot Web shows, against its target (spec §2a, §5, §6, §8, §9; issue 15).

Run from the repository root::

    .venv/bin/python benchmarks/coverage.py [--replications 2000] [--bootstrap-replications N] [--processes 2]
    .venv/bin/python benchmarks/coverage.py --quick          # smoke run, 200 replications

Every cell draws seeded data with a known truth, builds the product's 95% interval with the public functions of
``results.stats`` and prints the fraction of intervals that contain the truth with its Wilson 95% bounds, the
target beside it and whether the point estimate meets it. A ``*`` after the verdict means the Wilson interval
still crosses the target's edge: at this many replications the cell cannot tell "met" from "missed".

1. The mean's interval as stored: ``summarize_samples(x)`` (lugsail overlapping batch means, spec §2a) then
   ``mean_interval(mean, variance, n)``, beside Pilot's rule ``summarize_samples(x, method="pilot")`` on the same
   series; coverage among valid series (``independent``) and the share valid. ``--replications`` series per cell.
2. Fieller's ratio interval on the top-level unit means of 3-level data (``ratio_fieller_from_stats``, the
   product's default ν), and on two one-level series compared from their stored triples (``compare_summaries``).
3. The bootstrap ratio interval ``ratio_bootstrap`` (default studentized, ``"bca"`` and ``"rrr"``), 999
   resamples, ``--bootstrap-replications`` per cell.
4. Tonight against the last K = 10 nights (``compare_with_history``, spec §8) with no change: coverage of 1.0 and
   the A/A rate of alarms (regression / improvement).
5. False-positive rate of ``welch_test`` at α = 0.05 (Hsu's ν below 5 units) beside plain Welch (``small_side=2``).
6. A/A false alarms of the pairwise verdict (``compare_summaries``) on 3-level data, several thresholds.

The vectorised sections (2, 4, 6) use 10 × ``--replications`` replications per cell, and section 5 runs
25 × ``--replications`` tests per cell. Where the target is "> Pilot's rule" (AR(1) ρ = 0.9 below n = 1000 and
ρ = 0.7 below n = 300, spec §2a), "met" means the product's coverage is closer to 0.95 than Pilot's rule's, and
``*`` that their Wilson intervals overlap.
Every cell's seed depends only on the section, the cell and the chunk, never on the number of processes.
"""

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal, stats

# Import from this checkout whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.stats import (  # noqa: E402
    Verdict,
    compare_summaries,
    compare_with_history,
    mean_interval,
    mean_variance,
    ratio_bootstrap,
    ratio_fieller_from_stats,
    summarize_samples,
    welch_test,
)

SEED = 15  # issue 15
CONFIDENCE = 0.95
BAND = (0.94, 0.965)
ALPHA = 0.05
WELCH_LIMIT = 0.06
VECTORISED = 10  # replications of the vectorised coverage cells, per --replications
WELCH_TESTS = 25  # Welch tests per cell, per --replications
CHUNK = 250  # series per task of section 1
BOOTSTRAP_CHUNK = 25  # replications per task of section 3
RESAMPLES = 999

# Section 1: (name, kind, parameter, n, truth). Pilot's rule is the target where the spec expects no estimator
# to reach the band: AR(1) ρ = 0.9 below n = 1000 and ρ = 0.7 below n = 300 (spec §2a).
MEAN_CELLS = (
    [("i.i.d. normal", "normal", None, n, 10.0) for n in (20, 100)]
    + [("log-normal σ=0.5", "lognormal", 0.5, n, 1.0) for n in (30, 300)]
    + [(f"AR(1) ρ={rho}", "ar1", rho, n, 0.0) for rho in (0.5, 0.7, 0.9) for n in (120, 300, 1000, 4000)]
)
LEVELS = (20, 10, 30)  # top x middle x bottom
TRUE_RATIO = 1.05
# Relative standard deviations of the random effects, top, middle, bottom.
LEVEL_CELLS = (
    ("variance at the top (5% / 1% / 1%)", (0.05, 0.01, 0.01)),
    ("variance at the bottom (0.5% / 1% / 10%)", (0.005, 0.01, 0.10)),
)
RRR_FIGURES = {0: "K&J ~0.915", 1: "K&J ~0.993"}
# Section 4: K nights of history, readings per night, within-run sd, run-to-run sd (relative).
HISTORY_NIGHTS = 10
READINGS = 30
WITHIN_SD = 0.03
BETWEEN_SDS = (0.0, 0.015, 0.03)
HISTORY_THRESHOLD = 0.02
# Section 5: (units of the small side, units of the other) and the small side's variance over the other's.
WELCH_SIZES = ((2, 10), (3, 3), (3, 30), (4, 20), (5, 15))
WELCH_RATIOS = (1.0, 4.0, 25.0)
# Section 6 (the old script's A/A table): builds x executions x measurements, relative sd top/middle/bottom.
AA_LEVELS = (20, 5, 5)
AA_DEVIATIONS = (0.03, 0.05, 0.05)
AA_THRESHOLDS = (0.0, 0.01, 0.02, 0.05)


# ---------------------------------------------------------------------------------------------------------
# Data


def ar1(rng, size, length, rho):
    """`size` stationary AR(1) series of `length`, unit innovations: x_t = ρ x_{t−1} + e_t."""
    noise = rng.standard_normal((size, length))
    noise[:, 0] /= np.sqrt(1.0 - rho**2)
    return signal.lfilter([1.0], [1.0, -rho], noise, axis=-1)


def draw_series(rng, kind, parameter, size, n):
    if kind == "normal":
        return rng.normal(10.0, 2.0, (size, n))
    if kind == "lognormal":
        return np.exp(parameter * rng.standard_normal((size, n)) - parameter**2 / 2.0)
    return ar1(rng, size, n, parameter)


def levelled(rng, level, deviations, size, shape=LEVELS):
    """`size` balanced data sets of `shape`, ``level · (1 + top + middle + bottom effect)``."""
    effects = np.zeros((size,) + shape)
    for depth, deviation in enumerate(deviations):
        effects += deviation * rng.standard_normal((size,) + shape[: depth + 1] + (1,) * (len(shape) - depth - 1))
    return level * (1.0 + effects)


def top_level_triples(data):
    """(mean, variance of the top-level unit means, their number) per data set: what summarize_samples stores."""
    top = data.reshape(data.shape[0], data.shape[1], -1).mean(axis=2)
    return top.mean(axis=1), top.var(axis=1, ddof=1), top.shape[1]


def check_triples(vectorised, samples, count=5):
    """Assert that the vectorised triples equal summarize_samples' on the first `count` data sets."""
    means, variances, ns = (np.broadcast_to(np.asarray(value), (len(samples),)) for value in vectorised)
    for i in range(count):
        summary = summarize_samples(samples[i])
        expected = (summary.mean, summary.variance, summary.n)
        if not (np.allclose((means[i], variances[i]), expected[:2], rtol=1e-12, atol=0.0) and ns[i] == expected[2]):
            raise AssertionError(f"vectorised triple {(means[i], variances[i], ns[i])} != summarize_samples {expected}")


# ---------------------------------------------------------------------------------------------------------
# Figures


def wilson(successes, trials):
    """Wilson 95% bounds of a binomial proportion (scipy)."""
    interval = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=0.95, method="wilson")
    return interval.low, interval.high


def proportion(successes, trials):
    """``"0.950 [0.940, 0.959]"``, or a dash where there are no trials."""
    if trials == 0:
        return "—"
    low, high = wilson(successes, trials)
    return f"{successes / trials:.3f} [{low:.3f}, {high:.3f}]"


def in_band(successes, trials, band=BAND):
    """("yes" / "NO", with "*" where the Wilson interval crosses an edge of the band)."""
    if trials == 0:
        return "NO"
    rate = successes / trials
    low, high = wilson(successes, trials)
    unsure = low < band[0] <= high or low <= band[1] < high
    return ("yes" if band[0] <= rate <= band[1] else "NO") + ("*" if unsure else "")


def table(header, rows):
    """Print `rows` in columns under `header`, a list of (title, align) with align "<" or ">"."""
    rows = [[str(value) for value in row] for row in rows]
    widths = [max(len(title), *(len(row[i]) for row in rows)) for i, (title, _) in enumerate(header)]
    for row in [[title for title, _ in header]] + rows:
        print("  ".join(f"{value:{align}{width}}" for value, (_, align), width in zip(row, header, widths)).rstrip())


def covered(low, high, truth):
    return (np.asarray(low) <= truth) & (truth <= np.asarray(high))


# ---------------------------------------------------------------------------------------------------------
# 1. The mean's interval


def mean_task(task):
    """(cell, product valid, product covered, Pilot valid, Pilot covered) for one chunk of series."""
    cell, chunk, size = task
    _, kind, parameter, n, truth = MEAN_CELLS[cell]
    series = draw_series(np.random.default_rng([SEED, 1, cell, chunk]), kind, parameter, size, n)
    counts = [cell]
    for method in ("lugsail", "pilot"):
        summaries = [summarize_samples(x, method=method) for x in series]
        valid = [s for s in summaries if s.independent]
        counts.append(len(valid))
        if valid:
            interval = mean_interval([s.mean for s in valid], [s.variance for s in valid], [s.n for s in valid],
                                     confidence=CONFIDENCE)
            counts.append(int(covered(interval.low, interval.high, truth).sum()))
        else:
            counts.append(0)
    return counts


def mean_section(pool, replications, cells=""):
    chosen = [cell for cell, (name, _, _, n, _) in enumerate(MEAN_CELLS) if cells in f"{name} n={n}"]
    tasks = [(cell, chunk, min(CHUNK, replications - start))
             for cell in chosen for chunk, start in enumerate(range(0, replications, CHUNK))]
    totals = np.zeros((len(MEAN_CELLS), 4), dtype=int)
    for cell, *counts in pool.imap_unordered(mean_task, tasks):
        totals[cell] += counts
    rows = []
    for cell, (name, kind, parameter, n, _) in enumerate(MEAN_CELLS):
        if cell not in chosen:
            continue
        valid, hits, pilot_valid, pilot_hits = totals[cell]
        beside_pilot = kind == "ar1" and ((parameter == 0.9 and n < 1000) or (parameter == 0.7 and n < 300))
        if beside_pilot:
            target = "> Pilot's rule"
            rate, pilot_rate = hits / max(valid, 1), pilot_hits / max(pilot_valid, 1)
            met = "yes" if abs(rate - 0.95) < abs(pilot_rate - 0.95) else "NO"
            (low, high), (pilot_low, pilot_high) = wilson(hits, valid), wilson(pilot_hits, pilot_valid)
            met += "*" if low <= pilot_high and pilot_low <= high else ""
        else:
            target = f"[{BAND[0]:.3f}, {BAND[1]:.3f}]"
            met = in_band(hits, valid)
            if kind == "normal" and n == 20:
                target += ", valid ≥ 0.99"
                met = met if valid >= 0.99 * replications else "NO"
        rows.append((name, n, proportion(hits, valid), f"{valid / replications:.3f}",
                     proportion(pilot_hits, pilot_valid), f"{pilot_valid / replications:.3f}", target, met))
    print(f"1. The mean's 95% interval: summarize_samples(x) -> mean_interval (spec §2a) beside Pilot's rule "
          f"(method='pilot'); {replications} series per cell; coverage among valid series")
    table([("cell", "<"), ("n", ">"), ("product [Wilson 95%]", "<"), ("valid", ">"),
           ("Pilot's rule [Wilson]", "<"), ("valid", ">"), ("target", "<"), ("met", "<")], rows)


# ---------------------------------------------------------------------------------------------------------
# 2. Fieller's ratio interval


def fieller_section(replications):
    rows = []
    chunk = 500
    for cell, (name, deviations) in enumerate(LEVEL_CELLS):
        hits = 0
        for index, start in enumerate(range(0, replications, chunk)):
            size = min(chunk, replications - start)
            rng = np.random.default_rng([SEED, 2, cell, index])
            new = levelled(rng, TRUE_RATIO, deviations, size)
            old = levelled(rng, 1.0, deviations, size)
            new_triple, old_triple = top_level_triples(new), top_level_triples(old)
            if index == 0:
                check_triples(new_triple, new)
            result = ratio_fieller_from_stats(*new_triple, *old_triple, confidence=CONFIDENCE)
            hits += int((result.bounded & covered(result.low, result.high, TRUE_RATIO)).sum())
        rows.append((f"3-level {'x'.join(map(str, LEVELS))}, {name}", proportion(hits, replications),
                     f"[{BAND[0]:.3f}, {BAND[1]:.3f}]", in_band(hits, replications)))
    # One-level results are compared from their stored (lugsail) triples: AR(1) ρ = 0.7, sd 1.4 around 105 / 100.
    hits = 0
    for index, start in enumerate(range(0, replications, chunk)):
        size = min(chunk, replications - start)
        rng = np.random.default_rng([SEED, 2, len(LEVEL_CELLS), index])
        new = 100.0 * TRUE_RATIO + ar1(rng, size, 1000, 0.7)
        old = 100.0 + ar1(rng, size, 1000, 0.7)
        new_triple, old_triple = mean_variance(new).stored, mean_variance(old).stored
        if index == 0:
            check_triples(new_triple, new)
        result = compare_summaries(*new_triple, *old_triple, confidence=CONFIDENCE)
        hits += int((result.bounded & covered(result.low, result.high, TRUE_RATIO)).sum())
    rows.append(("1-level AR(1) ρ=0.7 n=1000 each, stored triples", proportion(hits, replications),
                 f"[{BAND[0]:.3f}, {BAND[1]:.3f}]", in_band(hits, replications)))
    print(f"2. Fieller's ratio interval, true ratio {TRUE_RATIO}: ratio_fieller_from_stats on top-level unit means "
          f"(default ν); {replications} replications per cell")
    table([("cell", "<"), ("coverage [Wilson 95%]", "<"), ("target", "<"), ("met", "<")], rows)


# ---------------------------------------------------------------------------------------------------------
# 3. Bootstrap ratio interval


BOOTSTRAP_METHODS = ("studentized", "bca", "rrr")
"""The default (top-level resampling, studentized interval) first; BCa of the same resampling and Kalibera &
Jones's all-levels resampling are reported beside it."""


def bootstrap_task(task):
    """(cell, [covered count per method]) for one chunk of replications."""
    cell, chunk, size = task
    deviations = LEVEL_CELLS[cell][1]
    data_rng, resample_rng = np.random.default_rng([SEED, 3, cell, chunk]).spawn(2)
    hits = [0] * len(BOOTSTRAP_METHODS)
    for _ in range(size):
        new = levelled(data_rng, TRUE_RATIO, deviations, 1)[0]
        old = levelled(data_rng, 1.0, deviations, 1)[0]
        for position, method in enumerate(BOOTSTRAP_METHODS):
            result = ratio_bootstrap(new, old, confidence=CONFIDENCE, n_resamples=RESAMPLES, rng=resample_rng,
                                     method=method)
            hits[position] += bool(result.bounded and result.low <= TRUE_RATIO <= result.high)
    return cell, hits


def bootstrap_section(pool, replications):
    methods = BOOTSTRAP_METHODS
    tasks = [(cell, chunk, min(BOOTSTRAP_CHUNK, replications - start))
             for cell in range(len(LEVEL_CELLS)) for chunk, start in enumerate(range(0, replications, BOOTSTRAP_CHUNK))]
    totals = np.zeros((len(LEVEL_CELLS), len(methods)), dtype=int)
    for cell, hits in pool.imap_unordered(bootstrap_task, tasks):
        totals[cell] += hits
    rows = []
    for cell, (name, _) in enumerate(LEVEL_CELLS):
        for position, method in enumerate(methods):
            hits = totals[cell, position]
            if method == "studentized":
                rows.append((name, "default (studentized)", proportion(hits, replications),
                             f"[{BAND[0]:.3f}, {BAND[1]:.3f}]", in_band(hits, replications)))
            else:
                rows.append((name, repr(method), proportion(hits, replications),
                             RRR_FIGURES[cell] if method == "rrr" else "", "(reported)"))
    print(f"3. Bootstrap ratio interval ratio_bootstrap, {'x'.join(map(str, LEVELS))}, true ratio {TRUE_RATIO}, "
          f"{RESAMPLES} resamples; {replications} replications per cell")
    table([("cell", "<"), ("method", "<"), ("coverage [Wilson 95%]", "<"), ("target", "<"),
           ("met", "<")], rows)


# ---------------------------------------------------------------------------------------------------------
# 4. Tonight against the history


def history_section(replications):
    rows = []
    for cell, between in enumerate(BETWEEN_SDS):
        rng = np.random.default_rng([SEED, 4, cell])
        # Night 0 is the candidate, nights 1..K its history; all at the same level (no change).
        effects = between * rng.standard_normal((replications, HISTORY_NIGHTS + 1, 1))
        readings = 1.0 + effects + WITHIN_SD * rng.standard_normal((replications, HISTORY_NIGHTS + 1, READINGS))
        stored = mean_variance(readings).stored
        check_triples(tuple(np.asarray(value)[:, 0] for value in stored), readings[:, 0])
        mean, variance, n = (np.broadcast_to(np.asarray(value), readings.shape[:2]) for value in stored)
        result = compare_with_history(mean[:, 0], variance[:, 0], n[:, 0], mean[:, 1:], variance[:, 1:], n[:, 1:],
                                      threshold=HISTORY_THRESHOLD, confidence=CONFIDENCE)
        hits = int((result.bounded & covered(result.low, result.high, 1.0)).sum())
        alarms = int(np.isin(result.verdict, [Verdict.REGRESSION, Verdict.IMPROVEMENT]).sum())
        quiet = int((result.verdict == Verdict.NO_CHANGE).sum())
        rows.append((f"run-to-run sd {between:.1%}", proportion(hits, replications), proportion(alarms, replications),
                     f"{quiet / replications:.3f}", f"[{BAND[0]:.3f}, {BAND[1]:.3f}]", in_band(hits, replications)))
    print(f"4. Tonight vs the last K={HISTORY_NIGHTS} nights (compare_with_history, spec §8), no change: nights of "
          f"{READINGS} readings, within-run sd {WITHIN_SD:.0%}, stored as summarize_samples would; "
          f"θ={HISTORY_THRESHOLD:.0%}; {replications} replications per cell")
    table([("cell", "<"), ("coverage of 1 [Wilson]", "<"), ("A/A alarms [Wilson]", "<"),
           ("no change", ">"), ("target", "<"), ("met", "<")], rows)


# ---------------------------------------------------------------------------------------------------------
# 5. Welch's false positives


def welch_section(tests):
    rows = []
    for cell, ((small, other), ratio) in enumerate((sizes, ratio) for sizes in WELCH_SIZES for ratio in WELCH_RATIOS):
        rng = np.random.default_rng([SEED, 5, cell])
        a = np.sqrt(ratio) * rng.standard_normal((tests, small))
        b = rng.standard_normal((tests, other))
        sides = (a.mean(axis=1), a.var(axis=1, ddof=1), small, b.mean(axis=1), b.var(axis=1, ddof=1), other)
        product = welch_test(*sides)
        plain = welch_test(*sides, small_side=2)
        rejections = int((product.pvalue < ALPHA).sum())
        hsu = "Hsu" if np.all(product.conservative) else "W–S" if not np.any(product.conservative) else "mixed"
        rate = rejections / tests
        low, high = wilson(rejections, tests)
        met = ("yes" if rate <= WELCH_LIMIT else "NO") + ("*" if low <= WELCH_LIMIT < high else "")
        rows.append((f"{small} vs {other}", f"{ratio:g}x", proportion(rejections, tests), hsu,
                     proportion(int((plain.pvalue < ALPHA).sum()), tests), f"≤ {WELCH_LIMIT}", met))
    print(f"5. Welch's test false positives at α={ALPHA}, equal means, normal data: welch_test (Hsu's ν below 5 units) "
          f"beside plain Welch (small_side=2); {tests} tests per cell")
    table([("units", "<"), ("var", ">"), ("product [Wilson 95%]", "<"), ("ν", "<"),
           ("plain Welch [Wilson]", "<"), ("target", "<"), ("met", "<")], rows)


# ---------------------------------------------------------------------------------------------------------
# 6. A/A false alarms of the verdict


def false_alarm_section(replications):
    rng = np.random.default_rng([SEED, 6])
    a = levelled(rng, 1.0, AA_DEVIATIONS, replications, shape=AA_LEVELS)
    b = levelled(rng, 1.0, AA_DEVIATIONS, replications, shape=AA_LEVELS)
    rows = []
    for threshold in AA_THRESHOLDS:
        result = compare_summaries(*top_level_triples(a), *top_level_triples(b), threshold=threshold,
                                   confidence=CONFIDENCE)
        alarms = int(np.isin(result.verdict, [Verdict.REGRESSION, Verdict.IMPROVEMENT]).sum())
        rows.append((f"{threshold:.0%}", proportion(alarms, replications),
                     f"{np.mean(result.verdict == Verdict.NO_CHANGE):.3f}", f"{np.mean(result.pvalue < ALPHA):.3f}"))
    print(f"6. A/A false alarms of the verdict (compare_summaries on top-level unit means), "
          f"{'x'.join(map(str, AA_LEVELS))}, relative sd {' / '.join(f'{d:.0%}' for d in AA_DEVIATIONS)} "
          f"top / middle / bottom; {replications} replications")
    table([("θ", ">"), ("alarms [Wilson 95%]", "<"), ("no change", ">"), (f"p < {ALPHA}", ">")], rows)


# ---------------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=None,
                        help="series per cell of sections 1 and 3 (default 2000; 200 with --quick)")
    parser.add_argument("--bootstrap-replications", type=int, default=None,
                        help="replications per bootstrap cell (default: --replications)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 replications")
    parser.add_argument("--sections", default="1,2,3,4,5,6", help="comma-separated section numbers to run")
    parser.add_argument("--cells", default="", help="section 1: only the cells whose 'name n=N' contains this, "
                                                     "e.g. 'ρ=0.5 n=300'")
    options = parser.parse_args()
    replications = options.replications or (200 if options.quick else 2000)
    bootstrap_replications = options.bootstrap_replications or replications

    start = time.perf_counter()
    load = os.getloadavg()
    print(f"Coverage of Pilot Web's 95% intervals (seed {SEED}, {options.processes} processes, {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at start)")
    print("met: the point estimate meets the target; * the Wilson interval still crosses the target's edge\n")
    with multiprocessing.get_context("fork").Pool(options.processes) as pool:
        sections = [
            lambda: mean_section(pool, replications, options.cells),
            lambda: fieller_section(VECTORISED * replications),
            lambda: bootstrap_section(pool, bootstrap_replications),
            lambda: history_section(VECTORISED * replications),
            lambda: welch_section(WELCH_TESTS * replications),
            lambda: false_alarm_section(VECTORISED * replications),
        ]
        wanted = {int(number) for number in options.sections.split(",")}
        for number, section in enumerate(sections, start=1):
            if number not in wanted:
                continue
            began = time.perf_counter()
            section()
            print(f"({time.perf_counter() - began:.0f} s)\n")
    load = os.getloadavg()
    print(f"Elapsed {time.perf_counter() - start:.0f} s; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
          f"at the end")


if __name__ == "__main__":
    main()
