"""Nightly detection, end to end: simulated nightly runs through the real ingestion, comparison and
change-point code, against an oracle and the realistic bound (spec §8, revised 2026-11-26).

    .venv/bin/python benchmarks/nightly_detection.py                     # 300 series × 40 nights, 3 levels
    .venv/bin/python benchmarks/nightly_detection.py --series 100 --levels 0.015
    .venv/bin/python benchmarks/nightly_detection.py --scenario two-steps     # a second step 25 nights later
    .venv/bin/python benchmarks/nightly_detection.py --scenario machine-wide  # 20 of 40 series move at once
    .venv/bin/python benchmarks/nightly_detection.py --scenario machine-drift # 20 of 40 drift together

Each night posts one run of `series` results (one per series; each result the summary of 30 readings
with a within-run sd of 3%) through ``results.services.ingest_run``, then calls the tasks' services
in-process as the worker would: ``results.comparisons.compare_run`` (comparisons, q-values, alerts)
and ``results.alerts.scan_run_series`` (the change points of the series it flagged, alerted), then the daily
scan of every series (``results.alerts.scan_change_points``), as beat runs it once a day. Every series
has its own run-to-run noise (sd per level); half of them step up by 5% from night 25 (a regression), the other
half stay the same (A/A). Printed per level:

- alerts per series-night without a shift (nights K…end of the A/A series, K…24 of the step series);
- the share of steps alerted within 1, 2, 3 and 8 nights of the step, and never (nights 25…end; with two steps,
  within the same 20 nights of each);
- the share of steps whose first alert names the step's first night within ±1 night;
- change points stored at the end, on A/A series and on step series;
- the oracle beside it: it knows the baseline mean and both variances and pools the m nights since the
  step, one-sided at 0.5% per series-night (spec §8's physical limit), alerted the first night its test
  rejects (simulated, 100,000 steps);
- two bounds beside the oracle: detectors that also know the step's first night but must learn the
  baseline mean from the nights before the step, as the product must (σ known, or estimated: the pooled
  t test). The target (oracle + 1 night) can be out of their reach.

Scenarios: ``step`` (above); ``two-steps``: the step series step again by 5% at night 50, 25 nights after the
first (70 nights), and the second step's delays are printed beside the first's; ``machine-wide``: 20 of 40 series
move at night 25 by 4% to 12% (machine-wide, as a runner image does), counted in incidents and alerts;
``machine-drift``: the same 20 slow by 0.4% a night from night 25 (a degrading machine), counted the same way, with
the share of their nights whose change the environment matching divided out.

Targets (issue 29): ≤ 0.5% alerts per A/A series-night; 95% of 5% steps alerted within the realistic bound + 1
night (the bound t below: the step's night known, the baseline learnt from the nights before it; 2 / 4 / 11 nights
at 0.5% / 1.5% / 3%); ≤ 1% / 1% / 5% never alerted; the second of two steps alerted as fast as the first; a
machine-wide shift of 20 of 40 series one incident and no more than 20 series alerts (the moved series' alerts are
printed with how many are each series' first since the move and how many came after it).
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

import numpy as np  # noqa: E402

from benchmarks.databases import measure_in_child  # noqa: E402

WITHIN_SD = 0.03
READINGS = 30
STEP = 0.05
STEP_NIGHT = 25
ONE_SIDED_LEVEL = 0.005
WITHIN = (1, 2, 3, 8)
# False alerts are counted from the night the history holds K = 10 nights (the projects' default K).
HISTORY_FULL = 10


def oracle_delays(level: float, *, steps: int = 100_000, nights: int = 16, seed: int = 0) -> list[int | None]:
    """Nights the oracle takes to alert each of `steps` simulated steps (None: not within `nights`). It knows
    the baseline mean and both variances; after each night it tests the mean of the m nights since the step,
    one-sided at 0.5% (so 0.5% alerts per series-night without a shift, by construction); alerted once any
    night's test rejects."""
    from scipy import stats

    sd = (level**2 + WITHIN_SD**2 / READINGS) ** 0.5
    means = np.random.default_rng(seed).normal(STEP, sd, (steps, nights))
    z = np.cumsum(means, axis=1) / np.arange(1, nights + 1) / (sd / np.sqrt(np.arange(1, nights + 1)))
    rejected = z > stats.norm.isf(ONE_SIDED_LEVEL)
    first = np.where(rejected.any(axis=1), rejected.argmax(axis=1) + 1, 0)
    return [int(night) if night else None for night in first]


