"""Change points and alerts on public benchmark histories nobody here wrote, beside MongoDB's E-Divisive
means (`signal-processing-algorithms`) and Apache Otava on the same series.

    .venv/bin/python benchmarks/real_histories.py                       # every file in benchmarks/data/histories
    .venv/bin/python benchmarks/real_histories.py --peers-python /path/to/python
    .venv/bin/python benchmarks/real_histories.py --files perfherder_graphs.json --threshold 1   # θ = 1%

The histories (source repository, commit and paths printed; see benchmarks/data/histories/README.md) go
through the product end to end in a child process on a fresh SQLite file: each source is a project, night i
one run holding the i-th value of each of its series as a result of one value (n = 1; where the series are not one
machine's benchmarks, ``UNRELATED_SERIES``, one run per series, each series its own machine), posted through
``results.services.ingest_run`` with the analysis tasks run in the process as the analysis worker runs them
(``benchmarks.product.product_night``: the comparison and the accumulating detection, alerts, the
change points of the series it flagged), and the daily scan once at the end: the change points stored are
the product's. The peers run in their own virtual environment
(``.venv-peers``, made on first use from PyPI: signal-processing-algorithms 2.1.6 and apache-otava 0.8.0,
which pin dependencies this project does not share), with their defaults (benchmarks/peer_change_points.py).

Reference changes: the labels a source publishes for a series (its tests' expected change points, or an
annotated dataset's) where it has them, else the peers' agreement (a point both peers report within
±TOLERANCE points of each other, which favours the peers: each finds all of them by construction). Printed
per source: change points found (``ours``: those the product shows at the end, as the peers report theirs on the
whole series, its steps; ``ours+drift`` adds those it shows as drifts, a line through their night with no jump at
it; ``ours+retr`` adds those it stored on an earlier night and retracted once later nights no longer showed
them), precision and recall against the reference (a found point matches a
reference one within ±TOLERANCE points, each at most once), change points on series where neither the
reference nor either peer has one (flat series), and among those on two-mode series (bimodality
coefficient > 5/9); and the points from a reference change to the product's first alert naming a first
point within ±TOLERANCE of it.

Where a file holds several annotators' change points (``annotations``: TCPD), the mean per-series precision,
recall and F1 of van den Burg & Williams (2020) are printed too, with their margin of 5 points.

Where a source publishes labels, the recall of those whose level moves by at least θ is printed too: the
labels a practical-significance threshold lets through (Perfherder's own alerts need a move of at least 2%; its
tests' labels come from its t-test alone, and the peers have no threshold).

Target (issues 14, 29): recall ≥ the better peer, precision ≥ the better peer, no change point on a flat or
two-mode series.
"""

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from benchmarks.databases import measure_in_child  # noqa: E402
from benchmarks.histories import DIRECTORY, load_histories  # noqa: E402
from benchmarks.product import daily_scan, product_night  # noqa: E402

TOLERANCE = 5
UNRELATED_SERIES = ("tcpd_annotated.json",)
"""Sources whose series are not one machine's benchmarks (TCPD's: GDP, passengers, prices, each from elsewhere):
each series runs as its own machine, as the peers read each alone. As one machine, the product's environment
matching (results.environment) reads the nights on which most of them trend the same way as a runner type and
divides that out of them (131 of businv's 330 nights)."""
PEERS = ("signal-processing-algorithms==2.1.6", "apache-otava==0.8.0")
PEERS_VENV = ROOT / ".venv-peers"
START = datetime(2020, 1, 1, 2, tzinfo=timezone.utc)
WITHIN = (1, 3, 8)
MOVE_WINDOW = 12
"""Points either side of a label its move is measured on: Perfherder's windows (fore 12, back 12 to 24)."""


def peers_python(given: str | None) -> str:
    """The given interpreter, or ``.venv-peers``'s, made (and the peers installed) if missing."""
    if given:
        return given
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    installed = subprocess.run([str(python), "-c", "import otava.analysis, signal_processing_algorithms"],
                               capture_output=True, check=False)
    if installed.returncode != 0:
        # The two pin numpy apart (signal-processing-algorithms < 2, apache-otava == 2.2 on Python < 3.14), so
        # pip refuses them together. Otava's analysis needs only numpy and scipy, and runs on numpy 1.26:
        # install it without its pins (and without its CLI's dependencies).
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", PEERS[0]], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", PEERS[1]], check=True)
    return str(python)


