"""How far the shift scan (results.stats.recent_shift) is from the realistic bound, on the core alone.

    .venv/bin/python benchmarks/shift_scan_limit.py                          # 3% run-to-run noise, 4,000 series
    .venv/bin/python benchmarks/shift_scan_limit.py --level 0.015 --starts 10 --alphas 0.01

Simulated night means as benchmarks/nightly_detection.py makes them (a 5% step after 25 nights, run-to-run sd
`level` plus a within-run sd of 3% over 30 readings), scanned each night by ``recent_shift`` with the nightly
detection's parameters (history 30, at least 10 nights before a start, winsorized at 3.5, tonight's own test at half
the level, the scan of the older starts adjusted for them: ``results.nightly_rows``), for several numbers of starts
and series levels α (two-sided; the product's are printed last). Printed per setting: the nights by which 50 / 90 /
95% of steps are found, the share found within the target night (the bound t + 1), and the rejections per night of
A/A series, the false alarm pressure the level puts on the product (whose false alerts per series-night are lower:
an alert stays open across the nights that keep rejecting). Beside them, bound t (benchmarks/nightly_detection.py):
a detector that knows the step's first night, one-sided 0.5%. No database: the product's own end-to-end figures are
nightly_detection's.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.nightly_detection import (  # noqa: E402
    READINGS,
    STEP,
    STEP_NIGHT,
    WITHIN_SD,
    known_start_delays,
    summarize,
)
from results import stats  # noqa: E402
from results.decisions import SERIES_LEVEL  # noqa: E402
from results.nightly_rows import (  # noqa: E402
    NEWEST_NIGHT_WEIGHT,
    SHIFT_CLIP,
    SHIFT_HISTORY,
    SHIFT_MIN_HISTORY,
    SHIFT_RECENT,
)

AFTER = 20
"""Nights scanned after the step."""


def first_nights(means: np.ndarray, *, starts: int, alpha: float) -> np.ndarray:
    """The first night after the step on which each series' scan rejects at `alpha` (AFTER + 1: never)."""
    first = np.full(means.shape[0], AFTER + 1)
    for m in range(1, AFTER + 1):
        found = stats.recent_shift(means[:, :STEP_NIGHT + m], history=SHIFT_HISTORY, recent=starts,
                                   min_history=SHIFT_MIN_HISTORY, clip=SHIFT_CLIP, newest_weight=NEWEST_NIGHT_WEIGHT)
        first[(found.pvalue < alpha) & (first > AFTER)] = m
    return first


def rejections_per_night(means: np.ndarray, *, starts: int, alpha: float) -> float:
    """The share of A/A series-nights whose scan rejects at `alpha`, from the first night a start can be tried."""
    shares = [np.mean(stats.recent_shift(means[:, :night], history=SHIFT_HISTORY, recent=starts,
                                         min_history=SHIFT_MIN_HISTORY, clip=SHIFT_CLIP,
                                         newest_weight=NEWEST_NIGHT_WEIGHT).pvalue < alpha)
              for night in range(SHIFT_MIN_HISTORY + 2, means.shape[1] + 1)]
    return float(np.mean(shares))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", type=float, default=0.03, help="run-to-run sd, relative (default 3%%)")
    parser.add_argument("--series", type=int, default=4_000)
    parser.add_argument("--starts", type=int, nargs="+", default=[10, 14, 20])
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.01, 0.02])
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()

    rng = np.random.default_rng(arguments.seed)
    sd = (arguments.level**2 + WITHIN_SD**2 / READINGS) ** 0.5
    nights = np.arange(STEP_NIGHT + AFTER)
    stepped = np.where(nights >= STEP_NIGHT, 1.0 + STEP, 1.0) + rng.normal(0.0, sd, (arguments.series, nights.size))
    flat = 1.0 + rng.normal(0.0, sd, (arguments.series, nights.size))
    bound = summarize(known_start_delays(arguments.level, variance_known=False), steps=100_000)["by_95"]
    if bound is None:
        raise SystemExit(f"the bound finds 95% of steps within no 16 nights at {arguments.level:.1%}: no target")
    target = bound + 1
    print(f"5% steps at {arguments.level:.1%} run-to-run noise, {arguments.series:,} series; bound t: 95% by night "
          f"{bound}, target {target}")
    print(f"{'starts':>7} {'alpha':>6} {'50% by':>7} {'90% by':>7} {'95% by':>7} {'within target':>14} "
          f"{'A/A rejections/night':>21}")
    for starts in arguments.starts:
        for alpha in arguments.alphas:
            first = first_nights(stepped, starts=starts, alpha=alpha)
            by = {share: int(np.percentile(first, share, method="higher")) for share in (50, 90, 95)}
            shown = {share: (night if night <= AFTER else "never") for share, night in by.items()}
            print(f"{starts:>7} {alpha:>6.3f} {shown[50]:>7} {shown[90]:>7} {shown[95]:>7} "
                  f"{np.mean(first <= target):>14.1%} {rejections_per_night(flat, starts=starts, alpha=alpha):>21.2%}")
    print(f"the product: {SHIFT_RECENT} starts at {SERIES_LEVEL:.0%} (results.nightly_rows.SHIFT_RECENT, "
          "results.decisions.SERIES_LEVEL)")


if __name__ == "__main__":
    main()
