"""Speed and agreement of EDM's exact recurrence and its grid approximation, ``results.stats.edm``.

Run from the repository root::

    .venv/bin/python benchmarks/edm_speed.py            # sizes 1,000 .. 100,000 (about 10 minutes)
    .venv/bin/python benchmarks/edm_speed.py --quick    # sizes up to 30,000

For each size and variant the script times ``edm(x, exact_limit=None)`` (exact) and
``edm(x)`` (the default ``exact_limit``, the approximation above it) separately, each repeated, and
prints the minimum and median wall-clock times, the approximation's time as a fraction of the
exact one, both answers and whether they agree: the same change points, else the largest shift
between the answers' change points paired in order (or "count differs"). The machine's load
average (1 minute) is printed before and after each row: the times are only comparable between
rows measured at a similar load.

The series is the one ``benchmarks/stats_speed.py`` times EDM on: throughput at 160 for the first
20% of the readings (a cache), 100 after it, 80 for the last 10%, normal noise of sd 5; true change
points at 0.2 n and 0.9 n.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# Import from this checkout whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.stats import edm

SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)
QUICK_SIZES = (1_000, 3_000, 10_000, 30_000)
VARIANTS = (("multi", {}), ("percent (Pilot)", {"percent": 0.25, "rescale": False}))
REPEATS = 5
# One exact percent run at n = 100,000 takes about a minute on this machine: two repeats.
SLOW_EXACT_SECONDS = 30.0
SLOW_EXACT_REPEATS = 2


def warm_up_series(n, seed=0):
    """Cache-then-disk throughput: 160 for the first 20%, then 100, the last 10% at 80; noise sd 5."""
    level = np.full(n, 100.0)
    level[: n // 5] = 160.0
    level[9 * n // 10 :] = 80.0
    return level + np.random.default_rng(seed).normal(0.0, 5.0, n)


def timed(function, repeats):
    """The result of `function` and the wall-clock seconds of each of `repeats` calls."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return result, seconds


def agreement(exact, approximate):
    """'same', the largest shift between change points paired in order, or 'count differs'."""
    if exact == approximate:
        return "same"
    if len(exact) != len(approximate):
        return "count differs"
    return f"shift <= {max(abs(a - b) for a, b in zip(exact, approximate))}"


def load():
    return f"{os.getloadavg()[0]:.1f}"


def measure(sizes, repeats):
    rows = []
    for n in sizes:
        data = warm_up_series(n)
        for label, options in VARIANTS:
            before = load()
            # The first exact call says how slow the size is; it counts as the first repeat.
            exact, first = timed(lambda data=data, options=options: edm(data, exact_limit=None, **options), 1)
            more = (SLOW_EXACT_REPEATS if first[0] > SLOW_EXACT_SECONDS else repeats) - 1
            _, rest = timed(lambda data=data, options=options: edm(data, exact_limit=None, **options), more)
            exact_seconds = first + rest
            approximate, approximate_seconds = timed(
                lambda data=data, options=options: edm(data, **options), repeats
            )
            rows.append(
                {
                    "variant": label,
                    "n": n,
                    "grid": approximate.grid,
                    "exact": exact_seconds,
                    "approximate": approximate_seconds,
                    "exact_points": list(exact.change_points),
                    "approximate_points": list(approximate.change_points),
                    "agree": agreement(exact.change_points, approximate.change_points),
                    "load": f"{before} -> {load()}",
                }
            )
            print_row(rows[-1], header=len(rows) == 1)
    return rows


def print_row(row, header=False):
    columns = (
        ("variant", 15), ("n", 8), ("grid", 4), ("exact min/med (k)", 22), ("approx. min/med (k)", 22),
        ("ratio", 6), ("agree", 14), ("load", 11),
    )
    if header:
        print("  ".join(f"{name:<{width}}" for name, width in columns))
    exact, approximate = row["exact"], row["approximate"]
    cells = (
        row["variant"],
        f"{row['n']:,}",
        str(row["grid"]),
        f"{min(exact):.2f}/{statistics.median(exact):.2f} s ({len(exact)})",
        f"{min(approximate):.2f}/{statistics.median(approximate):.2f} s ({len(approximate)})",
        f"{statistics.median(approximate) / statistics.median(exact):.2f}",
        row["agree"],
        row["load"],
    )
    print("  ".join(f"{cell:<{width}}" for cell, (_, width) in zip(cells, columns)))
    print(f"    exact {row['exact_points']}  approximation {row['approximate_points']}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 30,000 only")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="calls timed per row (default 5)")
    arguments = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; 'ratio' is the median approximation time over the median exact time; "
          f"grid 1 means the default call solved exactly")
    measure(QUICK_SIZES if arguments.quick else SIZES, arguments.repeats)


if __name__ == "__main__":
    main()
