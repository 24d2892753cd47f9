"""Change points read as steps or as drifts: what a trend-aware reading would do to the product's change points on
annotated public histories, and whether it would misread true steps (issue 29: the plan for TCPD's precision).

    .venv/bin/python benchmarks/real_histories.py --files tcpd_annotated.json --json var/tcpd_points.json
    .venv/bin/python benchmarks/drift_reading.py var/tcpd_points.json

Around each change point the product shows at the end of a series, the values (up to `nights` on each side, bounded
by its neighbouring change points, at least 4 on each side) are fit by least squares to
``log value = a + b·t + c·[t ≥ point]``: the point is read as a drift, not a step, where the step c is not
significant (its t test's p above the step level) and the slope b is (p below the slope level). Nested models: a
line against two means with no test would call most steps in noisy nightly histories drifts.

Printed per setting: TCPDBench's per-series precision and recall (margin ±5, as benchmarks/real_histories.py) of the
product's change points as they are and without those read as drifts, the peers' beside them; and, at the true
nights of benchmarks/injected_steps.py's steps (the same seed, sources and sizes), how many true steps the same
reading would call drifts: a drift reading must never swallow a step. Every setting of the grid is printed, so the
one quoted is not chosen silently; the product's own constants are 30 nights (the shift test's history) and 1% (the
change-point scan's level). An analysis after the fact, on the final points with the nights after them: the
product would decide with the nights it has.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from benchmarks.histories import DIRECTORY  # noqa: E402
from benchmarks.injected_steps import NIGHTS, injected, load_source, plan  # noqa: E402
from benchmarks.real_histories import annotated_scores  # noqa: E402

GRID_NIGHTS = (30, 20, 15)
GRID_LEVELS = ((0.01, 0.01), (0.05, 0.01), (0.05, 0.05), (0.1, 0.01), (0.01, 0.001))
"""(step level, slope level) pairs."""
INJECTED = {"asv": ((30, 30), (0.10, 0.20)), "browser": ((12, 12), (0.03, 0.05))}
"""benchmarks/injected_steps.py's defaults: (stepped, untouched) series and step sizes per source."""
FEWEST = 4
"""Fewest values on each side of a point for it to be read at all."""


def slope_and_step_pvalues(values: np.ndarray, left: int, split: int, right: int) -> tuple[float, float]:
    """Two-sided t-test p-values of the slope and of the step at `split` in the least-squares fit of
    ``log values[left:right] = a + b·t + c·[t ≥ split]``."""
    y = np.log(values[left:right])
    t = np.arange(y.size, dtype=float) - (split - left)
    design = np.column_stack([np.ones(y.size), t, (t >= 0).astype(float)])
    coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ coefficients
    df = y.size - design.shape[1]
    errors = np.sqrt(np.diag(residuals @ residuals / df * np.linalg.inv(design.T @ design)))
    slope_p, step_p = 2 * stats.t.sf(np.abs(coefficients[1:] / errors[1:]), df)
    return float(slope_p), float(step_p)


def drifts(values: np.ndarray, points: list[int], *, nights: int, step_level: float, slope_level: float) -> set[int]:
    """The change points of one series read as drifts."""
    found = set()
    points = sorted(points)
    for index, point in enumerate(points):
        left = max(points[index - 1] if index else 0, point - nights)
        right = min(points[index + 1] if index + 1 < len(points) else values.size, point + nights)
        if point - left < FEWEST or right - point < FEWEST:
            continue
        slope_p, step_p = slope_and_step_pvalues(values, left, point, right)
        if step_p > step_level and slope_p < slope_level:
            found.add(point)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("points", type=Path, help="The file benchmarks/real_histories.py --json wrote.")
    parser.add_argument("--seed", type=int, default=29, help="benchmarks/injected_steps.py's seed (default 29).")
    arguments = parser.parse_args()
    series = json.loads(arguments.points.read_text(encoding="utf-8"))
    annotations = {}
    for entry in series.values():
        if entry["file"] not in annotations:
            annotations[entry["file"]] = json.loads((DIRECTORY / entry["file"]).read_text(encoding="utf-8")).get(
                "annotations") or {}
    scored = [entry for entry in series.values() if annotations[entry["file"]].get(entry["name"])]
    if not scored:
        raise SystemExit(f"{arguments.points}: no series with annotations (run real_histories.py on "
                         "tcpd_annotated.json)")
    sources = {entry["source"] + " @ " + entry["commit"][:8] for entry in scored}
    print(f"{len(scored)} annotated series ({', '.join(sorted(sources))}); TCPDBench precision / recall, margin ±5")

    def scores(points_of) -> np.ndarray:
        return np.array([annotated_scores(points_of(entry), annotations[entry["file"]][entry["name"]])[:2]
                         for entry in scored]).mean(axis=0)

    for method in ("ours", "edivisive", "otava"):
        precision, recall = scores(lambda entry: entry[method])
        print(f"  {method:>9}: {precision:.3f} / {recall:.3f}, {sum(len(e[method]) for e in scored)} change points")

    steps = []
    for name, ((stepped, untouched), sizes) in INJECTED.items():
        source = load_source(name)
        chosen = plan(source, stepped=stepped, untouched=untouched, seed=arguments.seed)
        for size in sizes:
            steps.append((f"{name} +{size:.0%}", [
                (np.asarray(injected(source["series"][series_name], night, size)["values"], dtype=float), night)
                for series_name, night in chosen["stepped"].items()]))

    print(f"{'nights':>6} {'step p >':>8} {'slope p <':>9} | {'read as drift':>13} {'precision':>9} {'recall':>6} | "
          + " ".join(f"{label:>12}" for label, _ in steps) + "  (true steps read as drifts)")
    for nights in GRID_NIGHTS:
        for step_level, slope_level in GRID_LEVELS:
            options = {"nights": nights, "step_level": step_level, "slope_level": slope_level}
            removed = {id(entry): drifts(np.asarray(entry["values"], dtype=float), entry["ours"], **options)
                       for entry in scored}
            precision, recall = scores(lambda entry: [p for p in entry["ours"] if p not in removed[id(entry)]])
            misread = [sum(bool(drifts(values, [night], **options)) for values, night in cases)
                       for _, cases in steps]
            print(f"{nights:>6} {step_level:>8g} {slope_level:>9g} | {sum(map(len, removed.values())):>13} "
                  f"{precision:>9.3f} {recall:>6.3f} | "
                  + " ".join(f"{count:>5} of {len(cases):<3}" for count, (_, cases) in zip(misread, steps)))
    print(f"injected steps at their true nights, {NIGHTS} nights a series, seed {arguments.seed}: a point read alone "
          "(no neighbouring change points)")


if __name__ == "__main__":
    main()