def known_start_delays(level: float, *, variance_known: bool, steps: int = 100_000, nights: int = 16,
                       seed: int = 1, one_sided: float = ONE_SIDED_LEVEL) -> list[int | None]:
    """Nights a detector that knows the step's first night, but not the baseline mean, takes to alert each of
    `steps` simulated steps: the m nights since the step pooled against the STEP_NIGHT nights before it (all
    the history the scenario has), one-sided at `one_sided` per night (0.5%), by the z test when the night variance is
    known and by the pooled t test when it is estimated from the nights themselves. No detector that must
    learn the baseline from this history can do better at this level: it is the product's bound, where the
    oracle (baseline mean known) is not reachable."""
    from scipy import stats

    sd = (level**2 + WITHIN_SD**2 / READINGS) ** 0.5
    rng = np.random.default_rng(seed)
    before = rng.normal(0.0, sd, (steps, STEP_NIGHT))
    after = rng.normal(STEP, sd, (steps, nights))
    m = np.arange(1, nights + 1)
    difference = np.cumsum(after, axis=1) / m - before.mean(axis=1, keepdims=True)
    if variance_known:
        rejected = difference / (sd * np.sqrt(1 / m + 1 / STEP_NIGHT)) > stats.norm.isf(one_sided)
    else:
        after_squares = np.cumsum(after**2, axis=1) - m * (np.cumsum(after, axis=1) / m) ** 2
        before_squares = ((before - before.mean(axis=1, keepdims=True)) ** 2).sum(axis=1, keepdims=True)
        df = m + STEP_NIGHT - 2
        pooled = (after_squares + before_squares) / df
        t = difference / np.sqrt(pooled * (1 / m + 1 / STEP_NIGHT))
        rejected = t > stats.t.isf(one_sided, df)
    first = np.where(rejected.any(axis=1), rejected.argmax(axis=1) + 1, 0)
    return [int(night) if night else None for night in first]


def summarize(delays: list[int | None], *, steps: int) -> dict:
    """Shares of steps alerted within each of WITHIN nights and never, and the nights by which 95% were."""
    found = sorted(delay for delay in delays if delay is not None)
    by_95 = found[int(np.ceil(0.95 * steps)) - 1] if len(found) >= np.ceil(0.95 * steps) else None
    return {"within": {m: sum(delay <= m for delay in found) / steps for m in WITHIN},
            "never": 1 - len(found) / steps, "by_95": by_95}


SECOND_STEP_NIGHT = 50
MACHINE_WIDE = (20, 40, 0.04, 0.12)
"""Of the machine-wide scenario: series moved, series in all, and the range of their moves."""
MACHINE_DRIFT = 0.004
"""Of the machine-drift scenario (``--drift``): the same 20 of 40 series slow by this much a night from the step's
night on (a machine that degrades: +6% by night 39), to see whether the environment matching divides a common trend
out."""