def peer_change_points(python: str, series: dict[str, list[float]]) -> dict[str, dict[str, list[int]]]:
    finished = subprocess.run([python, str(ROOT / "benchmarks" / "peer_change_points.py")], check=True,
                              input=json.dumps(series), capture_output=True, text=True)
    return json.loads(finished.stdout)


def measure(path: str) -> dict:
    """The child: every source through the product; change points and alerts per series, as point indices."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command

    from results.models import Alert, ChangeKind, ChangePoint, Metric
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    payload = json.loads(Path(path).read_text())
    histories, threshold = payload["histories"], payload["threshold"]
    for source, entries in histories.items():
        length = max(len(entry["values"]) for entry in entries)
        machines = sorted({entry["machine"] for entry in entries})
        for night in range(length):
            for machine in machines:
                results = [{"benchmark": entry["name"], "unit": entry["unit"] or "1",
                            "direction": "higher_is_better" if entry["lower_is_better"] is False else "lower_is_better",
                            "summary": {"mean": entry["values"][night], "subsession_size": 1, "variance": 0.0, "n": 1}}
                           for entry in entries if night < len(entry["values"]) and entry["machine"] == machine]
                if not results:
                    continue
                document = RunIn.model_validate({
                    "project": {"name": source}, "machine": {"name": machine}, "kind": "nightly",
                    "revision": {"commit": f"{night:040x}", "branch": "main"},
                    "started_at": START + timedelta(days=night), "results": results})
                product_night(document)
            if night == 0 and threshold is not None:
                # θ is the metric's, set by its owner (the first night is compared with nothing yet).
                Metric.objects.filter(benchmark__project__name=source).update(threshold=threshold)
    daily_scan()

    def night(started) -> int:
        return (started - START).days

    # What the history page shows at the end (a later scan retracts a change point it no longer finds: kept,
    # marked, not shown), and apart the retracted ones: the online product's earlier decisions.
    found: dict[str, dict] = defaultdict(lambda: {"change_points": [], "drifts": [], "retracted": [], "alerts": []})
    for project, name, started, retracted, kind in ChangePoint.objects.values_list(
            "metric__benchmark__project__name", "metric__benchmark__name", "run__started_at", "retracted_at", "kind"):
        shown = "drifts" if kind == ChangeKind.DRIFT else "change_points"
        found[f"{project}\t{name}"][shown if retracted is None else "retracted"].append(night(started))
    for project, name, opened, first, state in Alert.objects.values_list(
            "comparison__candidate__run__project__name", "comparison__candidate__metric__benchmark__name",
            "comparison__candidate__run__started_at", "first_run__started_at", "state"):
        found[f"{project}\t{name}"]["alerts"].append([night(opened), night(first), state])
    return found


def matched(found: list[int], reference: list[int]) -> int:
    """Reference points matched by a found point within ±TOLERANCE, each point used once (nearest first)."""
    pairs = sorted((abs(f - r), i, j) for i, f in enumerate(found) for j, r in enumerate(reference)
                   if abs(f - r) <= TOLERANCE)
    used_found, used_reference = set(), set()
    for _, i, j in pairs:
        if i not in used_found and j not in used_reference:
            used_found.add(i)
            used_reference.add(j)
    return len(used_reference)


def annotated_scores(found: list[int], annotators: dict[str, list[int]]) -> tuple[float, float, float]:
    """Precision, recall and F1 of one series' change points against several annotators' (van den Burg & Williams
    2020, §5, as TCPDBench computes them): a point matches an annotated one within ±TOLERANCE (5, theirs), each
    at most once; precision is against the union of the annotations, recall the mean over the annotators; the
    series' first point counts as a change point of every set (their convention, so an empty set scores)."""
    predicted = sorted({0, *found})
    union = sorted({0, *(point for points in annotators.values() for point in points)})
    precision = matched(predicted, union) / len(predicted)
    recall = float(np.mean([matched(predicted, sorted({0, *points})) / len({0, *points})
                            for points in annotators.values()]))
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def level_move(values: np.ndarray, at: int) -> float:
    """How far a series' level moves at point `at`: the median of the MOVE_WINDOW points from it over that of the
    MOVE_WINDOW before it, minus 1 (NaN at the first point)."""
    if at <= 0:
        return float("nan")
    return float(np.median(values[at:at + MOVE_WINDOW]) / np.median(values[max(0, at - MOVE_WINDOW):at]) - 1.0)


def agreement(first: list[int], second: list[int]) -> list[int]:
    return [point for point in first if any(abs(point - other) <= TOLERANCE for other in second)]


