"""Nightly detection, end to end: simulated nightly runs through the real ingestion, comparison and
change-point code, against an oracle.

    .venv/bin/python benchmarks/nightly_detection.py                     # 300 series × 40 nights, 3 levels
    .venv/bin/python benchmarks/nightly_detection.py --series 100 --levels 0.015

Each night posts one run of `series` results (one per series; each result the summary of 30 readings
with a within-run sd of 3%) through ``results.services.ingest_run``, then calls the tasks' services
in-process as the worker would: ``results.comparisons.compare_run`` (comparisons, q-values, alerts)
and ``results.changepoints.detect_change_points_for_run``. Every series has its own run-to-run noise
(sd per level); half of them step up by 5% from night 25 (a regression), the other half stay the same
(A/A). Printed per level:

- alerts per series-night without a shift (nights K…end of the A/A series, K…24 of the step series);
- the share of steps alerted within 1, 2, 3 and 8 nights of the step, and never (nights 25…end);
- the share of steps whose first alert names the step's first night within ±1 night (an alert that
  names no start names the night it opened on);
- change points stored at the end, on A/A series and on step series;
- the oracle beside it: it knows the baseline mean and both variances and pools the m nights since the
  step, one-sided at 0.5% per series-night (spec §8's physical limit).

Targets (issue 14): ≤ 0.5% alerts per A/A series-night; 95% of steps alerted within the oracle's nights + 1;
≤ 1% of steps never alerted at 0.5% and 1.5%, ≤ 5% at 3%; the first night within ±1 for ≥ 90% at 1.5%.
"""

import argparse
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import measure_in_child  # noqa: E402

WITHIN_SD = 0.03
READINGS = 30
STEP = 0.05
STEP_NIGHT = 25
ONE_SIDED_LEVEL = 0.005
WITHIN = (1, 2, 3, 8)
# False alerts are counted from the night the history holds K = 10 nights (the projects' default K).
HISTORY_FULL = 10


def oracle_nights(levels: list[float]) -> dict[str, dict]:
    """Per run-to-run sd: the share of steps the oracle detects within 1, 2, 3, 8 nights, and the nights it
    needs for 95%: z = mean of the m nights since the step, minus the known baseline, over its known
    standard error, against the one-sided 0.5% quantile (a normal model, so exact rather than simulated)."""
    from scipy import stats

    figures = {}
    for level in levels:
        variance = level**2 + WITHIN_SD**2 / READINGS
        power = {m: float(stats.norm.sf(stats.norm.isf(ONE_SIDED_LEVEL) - STEP / (variance / m) ** 0.5))
                 for m in range(1, 41)}
        figures[f"{level}"] = {"within": {m: power[m] for m in WITHIN},
                               "nights_95": next(m for m in range(1, 41) if power[m] >= 0.95)}
    return figures


def measure(series: int, nights: int, level: float, seed: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    import numpy as np
    from django.core.management import call_command

    from results import changepoints, comparisons, services
    from results.models import Alert, ChangePoint, Metric
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)
    stepped = np.arange(series) % 2 == 1
    seconds = 0.0
    posted = np.empty((series, nights))
    for night in range(nights):
        levels = 1.0 + rng.normal(0.0, level, series) + np.where(stepped & (night >= STEP_NIGHT), STEP, 0.0)
        readings = levels[:, None] * (1.0 + rng.normal(0.0, WITHIN_SD, (series, READINGS)))
        posted[:, night] = readings.mean(axis=1)
        document = RunIn.model_validate({
            "project": {"name": "Detection"}, "machine": {"name": "bench-1"}, "kind": "nightly",
            "revision": {"commit": f"{night:040x}", "branch": "main"}, "started_at": start + timedelta(days=night),
            "results": [{"benchmark": f"series {i:04d}", "summary": {
                "mean": float(readings[i].mean()), "subsession_size": 1,
                "variance": float(readings[i].var(ddof=1)), "n": READINGS}} for i in range(series)],
        })
        began = time.perf_counter()
        run = services.ingest_run(document=document, user=None).run
        comparisons.compare_run(run_id=run.pk)
        changepoints.detect_change_points_for_run(run_id=run.pk)
        seconds += time.perf_counter() - began

    index = {metric_id: int(name.split()[-1]) for metric_id, name in
             Metric.objects.values_list("pk", "benchmark__name")}
    first_alert: dict[int, int] = {}
    false_alerts = 0
    for metric_id, started in Alert.objects.values_list("comparison__candidate__metric_id",
                                                         "comparison__candidate__run__started_at"):
        i, night = index[metric_id], (started - start).days
        if night >= STEP_NIGHT and stepped[i]:
            first_alert[i] = min(first_alert.get(i, nights), night)
        elif night >= HISTORY_FULL:
            false_alerts += 1
    steps = int(stepped.sum())
    delays = [first_alert[i] - STEP_NIGHT + 1 for i in np.flatnonzero(stepped) if i in first_alert]
    change_points = list(ChangePoint.objects.values_list("metric_id", flat=True))
    return {
        "core": core_preview(posted, stepped),
        "level": level, "series": series, "nights": nights, "seconds": seconds,
        "false_per_series_night": false_alerts / _unchanged_series_nights(stepped, nights),
        "within": {m: sum(delay <= m for delay in delays) / steps for m in WITHIN},
        "never": 1 - len(delays) / steps,
        # Alerts name no start night: the first alert names the night it opened on.
        "first_night_within_1": sum(delay <= 2 for delay in delays) / steps,
        "change_points_aa": sum(not stepped[index[m]] for m in change_points),
        "change_points_step": sum(bool(stepped[index[m]]) for m in change_points),
    }