def scenario_levels(scenario: str, series: int, nights: int, rng, drift: float = MACHINE_DRIFT
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Each series' true level factor by night (series × nights), and which series change (any step)."""
    factors = np.ones((series, nights))
    if scenario == "machine-wide":
        moved = np.arange(series) < MACHINE_WIDE[0]
        factors[moved, STEP_NIGHT:] = rng.uniform(1 + MACHINE_WIDE[2], 1 + MACHINE_WIDE[3], moved.sum())[:, None]
        return factors, moved
    if scenario == "machine-drift":
        moved = np.arange(series) < MACHINE_WIDE[0]
        factors[moved, STEP_NIGHT:] = (1 + drift) ** np.arange(1, nights - STEP_NIGHT + 1)
        return factors, moved
    stepped = np.arange(series) % 2 == 1
    factors[stepped, STEP_NIGHT:] *= 1 + STEP
    if scenario == "two-steps":
        factors[stepped, SECOND_STEP_NIGHT:] *= 1 + STEP
    return factors, stepped


def measure(series: int, nights: int, level: float, seed: int, scenario: str = "step",
            drift: float = MACHINE_DRIFT) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command

    from results import alerts, comparisons, services
    from results.models import Alert, ChangePoint, Incident, IncidentKind, Metric, Result
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)
    factors, stepped = scenario_levels(scenario, series, nights, rng, drift)
    seconds = 0.0
    for night in range(nights):
        levels = (1.0 + rng.normal(0.0, level, series)) * factors[:, night]
        readings = levels[:, None] * (1.0 + rng.normal(0.0, WITHIN_SD, (series, READINGS)))
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
        alerts.scan_run_series(run_id=run.pk)
        alerts.scan_change_points()  # the daily scan (beat's scan-change-points): one night, one day
        seconds += time.perf_counter() - began

    index = {metric_id: int(name.split()[-1]) for metric_id, name in
             Metric.objects.values_list("pk", "benchmark__name")}
    steps = (STEP_NIGHT, SECOND_STEP_NIGHT) if scenario == "two-steps" else (STEP_NIGHT,)
    first_alert: dict[tuple[int, int], tuple[int, int]] = {}  # (series, step) → (night opened, first night named)
    false_alerts = 0
    states: dict[str, int] = {}
    stepped_alerts = 0
    unmoved_alerts = 0  # the series that did not move, from the step's night on: the control of the later alerts
    for metric_id, opened, first, state in Alert.objects.values_list(
            "comparison__candidate__metric_id", "comparison__candidate__run__started_at", "first_run__started_at",
            "state"):
        i, night, named = index[metric_id], (opened - start).days, (first - start).days
        if stepped[i] and night >= STEP_NIGHT:
            # An alert counts for the newest step it may be of: opened on or after that step's night.
            step = max(step for step in steps if night >= step)
            stepped_alerts += 1
            first_alert[i, step] = min(first_alert.get((i, step), (nights, 0)), (night, named))
        elif night >= HISTORY_FULL:
            false_alerts += 1
            unmoved_alerts += night >= STEP_NIGHT  # a step series' own alerts from its step on are counted above
            states[state] = states.get(state, 0) + 1
    chosen = np.flatnonzero(stepped)
    change_points = list(ChangePoint.objects.values_list("metric_id", flat=True))
    return {
        "level": level, "series": series, "nights": nights, "seconds": seconds, "scenario": scenario,
        "false_per_series_night": false_alerts / _unchanged_series_nights(stepped, nights),
        "false_states": states,
        "delays": {step: [first_alert[i, step][0] - step + 1 if (i, step) in first_alert else None for i in chosen]
                   for step in steps},
        "first_night_within_1": {step: sum((i, step) in first_alert and abs(first_alert[i, step][1] - step) <= 1
                                           for i in chosen) / chosen.size for step in steps},
        "incidents": [len(incident.alerts.all()) for incident in Incident.objects.filter(
            kind=IncidentKind.MACHINE).prefetch_related("alerts")],
        # Each moved series' first alert since its step, and the alerts after those.
        "stepped_alerts": [len(first_alert), stepped_alerts - len(first_alert)],
        "unmoved_alerts": unmoved_alerts,
        # How much of the moved series' change the environment matching divided out (results.environment).
        "offsets_moved": [abs(offset) for metric_id, offset in Result.objects.filter(
            run__started_at__gte=start + timedelta(days=STEP_NIGHT), environment_offset__isnull=False).values_list(
            "metric_id", "environment_offset") if stepped[index[metric_id]]],
        "change_points_aa": sum(not stepped[index[m]] for m in change_points),
        "change_points_step": sum(bool(stepped[index[m]]) for m in change_points),
    }


