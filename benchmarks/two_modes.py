"""Series alternating between two far-apart modes (a slow path taken on some nights), through the product night by
night, beside E-Divisive means and Apache Otava on the same series.

    .venv/bin/python benchmarks/two_modes.py                      # 20 seeds, every case
    .venv/bin/python benchmarks/two_modes.py --seeds 40 --peers-python /path/to/python

Each seed draws the nights of a 1x / 3x series (``slow_nights``, which tests/results/test_segments.py draws its
seeded series with: 40% of the first 30 nights slow at random, then each ten nights a share between 15% and 60%, as
on Perfherder's ``runs5``), with
0.3% noise, and runs three cases of it, each series its own machine (one value and a 0.5% within-run spread a night,
posted through ingestion with the analysis tasks run as the analysis worker runs them, and the daily scan):

- ``flat``: 80 nights, nothing changes (spec §8: no change point and no alert);
- ``every night slow``: from night 50 every night slow (the fast path gone: one regression);
- ``fast mode 2x``: from night 50 the fast nights take 2x (one regression).

Printed per case: series with any alert, with one not dismissed, alerts in all (from night 50 on for the changed
cases), series with more than one such alert, change points shown at the end, and for the changed cases the nights
from night 50 to the first alert (median, never); the peers' change points on the same 80 / 70 values, run once on
the whole series (their best case: they see the future).
"""

import argparse
import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.databases import measure_in_child  # noqa: E402
from benchmarks.product import daily_scan, product_night  # noqa: E402
from benchmarks.real_histories import peer_change_points, peers_python  # noqa: E402

CASES = ("flat", "every night slow", "fast mode 2x")
CHANGE_NIGHT = 50
START = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)


def slow_nights(nights: int, *, seed: int) -> np.ndarray:
    """The nights in the slow mode: 40% of the first 30 nights at random, then each ten nights take a share between
    15% and 60%, so that the share drifts from week to week, as on Perfherder's runs5 history (20% to 60% of a
    month's nights)."""
    rng = np.random.default_rng(seed)
    share = np.concatenate([np.full(30, 0.4), np.repeat(rng.uniform(0.15, 0.6, (nights + 9) // 10), 10)])[:nights]
    return rng.random(nights) < share


def case_levels(case: str, seed: int) -> list[float]:
    slow = slow_nights(80, seed=seed)
    levels = np.where(slow, 3.0, 1.0)
    if case == "every night slow":
        levels[CHANGE_NIGHT:] = 3.0
    elif case == "fast mode 2x":
        levels[CHANGE_NIGHT:] = np.where(slow[CHANGE_NIGHT:], 3.0, 2.0)
    levels = levels * (1.0 + np.random.default_rng(seed).normal(0.0, 0.003, 80))
    return levels[:80 if case == "flat" else 70].tolist()


def measure(path: str) -> dict:
    """The child: every series through the product, its alerts and the change points shown at the end."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command

    from results.models import Alert, ChangePoint
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    series = json.loads(Path(path).read_text())
    for night in range(max(map(len, series.values()))):
        for name, levels in series.items():
            if night < len(levels):
                product_night(RunIn.model_validate({
                    "project": {"name": "Two modes"}, "machine": {"name": name}, "kind": "nightly",
                    "revision": {"commit": f"{night:040x}", "branch": "main"},
                    "started_at": START + timedelta(days=night),
                    "results": [{"benchmark": name, "summary": {
                        "mean": levels[night], "subsession_size": 1, "variance": (levels[night] * 0.005) ** 2,
                        "n": 20}}]}))
        daily_scan()
    found = {name: {"alerts": [], "change_points": []} for name in series}
    for name, opened, state in Alert.objects.values_list(
            "comparison__candidate__metric__benchmark__name", "comparison__candidate__run__started_at", "state"):
        found[name]["alerts"].append([(opened - START).days, state])
    for name, started in ChangePoint.objects.filter(retracted_at__isnull=True).values_list(
            "metric__benchmark__name", "run__started_at"):
        found[name]["change_points"].append((started - START).days)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="Series per case (seeds 11, 12, ...).")
    parser.add_argument("--peers-python", help="A Python with signal-processing-algorithms and apache-otava.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.child)))
        return

    series = {f"{case} {seed}": case_levels(case, seed) for case in CASES for seed in range(11, 11 + arguments.seeds)}
    scratch = ROOT / "var" / f"two_modes-{os.getpid()}.json"
    scratch.parent.mkdir(exist_ok=True)
    scratch.write_text(json.dumps(series))
    ours = measure_in_child(__file__, [str(scratch)], database="sqlite")
    scratch.unlink()
    peers = peer_change_points(peers_python(arguments.peers_python), series)

    print(f"{arguments.seeds} series per case, 1x / 3x modes, the share of slow nights drifting 15-60%; product end "
          "to end on SQLite, each series its own machine; peers once on the whole series")
    print(f"{'case':<17} {'alerted':>8} {'not dismissed':>14} {'alerts':>7} {'>1 alert':>9} {'CPs':>4} "
          f"{'median nights':>14} {'never':>6} {'E-Div CPs':>10} {'Otava CPs':>10}")
    for case in CASES:
        names = [name for name in series if name.rsplit(" ", 1)[0] == case]
        since = 0 if case == "flat" else CHANGE_NIGHT
        alerts = {name: [a for a in ours[name]["alerts"] if a[0] >= since] for name in names}
        delays = [min(a[0] for a in alerts[name]) - CHANGE_NIGHT + 1 if alerts[name] else None for name in names]
        reached = [d for d in delays if d is not None]
        changed = case != "flat"
        print(f"{case:<17} {sum(bool(a) for a in alerts.values()):>8} "
              f"{sum(any(s != 'dismissed' for _, s in a) for a in alerts.values()):>14} "
              f"{sum(map(len, alerts.values())):>7} {sum(len(a) > 1 for a in alerts.values()):>9} "
              f"{sum(len(ours[name]['change_points']) for name in names):>4} "
              f"{(f'{np.median(reached):g}' if reached and changed else '—'):>14} "
              f"{(delays.count(None) if changed else '—'):>6} "
              f"{sum(len(peers[name]['edivisive']) for name in names):>10} "
              f"{sum(len(peers[name]['otava']) for name in names):>10}")
    print("alerted / not dismissed / >1 alert: series (the changed cases: alerts from night 50 on); CPs: change points "
          "shown at the end; median nights: from night 50 to the first alert (night 50 itself is 1)")
    print("target (issue 29): no change point and no alert on a flat two-mode series; aim (the issue's 'every shift "
          "its own alert', read as one alert a shift): one alert a changed series")


if __name__ == "__main__":
    main()
