"""The peers' change points of series read from standard input: run with the peers' Python (see
benchmarks/real_histories.py), which has `signal-processing-algorithms` (MongoDB's E-Divisive means) and
`apache-otava`, and not this project.

Input: JSON ``{"name": [values...], ...}``. Output: JSON ``{"name": {"edivisive": [...], "otava": [...]}}``,
each the indices of the first point of every new segment, with each library's defaults: E-Divisive means at
p < 0.05 with 100 permutations, Otava's windowed E-Divisive with a t-test at p < 0.001 (window 50).

With ``--online`` (benchmarks/injected_steps.py), each peer is re-run on the points so far, night by night:
input ``[{"key": ..., "values": [...], "nights": [t, ...], "center": s or null, "tolerance": k,
"known": {"t": {"edivisive": [...], "otava": [...]}}}, ...]``; output ``{key: {"t": {"edivisive": [...],
"otava": [...]}}}``, the change points of ``values[:t + 1]`` for every night t listed. A result given in
``known`` is not computed again. With a ``center``, a peer is no longer run on a series once it has reported
a change point within ``tolerance`` of it.
"""

import json
import sys

import numpy as np
from otava.analysis import compute_change_points
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

PEERS = ("edivisive", "otava")


def peer_change_points(peer: str, values) -> list[int]:
    values = np.asarray(values, dtype=float)
    if peer == "edivisive":
        np.random.seed(0)  # E-Divisive's permutations draw from numpy's global generator
        return sorted(int(index) for index in e_divisive(values, pvalue=0.05, permutations=100))
    return sorted(int(point.index) for point in compute_change_points(list(values))[0])


def online(jobs: list[dict]) -> dict:
    found = {}
    for job in jobs:
        values, center, tolerance = job["values"], job.get("center"), job.get("tolerance", 0)
        known = job.get("known", {})
        pending, nights = set(PEERS), {}
        for night in job["nights"]:
            if not pending:
                break
            result = {}
            for peer in sorted(pending):
                points = known.get(str(night), {}).get(peer)
                if points is None:
                    points = peer_change_points(peer, values[:night + 1])
                result[peer] = points
                if center is not None and any(abs(point - center) <= tolerance for point in points):
                    pending.discard(peer)
            nights[str(night)] = result
        found[job["key"]] = nights
        if len(found) % 10 == 0:
            print(f"peers: {len(found)} of {len(jobs)} series", file=sys.stderr, flush=True)
    return found


def main() -> None:
    if "--online" in sys.argv[1:]:
        json.dump(online(json.load(sys.stdin)), sys.stdout)
        return
    series = json.load(sys.stdin)
    json.dump({name: {peer: peer_change_points(peer, values) for peer in PEERS} for name, values in series.items()},
              sys.stdout)


if __name__ == "__main__":
    main()