def two_mode(values: np.ndarray) -> bool:
    """Sarle's bimodality coefficient above 5/9, the value of a uniform distribution."""
    n = values.size
    if n < 4 or np.ptp(values) == 0:
        return False
    skew, kurtosis = stats.skew(values, bias=False), stats.kurtosis(values, bias=False)
    return (skew**2 + 1) / (kurtosis + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))) > 5 / 9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers-python", help="A Python with signal-processing-algorithms and apache-otava.")
    parser.add_argument("--files", nargs="+", help="Only these history files (names, e.g. otava_tigerbeetle.json).")
    parser.add_argument("--max-length", type=int, default=1000,
                        help="Leave out longer series (MongoDB's profiling series repeat another up to 28 times).")
    parser.add_argument("--threshold", type=float, help="θ of every series, in percent (default: the product's "
                        "default, 2%%), as a project sets it for its metrics.")
    parser.add_argument("--json", type=Path, help="Also write every series' values and change points (ours, retracted, "
                        "the peers') to this file (read by benchmarks/drift_reading.py).")
    parser.add_argument("--one-machine", nargs="+", metavar="FILE",
                        help="Run these files' series as one machine even where they are unrelated (as before "
                             "2026-11-28: TCPD's figures at earlier stops).")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.child)))
        return

    loaded = [h for h in load_histories() if not arguments.files or h.file in arguments.files]
    # Ratios need positive values (TCPD and two test fixtures hold zeros or negative values).
    histories = [h for h in loaded if h.values.size <= arguments.max_length and np.all(h.values > 0)]
    print(f"{len(histories)} series of {len(loaded)} read: {len(loaded) - len(histories)} left out (longer than "
          f"{arguments.max_length} points, or values not all positive)")
    by_source: dict[str, list] = defaultdict(list)
    for history in histories:
        by_source[history.file].append(history)
    python = peers_python(arguments.peers_python)
    peers = {}
    for file, entries in by_source.items():
        found = peer_change_points(python, {h.name: h.values.tolist() for h in entries})
        peers.update({(file, name): value for name, value in found.items()})
    one_machine = arguments.one_machine or ()
    payload = {file: [{"name": h.name, "values": h.values.tolist(), "unit": h.unit,
                       "lower_is_better": h.lower_is_better,
                       "machine": h.name if file in UNRELATED_SERIES and file not in one_machine else "history"}
                      for h in entries] for file, entries in by_source.items()}
    scratch = ROOT / "var" / f"real_histories-{os.getpid()}.json"  # one per run: two runs may overlap
    scratch.parent.mkdir(exist_ok=True)
    threshold = None if arguments.threshold is None else arguments.threshold / 100
    scratch.write_text(json.dumps({"histories": payload, "threshold": threshold}))
    ours = measure_in_child(__file__, [str(scratch)], database="sqlite")
    scratch.unlink()

    if arguments.json:
        arguments.json.write_text(json.dumps({f"{file}\t{h.name}": {
            "file": file, "name": h.name, "values": h.values.tolist(), "source": h.source, "commit": h.commit,
            "ours": ours.get(f"{file}\t{h.name}", {}).get("change_points", []),
            "drifts": ours.get(f"{file}\t{h.name}", {}).get("drifts", []),
            "retracted": ours.get(f"{file}\t{h.name}", {}).get("retracted", []), **peers[file, h.name]}
            for file, entries in by_source.items() for h in entries}))
    # "ours": the steps the product shows at the end; "ours+drift": with the change points it shows as drifts (no
    # step at their night); "ours+retr": with those too and those it retracted on the way.
    methods = ("ours", "ours+drift", "ours+retr", "edivisive", "otava")

    def points_of(method: str, file: str, name: str) -> list[int]:
        if method in ("edivisive", "otava"):
            return peers[file, name][method]
        product = ours.get(f"{file}\t{name}", {})
        return (product.get("change_points", []) + (product.get("drifts", []) if method != "ours" else [])
                + (product.get("retracted", []) if method == "ours+retr" else []))

    print(f"Change points within ±{TOLERANCE} points; product end to end on SQLite (one value per night, θ = "
          f"{arguments.threshold if arguments.threshold is not None else 2:g}%),"
          " peers with their defaults")
    print("ref: series with published labels (the others: the peers' agreement)")
    print(f"{'source':<28} {'series':>6} {'ref':>9} {'method':>9} {'found':>6} {'precision':>10} {'recall':>7} "
          f"{'flat series: CPs':>17} {'two-mode: CPs':>14}")
    totals = {method: [0, 0, 0, 0] for method in methods}  # found, correct, reference, flat change points
    delays: list[int | None] = []
    for file, entries in by_source.items():
        first = entries[0]
        print(f"# {first.source} @ {first.commit}: {', '.join(first.paths)}")
        reference = {}
        for h in entries:
            peer = peers[file, h.name]
            reference[h.name] = list(h.labels) if h.labels is not None else agreement(peer["edivisive"], peer["otava"])
        labelled = sum(h.labels is not None for h in entries)
        flat = [h for h in entries if not reference[h.name] and not any(peers[file, h.name].values())]
        bimodal = [h for h in flat if two_mode(h.values)]
        for method in methods:
            points = {h.name: points_of(method, file, h.name) for h in entries}
            found = sum(len(p) for p in points.values())
            correct = sum(matched(points[h.name], reference[h.name]) for h in entries)
            total = sum(len(r) for r in reference.values())
            on_flat = sum(len(points[h.name]) for h in flat)
            on_bimodal = sum(len(points[h.name]) for h in bimodal)
            for index, value in enumerate((found, correct, total, on_flat)):
                totals[method][index] += value
            print(f"{Path(file).stem[:28]:<28} {len(entries):>6} {f'{labelled} lab.':>9} "
                  f"{method:>9} {found:>6} {_share(correct, found):>10} {_share(correct, total):>7} "
                  f"{f'{on_flat} on {len(flat)}':>17} {f'{on_bimodal} on {len(bimodal)}':>14}")
        if labelled:
            # The labels a practical threshold lets through: Perfherder alerts only on moves of at least its
            # signature's threshold (PERFHERDER_REGRESSION_THRESHOLD = 2%, treeherder/config/settings.py at the
            # commit above), where its tests' labels are its t-test's alone; the peers have no threshold.
            theta = (arguments.threshold if arguments.threshold is not None else 2.0) / 100
            sized = {h.name: [c for c in reference[h.name] if abs(level_move(h.values, c)) >= theta]
                     for h in entries if h.labels is not None}
            within = sum(map(len, sized.values()))
            print(f"{'':<28} labels moving ≥ θ ({MOVE_WINDOW} points either side, medians): {within} of "
                  f"{sum(len(reference[name]) for name in sized)}; recall of those: " + ", ".join(
                      f"{method} {_share(sum(matched(points_of(method, file, n), sized[n]) for n in sized), within)}"
                      for method in methods))
        for h in entries:
            alerts = ours.get(f"{file}\t{h.name}", {}).get("alerts", [])
            for change in reference[h.name]:
                opened = [o for o, f, _ in alerts if o >= change - 1 and abs(f - change) <= TOLERANCE]
                delays.append(min(opened) - change + 1 if opened else None)
    print(f"{'all':<28} {len(histories):>6} {'':>9}", end="")
    for position, method in enumerate(methods):
        found, correct, total, on_flat = totals[method]
        print(("" if position == 0 else f"{'':<45}") + f" {method:>9} {found:>6} {_share(correct, found):>10} "
              f"{_share(correct, total):>7} {on_flat:>17}")
    for file, entries in by_source.items():
        annotations = json.loads((DIRECTORY / file).read_text(encoding="utf-8")).get("annotations")
        if not annotations:
            continue
        scored = [h for h in entries if annotations.get(h.name)]
        print(f"{Path(file).stem}: {len(scored)} series with annotators' change points; per series, then averaged "
              f"(TCPDBench's F1, margin ±{TOLERANCE}): precision, recall, F1")
        for method in methods:
            scores = np.array([annotated_scores(points_of(method, file, h.name), annotations[h.name])
                               for h in scored])
            print(f"{'':<28} {method:>9} " + " ".join(f"{value:>7.3f}" for value in scores.mean(axis=0)))
    if delays:
        hits = [d for d in delays if d is not None]
        print(f"Alerts: {len(delays)} reference changes; first alert naming its point (±{TOLERANCE}) within "
              + ", ".join(f"{m} point{'s' if m > 1 else ''}: {sum(d <= m for d in hits) / len(delays):.0%}"
                          for m in WITHIN)
              + f"; never: {1 - len(hits) / len(delays):.0%}; median {np.median(hits) if hits else float('nan'):g}")


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}" if whole else "—"


if __name__ == "__main__":
    main()