def core_preview(posted, stepped) -> dict:
    """What results.stats.recent_shift alone makes of the same posted means (not yet wired into the product):
    each night, every series scanned, Benjamini–Hochberg across the run's series, an alert the first night a
    series has q < 5% with its ratio beyond 1 + θ (θ = 2%); the alert names the scan's start night. False
    alerts count every flagged night without a shift from night K on."""
    import numpy as np
    from scipy import stats

    from results.stats import recent_shift

    series, nights = posted.shape
    alerted = np.full(series, -1)
    named = np.full(series, -1)
    false = 0
    for night in range(4, nights):
        scan = recent_shift(posted[:, :night + 1])
        pvalues = np.where(np.isnan(scan.pvalue), 1.0, scan.pvalue)
        flagged = (stats.false_discovery_control(pvalues, method="bh") < 0.05) & (scan.ratio > 1.02)
        # Every flagged night of a series with no shift (yet) counts, as every alert the product opens does.
        if night >= HISTORY_FULL:
            false += int(np.sum(flagged & (~stepped if night >= STEP_NIGHT else True)))
        new = flagged & stepped & (night >= STEP_NIGHT) & (alerted < 0)
        alerted[new], named[new] = night, scan.start[new]
    steps = np.flatnonzero(stepped)
    delays = [alerted[i] - STEP_NIGHT + 1 for i in steps if alerted[i] >= 0]
    return {
        "false_per_series_night": false / _unchanged_series_nights(stepped, nights),
        "within": {m: sum(delay <= m for delay in delays) / stepped.sum() for m in WITHIN},
        "never": float(1 - len(delays) / stepped.sum()),
        "first_night_within_1": sum(alerted[i] >= 0 and abs(named[i] - STEP_NIGHT) <= 1 for i in steps)
        / stepped.sum(),
    }


def _unchanged_series_nights(stepped, nights: int) -> int:
    """Series-nights without a shift from night K on: every night of an A/A series, a step series' nights
    before its step."""
    return int((~stepped).sum() * (nights - HISTORY_FULL) + stepped.sum() * (STEP_NIGHT - HISTORY_FULL))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=300)
    parser.add_argument("--nights", type=int, default=40)
    parser.add_argument("--levels", type=float, nargs="+", default=[0.005, 0.015, 0.03],
                        help="Run-to-run sd, relative (default 0.5%%, 1.5%%, 3%%).")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--level", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.series, arguments.nights, arguments.level, arguments.seed)))
        return
    oracle = oracle_nights(arguments.levels)
    print(f"{arguments.series} series × {arguments.nights} nights, within-run sd {WITHIN_SD:.0%} over {READINGS} "
          f"readings, a {STEP:.0%} step from night {STEP_NIGHT} in half the series; SQLite, tasks in-process")
    print(f"{'run-to-run':>10} {'':>7} {'false/series-night':>18} " + " ".join(f"{f'≤{m} n':>6}" for m in WITHIN)
          + f" {'never':>6} {'1st ±1':>7} {'95% by':>7} {'CP A/A':>7} {'CP step':>8} {'seconds':>8}")
    for level in arguments.levels:
        figures = measure_in_child(__file__, ["--series", str(arguments.series), "--nights", str(arguments.nights),
                                              "--level", str(level), "--seed", str(arguments.seed)],
                                   database="sqlite")
        within = {int(m): share for m, share in figures["within"].items()}
        reached = next((m for m in WITHIN if within[m] >= 0.95), None)
        print(f"{level:>10.1%} {'ours':>7} {figures['false_per_series_night']:>18.2%} "
              + " ".join(f"{within[m]:>6.0%}" for m in WITHIN)
              + f" {figures['never']:>6.0%} {figures['first_night_within_1']:>7.0%} "
              + f"{'>' + str(WITHIN[-1]) if reached is None else '≤' + str(reached):>7} "
              + f"{figures['change_points_aa']:>7} {figures['change_points_step']:>8} {figures['seconds']:>8.1f}")
        core = figures["core"]
        core_within = {int(m): share for m, share in core["within"].items()}
        core_reached = next((m for m in WITHIN if core_within[m] >= 0.95), None)
        print(f"{'':>10} {'core*':>7} {core['false_per_series_night']:>18.2%} "
              + " ".join(f"{core_within[m]:>6.0%}" for m in WITHIN)
              + f" {core['never']:>6.0%} {core['first_night_within_1']:>7.0%} "
              + f"{'>' + str(WITHIN[-1]) if core_reached is None else '≤' + str(core_reached):>7}")
        known = oracle[f"{level}"]
        print(f"{'':>10} {'oracle':>7} {ONE_SIDED_LEVEL:>18.2%} "
              + " ".join(f"{known['within'][m]:>6.0%}" for m in WITHIN)
              + f" {'0%':>6} {'':>7} {known['nights_95']:>7}")
    print("core*: results.stats.recent_shift on the same posted means, BH across the run, q < 5% and +2%: a "
          "preview, not yet wired into the comparison service")
    print("targets: false ≤ 0.5% per A/A series-night; 95% within the oracle's nights + 1; never ≤ 1% "
          "(0.5%, 1.5%), ≤ 5% (3%); first night ±1 for ≥ 90% at 1.5%")


if __name__ == "__main__":
    main()
