"""How often A/B comparison sessions decide wrongly: seeded two-workload sessions with a known truth (issue 15).

Run from the repository root::

    .venv/bin/python benchmarks/ab_sessions.py [--sessions 1000] [--rows aa,ab-5] [--seed 0] [--processes 2]
        [--budget-rounds 100] [--work-range 10,20]

A default run (9 rows × 2 rules × 1,000 sessions, plus pyperf) costs 30–40 CPU minutes, almost all of it
inside ``run_session`` (≈ 1–1.3 ms per round): about 15–20 minutes on 2 idle cores. ``--sessions 100`` takes
about 3 minutes.

Every row runs many seeded comparison sessions (``runner.session.run_session`` with two workloads, A and B,
rounds interleaved A1 B1 A2 B2 …) with a fake clock, and counts how they ended. A/A rows compare identical
workloads (mean 1), so a difference declared either way is a false decision; A/B rows make B slower (lower is
better), so a difference declared with A better is a right decision ("right") and one with B better a
wrong-direction decision. A rule that can also end a pair as "equivalent" (no difference larger than the
threshold θ) has those sessions counted apart ("equiv."): right in an A/A row, a miss in an A/B row. Sessions
that end unresolved are undecided (never "equal").

Design (one choice, kept cheap): **unit readings**. A round of work amount w runs ⌊w⌋ work units of 10 ms
each and yields one unit reading per unit (relative time, mean 1) and their mean as the round's reading;
the round lasts 10 ms × the sum of its unit readings, and the fake clock advances by that. Targets:
``warmup="none"`` (every unit reading is analysed), ``work_range=(10, 20)`` with Pilot's work-amount plan
(3 trial rounds of 10 units, growth for 10 rounds, then midpoints of (10, 20) and the session's cap), so a
session looks at the comparison after every cycle, i.e. every 10–20 readings per side;
``require_width_in_comparison=False`` (the session stops on the comparison alone); α = 0.01; and a budget of
100 rounds (≈ 750 readings per side; ``--budget-rounds``), also reported as decided *by* round 10 and 30
(≈ 70 and ≈ 250 readings per side) — read off the same sessions, which is what a shorter budget gives as long
as the rule and the work-amount plan do not look at the budget (in ``runner/session`` neither rule does). Why
not one reading per round, as the issue measured: ``run_session`` re-analyses every round at ≈ 1 ms, so a
1,000-round session costs ≈ 1 s and the 18,000 sessions of a default run would take hours on 2 cores; unit
readings give as many readings per side in a tenth of the rounds. Fewer looks (every 10–20 readings rather
than every reading) can only lower Pilot's old rule's false-decision rate against the issue's setting (6–22%).

Noise: session i of a row uses the seed (``--seed``, row, i); each workload draws from its own generator
(and, for AR(1), its own stream continuing across its rounds), so both rules see the same readings per
workload on the same seed even when their rounds differ.
Drift rows define the drift on the simulated clock: H is the simulated length of a full-budget session
(Pilot's plan, uncapped, unit readings at their mean); the linear drift raises the mean by 20% over H and the
step adds 10% from H/2 on, for both workloads alike, on top of 10% i.i.d. noise.

Rules: Pilot's old rule (``comparison_rule="pilot"``: a pair is resolved when the 95% CIs do not overlap or
Welch's p < α, tested after every cycle) and the anytime-valid rule (``"anytime"``, the default), on the same
seeds, the other comparison settings (such as the threshold θ) at their defaults.

Beside them, on the same seeds:

- pyperf's default design, 20 processes × (1 warm-up + 3 values), the warm-up value dropped: 60 readings per
  side, judged by pyperf's own ``is_significant`` (imported from the installed ``pyperf._utils``, the
  function ``pyperf compare_to`` calls: Student's pooled two-sample t-test at a two-sided 5% level, with
  critical values from its own table). A pyperf value here is one reading at the same noise as one unit
  reading (pyperf's calibrated loops would average several units per value) and takes the same 10 ms; A's
  80 values run first, then B's, from t = 0, as two pyperf runs compared with ``compare_to`` do. So a drift
  between the two runs is a difference to pyperf; the step at H/2 comes after pyperf has finished. AR(1):
  each workload's 80 values are one stream (its processes run back to back).
- the fixed-sample oracle (A/B rows): the smallest n per side at which a two-sided Welch test at α = 0.01 has
  90% power for the row's true difference and noise (noncentral t with ν = 2n − 2, exact for equal n and
  variances).

Targets (issue 15), judged at the full budget: every A/A row false decisions ≤ α = 1% with Wilson upper
bound ≤ 1.5%; every A/B row wrong direction ≤ 0.5%; +5% at 10% noise right decisions ≥ 95% with median
readings per side ≤ the oracle's. Rates carry Wilson 95% intervals; "median readings/side" is the median
over sessions of the mean of A's and B's readings at the stop (or at the round reported), every round's
counted (all are analysed in this design: the shortest round, 100 ms, is twice ``min_round_duration``).
"""