def _unchanged_series_nights(stepped, nights: int) -> int:
    """Series-nights without a shift from night K on: every night of an A/A series, a step series' nights
    before its step."""
    return int((~stepped).sum() * (nights - HISTORY_FULL) + stepped.sum() * (STEP_NIGHT - HISTORY_FULL))


NIGHTS = {"step": 40, "two-steps": 70, "machine-wide": 40, "machine-drift": 40}


def _judged(by_95: int | None, target: int | None) -> str:
    return "met" if by_95 is not None and target and by_95 <= target else "not met"


def common_horizon(steps: list[int], nights: int) -> int:
    """The most nights after its step in which every step's alert is looked for: each step's own window ends at the
    next step (or the last night), and a step with a longer window than another would have more nights to be found
    in, so "never" would not compare (two steps: the first 25 nights, the second 20)."""
    ends = sorted(steps)[1:] + [nights]
    return min(end - step for step, end in zip(sorted(steps), ends))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=list(NIGHTS), default="step")
    parser.add_argument("--series", type=int, default=None, help="Default: 300 (machine-wide: 40).")
    parser.add_argument("--nights", type=int, default=None, help="Default: 40 (two-steps: 70).")
    parser.add_argument("--levels", type=float, nargs="+", default=[0.005, 0.015, 0.03],
                        help="Run-to-run sd, relative (default 0.5%%, 1.5%%, 3%%).")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--drift", type=float, default=MACHINE_DRIFT,
                        help="machine-drift: how much slower a night the moved series get (default 0.4%%).")
    parser.add_argument("--level", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    series = arguments.series or (MACHINE_WIDE[1] if arguments.scenario.startswith("machine") else 300)
    nights = arguments.nights or NIGHTS[arguments.scenario]
    if arguments.child:
        print(json.dumps(measure(series, nights, arguments.level, arguments.seed, arguments.scenario,
                                 arguments.drift)))
        return
    print(f"{arguments.scenario}: {series} series × {nights} nights, within-run sd {WITHIN_SD:.0%} over {READINGS} "
          f"readings; SQLite, tasks in-process; load {os.getloadavg()[0]:.1f}")
    print(f"{'run-to-run':>10} {'':>9} {'false/series-night':>18} " + " ".join(f"{f'≤{m} n':>6}" for m in WITHIN)
          + f" {'never':>6} {'1st ±1':>7} {'95% by':>7} {'target':>7} {'CP A/A':>7} {'CP step':>8} {'seconds':>8}")
    for level in arguments.levels:
        figures = measure_in_child(__file__, ["--scenario", arguments.scenario, "--series", str(series),
                                              "--nights", str(nights), "--level", str(level),
                                              "--seed", str(arguments.seed), "--drift", str(arguments.drift)],
                                             database="sqlite")
        bound = summarize(known_start_delays(level, variance_known=False), steps=100_000)
        # The delay target is issue 29's for 5% steps; the machine scenarios' moves are not 5% steps, and their
        # targets are the incident and alert counts printed below them.
        target = None if bound["by_95"] is None else bound["by_95"] + 1
        judged = arguments.scenario in ("step", "two-steps")
        horizon = common_horizon([int(step) for step in figures["delays"]], nights)
        for step, delays in figures["delays"].items():
            shares = summarize([None if delay is None or delay > horizon else delay for delay in delays],
                               steps=len(delays))
            label = "ours" if len(figures["delays"]) == 1 else f"step {step}"
            print(f"{f'{level:.1%}':>10} {label:>9} {figures['false_per_series_night']:>18.2%} "
                  + " ".join(f"{shares['within'][m]:>6.0%}" for m in WITHIN)
                  + f" {shares['never']:>6.0%} {figures['first_night_within_1'][step]:>7.0%} "
                  + f"{'never' if shares['by_95'] is None else shares['by_95']:>7} "
                  + f"{_judged(shares['by_95'], target) if judged else '—':>7}"
                  + f" {figures['change_points_aa']:>7} {figures['change_points_step']:>8} {figures['seconds']:>8.1f}")
        oracle = summarize(oracle_delays(level), steps=100_000)
        print(f"{'':>10} {'oracle':>9} {ONE_SIDED_LEVEL:>17.2%}* "
              + " ".join(f"{oracle['within'][m]:>6.0%}" for m in WITHIN)
              + f" {oracle['never']:>6.0%} {'':>7} {oracle['by_95']:>7}")
        both_sides = summarize(known_start_delays(level, variance_known=False, one_sided=ONE_SIDED_LEVEL / 2),
                               steps=100_000)
        for label, found in (("bound σ", summarize(known_start_delays(level, variance_known=True), steps=100_000)),
                             ("bound t", bound), ("bound t±", both_sides)):
            print(f"{'':>10} {label:>9} {ONE_SIDED_LEVEL:>17.2%}* "
                  + " ".join(f"{found['within'][m]:>6.0%}" for m in WITHIN)
                  + f" {found['never']:>6.0%} {'':>7} {found['by_95'] or 'never':>7}")
        print(f"{'':>10} {'':>9} false alerts by state: {figures['false_states']}")
        if arguments.scenario in ("machine-wide", "machine-drift"):
            print(f"{'':>10} {'':>9} incidents: {len(figures['incidents'])} (of {figures['incidents']} alerts); "
                  f"alerts of the {MACHINE_WIDE[0]} moved series: {sum(figures['stepped_alerts'])} "
                  f"({figures['stepped_alerts'][0]} a series' first since the move, "
                  f"{figures['stepped_alerts'][1]} after it; the {series - MACHINE_WIDE[0]} series not moved: "
                  f"{figures['unmoved_alerts']} alerts in the same nights)")
            offsets = figures["offsets_moved"]
            print(f"{'':>10} {'':>9} moved series' nights from the move on with an environment divided out: "
                  f"{len(offsets)} of {MACHINE_WIDE[0] * (nights - STEP_NIGHT)}"
                  + (f", median factor {np.exp(np.median(offsets)) - 1:+.1%}" if offsets else ""))
    print("oracle: 100,000 simulated steps; its false-alarm rate* is its level by construction. An alert counts "
          "the night it opens (suspected or confirmed); a step series' alert before its step counts as false")
    print(f"bound σ / bound t: the step's first night known, the baseline mean learnt from the {STEP_NIGHT} nights "
          "before it (σ known / estimated), one-sided 0.5%: the best any detector of the baseline can do; the "
          "target is bound t's night + 1 (the first night is not known)")
    print(f"bound t±: bound t watching both directions, as the product must (improvements alert too), within the same "
          f"{ONE_SIDED_LEVEL:.1%} a series-night ({ONE_SIDED_LEVEL / 2:.2%} a side): the bound the false-alarm budget "
          "leaves a detector of both directions")
    if arguments.scenario == "two-steps":
        print(f"both steps: alerts counted within the same {common_horizon([STEP_NIGHT, SECOND_STEP_NIGHT], nights)} "
              "nights of their step (the second's window; a later one is never)")
    print("targets: false ≤ 0.5% per series-night without a shift; 95% alerted by the target; never ≤ 1% (0.5%, "
          "1.5%), ≤ 5% (3%); the second step as fast as the first; machine-wide: one incident, ≤ 20 series alerts")


if __name__ == "__main__":
    main()
