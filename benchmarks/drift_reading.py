"""Change points read as steps or as drifts, over a grid of settings: the analysis by which the product's drift reading
(``results.changepoints``, ``results.stats.read_drifts`` at ``results.decisions.DRIFT_STEP_LEVEL``) was chosen, and the check that it misreads no true step.

    .venv/bin/python benchmarks/real_histories.py --files tcpd_annotated.json --json var/tcpd_points.json
    .venv/bin/python benchmarks/drift_reading.py var/tcpd_points.json

Around each change point the product shows at the end of a series (its steps and its drifts), the values (up to
`nights` on each side, bounded by its neighbouring change points, at least 4 on each side) are fit by least squares
to ``log value = a + b·t + c·[t ≥ point]`` (``results.stats.trend_step``): the point is read as a drift, not a
step, where the step c is not significant (its t test's p above the step level) and the slope b is (p below the
slope level). Nested models: a line against two means with no test would call most steps in noisy nightly
histories drifts.

Printed per setting: TCPDBench's per-series precision and recall (margin ±5, as benchmarks/real_histories.py) of the
change points the product shows, as they are and without those this reading calls drifts, beside the product's own
steps and the peers'; and, at the true nights of benchmarks/injected_steps.py's steps (the same seed, sources and
sizes), how many true steps the same reading would call drifts: a drift reading must never swallow a step. Every
setting of the grid is printed, so the one quoted is not chosen silently; the product's are 30 nights (the shift
test's history), step level 1% (the change-point scan's) and slope level 0.1%. Read here on the raw values with
the nights after each point; the product reads the night means its scan reads, once 10 nights follow a point.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.histories import DIRECTORY  # noqa: E402
from benchmarks.injected_steps import NIGHTS, injected, load_source, plan  # noqa: E402
from benchmarks.real_histories import annotated_scores  # noqa: E402
from results import stats  # noqa: E402

GRID_NIGHTS = (30, 20, 15)
GRID_LEVELS = ((0.01, 0.01), (0.05, 0.01), (0.05, 0.05), (0.1, 0.01), (0.01, 0.001))
"""(step level, slope level) pairs."""
GRID_READINGS = ((False, 4), (False, 10), (True, 4), (True, 10))
"""(a drift stops bounding its neighbours, nights since a point before it is read); the product's: (True, 10)."""
INJECTED = {"asv": ((30, 30), (0.10, 0.20)), "browser": ((12, 12), (0.03, 0.05))}
"""benchmarks/injected_steps.py's defaults: (stepped, untouched) series and step sizes per source."""


def drifts(values, points: list[int], **options) -> set[int]:
    """The change points of one series read as drifts by the product's reading with `options`."""
    reading = stats.read_drifts(np.asarray(values, dtype=float), sorted(points), **options)
    return {point for point, drift in zip(sorted(points), reading.drift) if drift}


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

    def shown(entry) -> list[int]:  # every change point the product shows, steps and drifts
        return sorted(entry["ours"] + entry.get("drifts", []))

    for method, points_of in (("shown", shown), ("its steps", lambda entry: entry["ours"]),
                              ("edivisive", lambda entry: entry["edivisive"]), ("otava", lambda entry: entry["otava"])):
        precision, recall = scores(points_of)
        print(f"  {method:>9}: {precision:.3f} / {recall:.3f}, {sum(len(points_of(e)) for e in scored)} change points")

    steps = []
    for name, ((stepped, untouched), sizes) in INJECTED.items():
        source = load_source(name)
        chosen = plan(source, stepped=stepped, untouched=untouched, seed=arguments.seed)
        for size in sizes:
            steps.append((f"{name} +{size:.0%}", [
                (np.asarray(injected(source["series"][series_name], night, size)["values"], dtype=float), night)
                for series_name, night in chosen["stepped"].items()]))

    print(f"{'through':>7} {'since':>5} {'nights':>6} {'step p >':>8} {'slope p <':>9} | {'read as drift':>13} "
          f"{'precision':>9} {'recall':>6} | " + " ".join(f"{label:>12}" for label, _ in steps)
          + "  (true steps read as drifts)")
    for through_drifts, nights_since in GRID_READINGS:
        for nights in GRID_NIGHTS:
            for step_level, slope_level in GRID_LEVELS:
                options = {"nights": nights, "step_level": step_level, "slope_level": slope_level,
                           "nights_since": nights_since, "through_drifts": through_drifts}
                removed = {id(entry): drifts(entry["values"], shown(entry), **options) for entry in scored}
                precision, recall = scores(lambda entry: [p for p in shown(entry) if p not in removed[id(entry)]])
                misread = [sum(bool(drifts(values, [night], **options)) for values, night in cases)
                           for _, cases in steps]
                print(f"{'yes' if through_drifts else 'no':>7} {nights_since:>5} {nights:>6} {step_level:>8g} "
                      f"{slope_level:>9g} | {sum(map(len, removed.values())):>13} {precision:>9.3f} {recall:>6.3f} | "
                      + " ".join(f"{count:>5} of {len(cases):<3}" for count, (_, cases) in zip(misread, steps)))
    print(f"through: a drift stops bounding its neighbours' windows; since: nights after a point before it is read. "
          f"Injected steps at their true nights, {NIGHTS} nights a series, seed {arguments.seed}: a point read alone "
          "(no neighbouring change points)")


if __name__ == "__main__":
    main()