import argparse
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

# Import from this checkout whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# pyperf==2.10.0 is pinned in requirements.txt; is_significant is what `pyperf compare_to` calls.
from pyperf._utils import is_significant

from runner.session import (
    MetricSpec,
    RoundOutcome,
    RoundRecord,
    SessionStatus,
    SessionTargets,
    run_session,
    work_amount_plan,
)

TIME = MetricSpec("time", "s", "lower_is_better")
ALPHA = 0.01
SECONDS_PER_UNIT = 0.01
WORK_RANGE = (10, 20)
BUDGET_ROUNDS = 100
REPORT_ROUNDS = (10, 30)
PYPERF_PROCESSES, PYPERF_VALUES, PYPERF_WARMUPS = 20, 3, 1
ORACLE_POWER = 0.90
RULES = ("pilot", "anytime")
UNDECIDED, EQUIVALENT = "undecided", "equivalent"
# Issue 15's targets.
FALSE_TARGET, FALSE_UPPER_TARGET, WRONG_TARGET, RIGHT_TARGET = 0.01, 0.015, 0.005, 0.95


@dataclass(frozen=True)
class Row:
    """One workload pair: B's relative shift, the noise, and the drift common to both."""

    name: str
    shift: float = 0.0  # B's mean is 1 + shift; A's is 1
    sd: float = 0.10  # marginal standard deviation of one unit reading
    rho: float = 0.0  # AR(1) coefficient of each workload's unit readings
    drift: str = ""  # "", "linear" (+20% over H) or "step" (+10% from H/2)

    @property
    def kind(self):
        return "A/B" if self.shift else "A/A"


ROWS = {
    "aa-iid10": Row("A/A i.i.d. 10%"),
    "aa-iid30": Row("A/A i.i.d. 30%", sd=0.30),
    "aa-ar05": Row("A/A AR(1) ρ=0.5, 10%", rho=0.5),
    "aa-ar07": Row("A/A AR(1) ρ=0.7, 10%", rho=0.7),
    "aa-linear": Row("A/A linear drift +20%, 10%", drift="linear"),
    "aa-step": Row("A/A step +10% at H/2, 10%", drift="step"),
    "ab-2": Row("A/B B +2%, 10%", shift=0.02),
    "ab-5": Row("A/B B +5%, 10%", shift=0.05),
    "ab-10": Row("A/B B +10%, 10%", shift=0.10),
}


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def targets(rule, budget_rounds, work_range=WORK_RANGE):
    return SessionTargets(warmup="none", work_range=work_range, trial_rounds=3, first_estimate_rounds=10,
                          first_estimate_seconds=5.0, budget_seconds=1e9, budget_rounds=budget_rounds, alpha=ALPHA,
                          require_width_in_comparison=False, comparison_rule=rule)


def horizon(budget_rounds, work_range=WORK_RANGE):
    """Simulated seconds of a full-budget session: Pilot's plan for both workloads, unit readings at mean 1."""
    plan_targets = targets("pilot", budget_rounds, work_range)
    seconds = 0.0
    for side in range(2):
        mine = []
        for index in range(side, budget_rounds, 2):
            work = work_amount_plan(mine, plan_targets)
            units = int(work)
            mine.append(RoundRecord(index=index, workload="AB"[side], work_amount=work,
                                    outcome=RoundOutcome(duration=SECONDS_PER_UNIT * units, readings={"time": 1.0}),
                                    analysed=True))
            seconds += SECONDS_PER_UNIT * units
    return seconds


