"""The peers' change points of series read from standard input: run with the peers' Python (see
benchmarks/real_histories.py), which has `signal-processing-algorithms` (MongoDB's E-Divisive means) and
`apache-otava`, and not this project.

Input: JSON ``{"name": [values...], ...}``. Output: JSON ``{"name": {"edivisive": [...], "otava": [...]}}``,
each the indices of the first point of every new segment, with each library's defaults: E-Divisive means at
p < 0.05 with 100 permutations, Otava's windowed E-Divisive with a t-test at p < 0.001 (window 50).
"""

import json
import sys

import numpy as np
from otava.analysis import compute_change_points
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive


def main() -> None:
    series = json.load(sys.stdin)
    found = {}
    for name, values in series.items():
        values = np.asarray(values, dtype=float)
        np.random.seed(0)  # E-Divisive's permutations draw from numpy's global generator
        found[name] = {
            "edivisive": sorted(int(index) for index in e_divisive(values, pvalue=0.05, permutations=100)),
            "otava": sorted(int(point.index) for point in compute_change_points(list(values))[0]),
        }
    json.dump(found, sys.stdout)


if __name__ == "__main__":
    main()
