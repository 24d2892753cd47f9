"""Bisection, simulated: how often it names the right culprit, how often a wrong one, and the machine time it takes,
beside a binary search with fixed-size samples and measuring every commit (issue 32).

    .venv/bin/python benchmarks/bisection.py            # the grid (200 bisections a cell) and the target cell (1,000)
    .venv/bin/python benchmarks/bisection.py --quick    # 60 a cell, 300 for the target

The bisection is the product's plan (:func:`runner.bisection.plan.next_step`) driven with simulated sessions:
each session measures three commits (the reference at the good level, the candidate, the first bad commit) in
interleaved rounds with normal noise of the given relative sd, each round reading the candidate and the end or
ends the level test asks for, and is decided as the runner decides it: by :func:`results.stats.bracketed_level_test`
(the ends' readings of earlier sessions given as ``earlier``), and where the plan asks, stopped as *not
reproduced* once the reference and the first bad commit are equivalent by :func:`results.stats.sequential_comparison`
(τ = the alert's effect, θ = half of it). A range of N commits holds one culprit (uniform among them) whose commit
and every later one are slower by the effect.

Baselines, both told the true noise and effect (the most favourable sizing they could have): *fixed binary*, the
plain halving, ⌈log₂ N⌉ A/B comparisons of n readings a side (2n readings each: a design that kept the last good
commit's readings would spend (⌈log₂ N⌉ + 1)·n), each deciding "bad" when the difference of the means exceeds
half the effect, n the smallest that makes each wrong with probability at most α / ⌈log₂ N⌉; *every commit*, each
of the N + 1 commits read n times and classed by the midpoint of the two levels, known (n making each wrong with
probability at most α / N). Their machine time is computed; their share naming the right culprit is simulated
too. Machine time is counted in readings (a reading of the synthetic workload is the unit). The bisection's
decisions hold for any noise symmetric between two commits at one level (exact), which the baselines' normal
sizing does not. Where the effect is large beside the noise (5% at 1%), a baseline told both needs 2 readings a
side, and any test that learns them as it goes (ours takes at least 8 rounds a decision: each gains at most log 2
against log(1/α) needed) costs several times as much, a few hundred readings at most.

Printed per cell: the share naming the right culprit with its 95% Wilson lower bound (target ≥ 1 − α), the
share naming a wrong one with its upper bound (target ≤ α), the share not isolated, our median readings and
sessions, the baselines' readings, and ours over fixed binary. Then: ranges without a regression (the share
naming none), ranges where 10% of the commits fail to build, and the issue's target (a 5% regression in 32
commits at 5% noise in no more machine time than ⌈log₂ 32⌉ fixed-size comparisons at the same error rate).
"""

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from results import stats  # noqa: E402
from runner.bisection.plan import Measure, Step, next_step  # noqa: E402
from runner.session.levels import LevelCheck, decide_level  # noqa: E402

ALPHA = 0.05
MAX_ROUNDS = 40_000
RANGES = (8, 32, 256)
EFFECTS = (0.02, 0.05, 0.10)
NOISES = (0.01, 0.05, 0.10)
TARGET = (32, 0.05, 0.05)