class Stream:
    """One workload's unit readings: its own generator, its AR(1) state, the drift common to both workloads."""

    def __init__(self, row, seed, mean, horizon_seconds):
        self.row, self.mean, self.horizon = row, mean, horizon_seconds
        self.rng = np.random.default_rng(seed)
        self.last = self.rng.standard_normal()  # stationary start of the AR(1) stream

    def noise(self, n):
        shocks = self.rng.standard_normal(n)
        if not self.row.rho:
            return shocks
        rho, scale = self.row.rho, np.sqrt(1.0 - self.row.rho**2)
        out = np.empty(n)
        last = self.last
        for i in range(n):
            last = rho * last + scale * shocks[i]
            out[i] = last
        self.last = last
        return out

    def readings(self, start, n):
        """n unit readings, the first starting at simulated second `start`, one per SECONDS_PER_UNIT."""
        values = self.mean + self.row.sd * self.noise(n)
        when = start + SECONDS_PER_UNIT * np.arange(n)
        if self.row.drift == "linear":
            values = values + 0.20 * when / self.horizon
        elif self.row.drift == "step":
            values = values + 0.10 * (when >= self.horizon / 2)
        return values


def seeds(base, row_key, index):
    """Independent seeds for A's and B's session streams and for A's and B's pyperf values; every row its own."""
    return np.random.SeedSequence((base, list(ROWS).index(row_key), index)).spawn(4)


def verdict(outcome):
    """How a session ended: "A" or "B" (a difference, that workload better), "equivalent" (no difference larger
    than the threshold) or "undecided"."""
    if outcome.status is not SessionStatus.RESOLVED or not outcome.comparisons:
        return UNDECIDED
    pair = outcome.comparisons[0]
    if pair.decision == "different":
        return pair.first
    return EQUIVALENT if pair.decision == "equivalent" else UNDECIDED


def one_session(row_key, rule, base_seed, index, budget_rounds, report_rounds, horizon_seconds,
                work_range=WORK_RANGE):
    """Run one session: its status, and per reported round (verdict by then, mean readings per side then)."""
    row = ROWS[row_key]
    seed_a, seed_b, _, _ = seeds(base_seed, row_key, index)
    clock = FakeClock()

    def workload(stream):
        def run(work_amount):
            values = stream.readings(clock.now, int(work_amount))
            duration = SECONDS_PER_UNIT * float(values.sum())
            clock.now += duration
            return RoundOutcome(duration=duration, readings={"time": float(values.mean())},
                                unit_readings={"time": values.tolist()})
        return run

    streams = {"A": Stream(row, seed_a, 1.0, horizon_seconds), "B": Stream(row, seed_b, 1.0 + row.shift,
                                                                            horizon_seconds)}
    outcome = run_session({name: workload(stream) for name, stream in streams.items()}, [TIME],
                          targets(rule, budget_rounds, work_range), clock=clock)
    final = verdict(outcome)
    stop = len(outcome.rounds)
    counts = np.zeros((stop, 2))
    for record in outcome.rounds:
        counts[record.index, "AB".index(record.workload)] = len(record.outcome.unit_readings["time"])
    cumulative = counts.cumsum(axis=0).mean(axis=1)
    result = []
    for limit in (*report_rounds, budget_rounds):
        at = min(stop, limit)
        result.append((final if stop <= limit else UNDECIDED, float(cumulative[at - 1]) if at else 0.0))
    return outcome.status.value, result


def one_pyperf(row_key, base_seed, index, horizon_seconds):
    """pyperf's default design on the same seed: "A" or "B" (significant, that one faster) or "undecided"."""
    row = ROWS[row_key]
    _, _, seed_a, seed_b = seeds(base_seed, row_key, index)
    per_process = PYPERF_WARMUPS + PYPERF_VALUES
    total = PYPERF_PROCESSES * per_process
    samples = []
    for side, (seed, mean) in enumerate(((seed_a, 1.0), (seed_b, 1.0 + row.shift))):
        # Horizon of the session's drift; pyperf's run of A starts at 0 and B's follows it.
        stream = Stream(row, seed, mean, horizon_seconds)
        values = stream.readings(side * total * SECONDS_PER_UNIT, total).reshape(PYPERF_PROCESSES, per_process)
        samples.append(values[:, PYPERF_WARMUPS:].ravel().tolist())
    significant, _ = is_significant(samples[0], samples[1])
    if not significant:
        return UNDECIDED
    return "B" if float(np.mean(samples[1])) < float(np.mean(samples[0])) else "A"


