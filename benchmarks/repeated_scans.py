"""How often the rank scan finds a change in flat series when it looks every night, against one look.

    .venv/bin/python benchmarks/repeated_scans.py                 # 1,000 flat series, 3% noise, nights 10-40
    .venv/bin/python benchmarks/repeated_scans.py --series 400 --seed 3

The daily scan (results.changepoints) runs `results.stats.rank_shifts` at 1% every night over nearly the same
nights; its permutation test holds its level for one look. Each flat series (Gaussian night-to-night noise, no
change: a known truth) is scanned every night from night ``--first`` to ``--last``; printed, the series that got a
split on any night: every split (as stored before 2026-11-28), and only splits with
``results.changepoints.SETTLED_NIGHTS`` nights since them (as stored now), beside the baseline that does the same
work once: one scan of all ``--last`` nights. The scan alone, with the product's constants (its segment, level
and SETTLED_NIGHTS): the product also drops splits smaller than θ, so its counts are at most these.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
import django  # noqa: E402

django.setup()
from results.changepoints import MIN_SEGMENT, SETTLED_NIGHTS  # noqa: E402
from results.decisions import CHANGE_POINT_LEVEL as ALPHA  # noqa: E402
from results.stats import rank_shifts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--noise", type=float, default=0.03, help="Night-to-night sd (default 3%%).")
    parser.add_argument("--first", type=int, default=10, help="First night scanned (default 10).")
    parser.add_argument("--last", type=int, default=40, help="Nights at the last scan (default 40).")
    parser.add_argument("--seed", type=int, default=14)
    arguments = parser.parse_args()
    rng = np.random.default_rng(arguments.seed)
    load = os.getloadavg()[0]
    once = every = settled = 0
    started = time.perf_counter()
    for index in range(arguments.series):
        means = 1.0 + arguments.noise * rng.standard_normal(arguments.last)
        splits = [rank_shifts(means[:nights], min_segment=MIN_SEGMENT, alpha=ALPHA, seed=index).indices
                  for nights in range(arguments.first, arguments.last + 1)]
        once += bool(splits[-1])
        every += any(splits)
        settled += any(nights - split >= SETTLED_NIGHTS
                       for nights, found in zip(range(arguments.first, arguments.last + 1), splits) for split in found)
    seconds = time.perf_counter() - started
    looks = arguments.last - arguments.first + 1
    print(f"{arguments.series} flat series, night-to-night sd {arguments.noise:.1%}, rank scan at {ALPHA:.0%} "
          f"(min segment {MIN_SEGMENT}), seed {arguments.seed}; load {load:.2f} on {os.cpu_count()} cores")
    share = {label: count / arguments.series for label, count in
             (("once", once), ("every", every), ("settled", settled))}
    ratio = {label: f" ({value / share['once']:.1f}x the baseline)" if once else "" for label, value in share.items()}
    print(f"series with a split: scanned once at night {arguments.last} (baseline) {once} ({share['once']:.1%}); "
          f"scanned every night {arguments.first}-{arguments.last} ({looks} looks): any split {every} "
          f"({share['every']:.1%}){ratio['every']}, splits {SETTLED_NIGHTS}+ nights old (stored now) {settled} "
          f"({share['settled']:.1%}){ratio['settled']}")
    print(f"{seconds:.1f} s for {arguments.series * looks} scans")


if __name__ == "__main__":
    main()