def wilson(successes: int, trials: int, *, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial share."""
    z = scipy_stats.norm.isf((1 - level) / 2)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return centre - half, centre + half


def session(rng, levels: tuple[float, float, float], noise: float, measure: Measure, expected: float,
            earlier: dict[int, np.ndarray]) -> tuple[Step, dict[int, np.ndarray], int]:
    """One interleaved session of three commits (true levels: reference, candidate, moved), each round reading the
    candidate and the ends the level test asks for, decided as the runner's session loop decides it
    (:func:`runner.session.levels.decide_level`); the step, the readings it took by commit, and how many.

    Every commit's reading is drawn for every round and the ends a round does not read are left out; since the
    ends a round reads depend only on the rounds before it, each round's reads are guessed as the round before
    asked and corrected from the first round the decision asks otherwise, until none does: the session the
    runner would have run, at a few calls a session instead of one a round."""
    check = LevelCheck(metric="time", alpha=measure.alpha, direction=1, expected=expected,
                       check_ends=measure.check_ends,
                       earlier=(tuple(earlier.get(measure.reference, ())), tuple(earlier.get(measure.moved, ()))))
    arms = np.empty((3, 0))
    reads = np.empty((0, 2), dtype=bool)
    chunk = 64
    while arms.shape[1] < MAX_ROUNDS:
        arms = np.concatenate([arms, np.asarray(levels)[:, None] * (1 + noise * rng.standard_normal((3, chunk)))],
                              axis=1)
        following = decide_level(*_unread(arms[:, :reads.shape[0]], reads), check).planned_reads[-1]
        reads = np.concatenate([reads, np.tile(following, (chunk, 1))])
        while True:
            decided = decide_level(*_unread(arms, reads), check)
            asked = np.asarray(decided.planned_reads[:-1], dtype=bool)
            wrong = np.flatnonzero((asked != reads).any(axis=1))
            if not wrong.size or decided.decision != stats.UNDECIDED and decided.rounds <= wrong[0]:
                break
            reads[wrong[0]:] = asked[wrong[0]]
        chunk = min(2 * chunk, 4096)
        if decided.decision != stats.UNDECIDED:
            break
    rounds = decided.rounds
    step = Step(measure.role, measure.reference, measure.candidate, measure.moved, decided.decision,
                change=decided.change, low=decided.low, high=decided.high, rounds=rounds)
    taken: dict[int, np.ndarray] = {}
    # (A verify session's candidate may be the first bad commit itself: one commit's readings under two labels.)
    for index, values in ((measure.reference, arms[0, :rounds][reads[:rounds, 0]]),
                          (measure.candidate, arms[1, :rounds]), (measure.moved, arms[2, :rounds][reads[:rounds, 1]])):
        taken[index] = np.concatenate([taken.get(index, np.empty(0)), values])
    return step, taken, rounds + int(reads[:rounds].sum())


def _unread(arms: np.ndarray, reads: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three commits' readings with the ends a round did not read as NaN."""
    return np.where(reads[:, 0], arms[0], np.nan), arms[1], np.where(reads[:, 1], arms[2], np.nan)


def bisect(rng, commits: int, culprit: int | None, effect: float, noise: float, *, expected: float,
           failures: float = 0.0) -> tuple[int | None, int, int, bool]:
    """One simulated bisection: the culprit named (None: not isolated), the readings, the sessions, and whether
    the culprit and its parent built (without both no bisection can name it)."""
    failed = {index for index in range(1, commits - 1) if rng.random() < failures}

    def level(index: int) -> float:
        return 1.0 + (effect if culprit is not None and index >= culprit else 0.0)

    steps: list[Step] = []
    earlier: dict[int, np.ndarray] = {}
    readings = 0
    while True:
        planned = next_step(commits=commits, steps=steps, failed=failed, alpha=ALPHA)
        if not isinstance(planned, Measure):
            isolatable = culprit is None or not {culprit, culprit - 1} & failed
            return planned.culprit, readings, len(steps), isolatable
        step, taken, read = session(rng, (level(planned.reference), level(planned.candidate), level(planned.moved)),
                                    noise, planned, expected, earlier)
        for index, values in taken.items():
            earlier[index] = np.concatenate([earlier.get(index, np.empty(0)), values])
        steps.append(step)
        readings += read


def fixed_size(error: float, effect: float, noise: float) -> int:
    """Readings a side for a comparison deciding at the midpoint, wrong with probability at most `error`."""
    return max(2, math.ceil(2 * (scipy_stats.norm.isf(error) * noise / (effect / 2)) ** 2))


def fixed_binary(rng, candidates: int, effect: float, noise: float, trials: int) -> tuple[int, float]:
    """The plain halving's readings and its simulated share naming the right culprit."""
    halvings = math.ceil(math.log2(candidates))
    size = fixed_size(ALPHA / halvings, effect, noise)
    right = 0
    for _ in range(trials):
        culprit = int(rng.integers(1, candidates + 1))
        good, bad = 0, candidates
        while bad - good > 1:
            middle = (good + bad) // 2
            moved = effect if middle >= culprit else 0.0
            difference = moved + noise * math.sqrt(2 / size) * rng.standard_normal()
            good, bad = (good, middle) if difference > effect / 2 else (middle, bad)
        right += bad == culprit
    return halvings * 2 * size, right / trials


def every_commit(candidates: int, effect: float, noise: float) -> int:
    """Readings to class every commit of the range at the midpoint, each wrong with probability ≤ α / N."""
    return (candidates + 1) * max(2, math.ceil((scipy_stats.norm.isf(ALPHA / candidates) * noise / (effect / 2)) ** 2))


def cell(rng, candidates: int, effect: float, noise: float, trials: int, *, failures: float = 0.0,
         regression: bool = True) -> dict:
    outcomes, readings, sessions, isolatable = [], [], [], []
    for _ in range(trials):
        culprit = int(rng.integers(1, candidates + 1)) if regression else None
        named, used, count, built = bisect(rng, candidates + 1, culprit, effect if regression else 0.0, noise,
                                    expected=effect, failures=failures)
        outcomes.append((named == culprit and named is not None, named is not None and named != culprit,
                         named is None))
        readings.append(used)
        sessions.append(count)
        isolatable.append(built)
    outcomes = np.array(outcomes)
    return {"right": int(outcomes[:, 0].sum()), "wrong": int(outcomes[:, 1].sum()), "none": int(outcomes[:, 2].sum()),
            "trials": trials, "readings": float(np.median(readings)), "sessions": float(np.median(sessions)),
            "mean_readings": float(np.mean(readings)), "p90_readings": float(np.percentile(readings, 90)),
            "isolatable": int(np.sum(isolatable)), "right_isolatable": int(outcomes[np.array(isolatable), 0].sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="Bisections a cell of the grid.")
    parser.add_argument("--target-trials", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="60 a cell, 300 for the target.")
    parser.add_argument("--seed", type=int, default=32)
    options = parser.parse_args()
    if options.quick:
        options.trials, options.target_trials = 60, 300
    rng = np.random.default_rng(options.seed)
    began, load = time.perf_counter(), os.getloadavg()[0]
    print(f"bisection, simulated: α = {ALPHA}, sessions of three commits, rounds reading the "
          f"candidate and the end(s) asked for, looked at after every round; "
          f"{options.trials} bisections a cell, seed {options.seed}; load {load:.1f} on {os.cpu_count()} cores")
    print(f"{'N':>4} {'effect':>6} {'noise':>5} | {'right [Wilson low]':>18} {'wrong [up]':>12} {'none':>5} | "
          f"{'readings':>9} {'sessions':>8} | {'fixed binary (right)':>21} {'every commit':>12} | {'ours/fixed':>10}")
    for candidates in RANGES:
        for effect in EFFECTS:
            for noise in NOISES:
                found = cell(rng, candidates, effect, noise, options.trials)
                print_row(rng, candidates, effect, noise, found)
    print("\nno regression in the range (the alert said +5%): the share naming no culprit, target ≥ 1 − α")
    for candidates, noise in ((32, 0.05), (256, 0.10)):
        found = cell(rng, candidates, 0.05, noise, options.trials, regression=False)
        low, _ = wilson(found["none"], found["trials"])
        print(f"  N = {candidates:>3}, noise {noise:.0%}: none {found['none'] / found['trials']:.1%} "
              f"[{low:.1%}], wrong {found['wrong']}, median readings {found['readings']:.0f}")
    print("\n10% of the commits fail to build (stepped over): N = 32, effect 5%, noise 5%")
    found = cell(rng, 32, 0.05, 0.05, options.trials, failures=0.10)
    print_row(rng, 32, 0.05, 0.05, found)
    print(f"  the culprit and its parent built in {found['isolatable']} of {found['trials']}; of those, the "
          f"right culprit named in {found['right_isolatable'] / max(found['isolatable'], 1):.1%}")
    print(f"\ntarget: N = {TARGET[0]}, effect {TARGET[1]:.0%}, noise {TARGET[2]:.0%}, "
          f"{options.target_trials} bisections")
    found = cell(rng, *TARGET, options.target_trials)
    print_row(rng, *TARGET, found)
    fixed, _ = fixed_binary(rng, TARGET[0], TARGET[1], TARGET[2], 1)
    right_low, _ = wilson(found["right"], found["trials"])
    _, wrong_high = wilson(found["wrong"], found["trials"])
    print(f"  right culprit {found['right'] / found['trials']:.1%} (Wilson lower {right_low:.1%}; target ≥ "
          f"{1 - ALPHA:.0%}: {'met' if right_low >= 1 - ALPHA else 'not met'}); "
          f"wrong {found['wrong'] / found['trials']:.1%} "
          f"(upper {wrong_high:.1%}; target ≤ {ALPHA:.0%}: {'met' if wrong_high <= ALPHA else 'not met'})")
    print(f"  machine time: median {found['readings']:.0f}, mean {found['mean_readings']:.0f}, 90th percentile "
          f"{found['p90_readings']:.0f} readings")
    print(f"  median machine time {found['readings']:.0f} readings against {fixed} for ⌈log₂ {TARGET[0]}⌉ = "
          f"{math.ceil(math.log2(TARGET[0]))} fixed-size comparisons: ratio {found['readings'] / fixed:.2f} "
          f"({'met' if found['readings'] <= fixed else 'not met'})")
    halvings = math.ceil(math.log2(TARGET[0]))
    share = found["right"] / found["trials"]
    if share < 1:
        matched = halvings * 2 * fixed_size((1 - share) / halvings, TARGET[1], TARGET[2])
        print(f"  fixed-size comparisons sized to reach our measured share of right culprits ({share:.1%}): "
              f"{matched} readings; ours over theirs {found['readings'] / matched:.2f}")
    print(f"\n{time.perf_counter() - began:.0f} s; load {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")


def print_row(rng, candidates: int, effect: float, noise: float, found: dict) -> None:
    trials = found["trials"]
    right_low, _ = wilson(found["right"], trials)
    _, wrong_high = wilson(found["wrong"], trials)
    fixed, fixed_right = fixed_binary(rng, candidates, effect, noise, 2000)
    every = every_commit(candidates, effect, noise)
    print(f"{candidates:>4} {effect:>6.0%} {noise:>5.0%} | {found['right'] / trials:>7.1%} [{right_low:>6.1%}]    "
          f"{found['wrong'] / trials:>5.1%} [{wrong_high:>4.1%}] {found['none'] / trials:>5.1%} | "
          f"{found['readings']:>9.0f} {found['sessions']:>8.0f} | {fixed:>12.0f} ({fixed_right:>5.1%}) "
          f"{every:>12.0f} | {found['readings'] / fixed:>10.2f}")


if __name__ == "__main__":
    main()