def task(job):
    key, row_key, rule, base_seed, indices, budget_rounds, report_rounds, horizon_seconds, work_range = job
    if rule == "pyperf":
        return key, [one_pyperf(row_key, base_seed, index, horizon_seconds) for index in indices]
    return key, [one_session(row_key, rule, base_seed, index, budget_rounds, report_rounds, horizon_seconds,
                             work_range) for index in indices]


def wilson(successes, n, confidence=0.95):
    """Wilson score interval of a binomial proportion."""
    if n == 0:
        return float("nan"), float("nan")
    z = stats.norm.ppf((1 + confidence) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def oracle(shift, sd, alpha=ALPHA, power=ORACLE_POWER):
    """Smallest n per side of a fixed-sample two-sided Welch test at `alpha` with `power` (equal n and sd)."""
    for n in range(2, 1_000_000):
        df = 2 * n - 2
        critical = stats.t.ppf(1 - alpha / 2, df)
        noncentrality = shift / (sd * np.sqrt(2.0 / n))
        achieved = stats.nct.sf(critical, df, noncentrality) + stats.nct.cdf(-critical, df, noncentrality)
        if achieved >= power:
            return n
    raise ValueError("No sample size reaches the power.")


def rate(count, n):
    low, high = wilson(count, n)
    return f"{count / n:6.1%} [{low:5.1%}, {high:5.1%}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000, help="seeded sessions per row and rule")
    parser.add_argument("--rows", default="", help="comma-separated row keys or prefixes (aa, ab, aa-ar07, …); "
                                                   f"all by default: {', '.join(ROWS)}")
    parser.add_argument("--seed", type=int, default=0, help="base seed; session i of every row uses (seed, i)")
    parser.add_argument("--budget-rounds", type=int, default=BUDGET_ROUNDS, help="rounds per session, both sides")
    parser.add_argument("--work-range", default=",".join(map(str, WORK_RANGE)),
                        help="LOW,HIGH work units per round: readings per side between looks")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (fork); 1 runs in-process")
    args = parser.parse_args()
    wanted = [part.strip() for part in args.rows.split(",") if part.strip()]
    chosen = [key for key in ROWS if not wanted or any(key.startswith(part) for part in wanted)]
    if not chosen:
        parser.error(f"No row matches {args.rows!r}; rows: {', '.join(ROWS)}.")
    started = time.perf_counter()
    load_before = os.getloadavg()
    budget = args.budget_rounds
    report = tuple(limit for limit in REPORT_ROUNDS if limit < budget)
    work_range = tuple(float(part) for part in args.work_range.split(","))
    if len(work_range) != 2 or not 10 <= work_range[0] < work_range[1]:
        # Rounds under min_round_duration (50 ms) are measured but not analysed: keep the shortest at 100 ms.
        parser.error("--work-range takes LOW,HIGH with 10 ≤ LOW < HIGH (units of 10 ms).")
    seconds = horizon(budget, work_range)

    chunk = 25
    jobs = []
    for row_key in chosen:
        for rule in (*RULES, "pyperf"):
            for first in range(0, args.sessions, chunk):
                indices = range(first, min(first + chunk, args.sessions))
                jobs.append(((row_key, rule), row_key, rule, args.seed, indices, budget, report, seconds, work_range))
    results = defaultdict(list)
    if args.processes > 1:
        with multiprocessing.get_context("fork").Pool(args.processes) as pool:
            for key, chunk_results in pool.imap_unordered(task, jobs):
                results[key].extend(chunk_results)
    else:
        for job in jobs:
            key, chunk_results = task(job)
            results[key].extend(chunk_results)

    print(f"A/B comparison sessions (runner.session.run_session, two workloads, interleaved), {args.sessions} "
          f"seeded sessions per row and rule, seed {args.seed}. Rules: {', '.join(RULES)}; "
          f"threshold θ = {targets(RULES[-1], budget).threshold}.")
    print(f"Unit readings of {SECONDS_PER_UNIT * 1000:.0f} ms, work range {work_range}, warmup none, α = {ALPHA}, "
          f"width not required; budget {budget} rounds (H = {seconds:.1f} simulated s), also read by round "
          f"{' and '.join(map(str, report))}. pyperf: {PYPERF_PROCESSES} processes × {PYPERF_VALUES} values "
          f"(+{PYPERF_WARMUPS} warm-up), pyperf._utils.is_significant (pooled t, two-sided 5%).")
    header = (f"{'row':27} {'rule':8} {'by round':>8} {'sessions':>8} | {'false / wrong decisions [Wilson 95%]':>37} | "
              f"{'right':>6} | {'equiv.':>6} | {'undecided':>9} | {'median readings/side':>20} | {'oracle n/side':>13}")
    print(header)
    print("-" * len(header))
    verdicts, notes = [], []
    for row_key in chosen:
        row = ROWS[row_key]
        best = oracle(row.shift, row.sd) if row.shift else None
        oracle_text = f"{best:13d}" if best else f"{'—':>13}"
        lines = [(rule, limit, [run[position] for _, run in results[(row_key, rule)]])
                 for rule in RULES for position, limit in enumerate((*report, budget))]
        lines.append(("pyperf", f"{PYPERF_PROCESSES}×{PYPERF_VALUES}",
                      [(code, PYPERF_PROCESSES * PYPERF_VALUES) for code in results[(row_key, "pyperf")]]))
        for rule, limit, runs in lines:
            n = len(runs)
            count = defaultdict(int)
            for code, _ in runs:
                count[code] += 1
            # A/A: any difference is false; A/B: a difference with B better is the wrong direction.
            wrong = count["A"] + count["B"] if row.kind == "A/A" else count["B"]
            right = f"{'—':>6}" if row.kind == "A/A" else f"{count['A'] / n:6.1%}"
            readings = float(np.median([value for _, value in runs]))
            print(f"{row.name:27} {rule:8} {limit:>8} {n:8d} | {rate(wrong, n):>37} | {right} | "
                  f"{count[EQUIVALENT] / n:6.1%} | {count[UNDECIDED] / n:9.1%} | {readings:20.0f} | {oracle_text}")
            if limit != budget:
                continue
            low, high = wilson(wrong, n)
            if row.kind == "A/A":
                met = wrong / n <= FALSE_TARGET and high <= FALSE_UPPER_TARGET
                verdicts.append(f"{row.name:27} {rule:8} false decisions {wrong / n:6.1%} (upper {high:5.1%}) "
                                f"≤ 1% (upper ≤ 1.5%): {'met' if met else 'MISSED'}")
                continue
            met = wrong / n <= WRONG_TARGET
            verdicts.append(f"{row.name:27} {rule:8} wrong direction {wrong / n:6.1%} ≤ 0.5%: "
                            f"{'met' if met else 'MISSED'}")
            if row_key == "ab-5":
                met = count["A"] / n >= RIGHT_TARGET and readings <= best
                verdicts.append(f"{row.name:27} {rule:8} right decisions {count['A'] / n:6.1%} ≥ 95% with "
                                f"median readings/side {readings:.0f} ≤ oracle {best}: {'met' if met else 'MISSED'}")
        for rule in RULES:
            statuses = defaultdict(int)
            for status, _ in results[(row_key, rule)]:
                statuses[status] += 1
            other = {status: count for status, count in statuses.items() if status not in ("resolved", "unresolved")}
            if other:
                notes.append(f"{row.name} {rule}: sessions ended {other} (counted as undecided).")
    print(f"\nTargets (issue 15), at the full budget of {budget} rounds:")
    for line in verdicts:
        print("  " + line)
    for line in notes:
        print("Note: " + line)
    print(f"\nLoad average before {load_before[0]:.2f} / after {os.getloadavg()[0]:.2f} (1 min; "
          f"{os.cpu_count()} CPUs, {args.processes} processes). {time.perf_counter() - started:.1f} s.")


if __name__ == "__main__":
    main()
