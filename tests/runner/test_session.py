"""Pilot's adaptive session loop (runner/session.py) on synthetic workloads with a known truth.

No Django, no Celery: workloads are closures over seeded generators, and they advance an injected
fake clock by their simulated duration, so a "600-second" session runs in milliseconds.
"""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from results.stats import mean_interval
from runner.session import (
    MetricSpec,
    RoundOutcome,
    RoundRecord,
    SessionStatus,
    SessionTargets,
    analyse,
    progress,
    round_stable_phase,
    run_session,
    work_amount_plan,
)
from runner.session.loop import NO_DIFFERENCE_RESOLVED
from tests.runner.clock import FakeClock


TIME = MetricSpec("time", "s", "lower_is_better")
THROUGHPUT = MetricSpec("throughput", "MB/s", "higher_is_better")


def reading_workload(clock, noise, *, mean=1.0, seconds_per_unit=1e-3, metric="time"):
    """One reading per round, ``mean + noise[i]`` for the i-th round; the round lasts w·seconds_per_unit."""
    state = {"round": 0}

    def workload(work_amount):
        value = mean + noise[state["round"]]
        state["round"] += 1
        duration = seconds_per_unit * work_amount
        clock.now += duration
        return RoundOutcome(duration=duration, readings={metric: value})

    workload.state = state
    return workload


def unit_workload(clock, draw):
    """``draw(n)`` gives the n unit readings (seconds per unit) of a round; the round lasts their sum."""

    def workload(work_amount):
        units = draw(int(work_amount))
        duration = float(units.sum())
        clock.now += duration
        return RoundOutcome(duration=duration, readings={"time": float(units.mean())},
                            unit_readings={"time": units.tolist()})

    return workload


def warm_up_sessions(targets, *, noise, seeds):
    """One session per seed on rounds whose first 20% of units run 50% slower ("cache then disk")."""
    for seed in range(seeds):
        rng = np.random.default_rng(seed)

        def draw(n, rng=rng):
            units = 1.0 + noise * rng.standard_normal(n)
            units[: n // 5] += 0.5
            return units

        clock = FakeClock()
        yield run_session({"a": unit_workload(clock, draw)}, [TIME], targets, clock=clock)


def ar1_draw(rng, *, mean, sd, rho):
    """Stationary AR(1) unit readings, continuing across rounds; `sd` is the marginal deviation."""
    state = {"last": rng.standard_normal()}

    def draw(n):
        shocks = rng.standard_normal(n) * np.sqrt(1 - rho**2)
        out = np.empty(n)
        last = state["last"]
        for i in range(n):
            last = rho * last + shocks[i]
            out[i] = last
        state["last"] = last
        return mean + sd * out

    return draw


READINGS = SessionTargets(warmup="none", work_range=(1, 100), first_estimate_rounds=10,
                          first_estimate_seconds=5.0, budget_seconds=1e6)


class TestWorkAmountPlan:
    def record(self, index, work_amount, duration):
        return RoundRecord(index=index, workload="a", work_amount=work_amount,
                           outcome=RoundOutcome(duration=duration, readings={"time": 1.0}),
                           analysed=duration >= 0.05)

    def test_short_rounds_double_the_work_amount_and_raise_a(self):
        targets = SessionTargets(work_range=(1, 1000), trial_rounds=2)
        rounds = [self.record(0, 1, 0.001), self.record(1, 2, 0.002), self.record(2, 4, 0.004)]
        assert work_amount_plan(rounds, targets) == 8
        rounds += [self.record(3, 8, 0.08)]
        # A long-enough round at 8: the trial continues at the raised a.
        assert work_amount_plan(rounds, targets) == 8

    def test_when_short_rounds_raise_a_to_the_top_of_the_range_every_round_takes_the_maximum(self):
        targets = SessionTargets(work_range=(1, 8), trial_rounds=1, first_estimate_rounds=2,
                                 first_estimate_seconds=0.0)
        rounds = [self.record(0, 1, 0.001), self.record(1, 2, 0.001), self.record(2, 4, 0.001),
                  self.record(3, 8, 0.06), self.record(4, 8, 0.06)]
        assert work_amount_plan(rounds, targets) == 8

    def test_under_edm_rounds_too_few_for_two_segments_are_not_analysed_and_grow_to_enough(self):
        """Every round starts with 20 slow units (a cache filling). EDM cannot split a round of fewer
        than two segments of 30 readings, so a 20-unit round, all warm-up, would be averaged in as
        it is. It is stored, not analysed, and the next round has the 61 units EDM needs to split
        off a warm-up of one segment and leave more than half."""
        rng = np.random.default_rng(5)

        def draw(n):
            units = 1e-3 * (1.0 + 0.05 * rng.standard_normal(n))
            units[:20] *= 1.5
            return units

        targets = SessionTargets(warmup="edm", work_range=(20, 400), min_round_duration=0.0, trial_rounds=1,
                                 first_estimate_rounds=2, first_estimate_seconds=0.0, budget_seconds=1e6)
        clock = FakeClock()
        outcome = run_session({"a": unit_workload(clock, draw)}, [TIME], targets, clock=clock)
        first, second = outcome.rounds[:2]
        assert (first.work_amount, first.analysed) == (20, False)
        assert (second.work_amount, second.analysed) == (61, True)
        estimate = outcome.estimates["a"]["time"]
        assert estimate.warmup_removed >= 20 * (len(outcome.rounds) - 1)
        assert estimate.ci_low <= 1e-3 <= estimate.ci_high
        # Without EDM the first round would be analysed as it is and the plan would not grow.
        plain = dataclasses.replace(targets, warmup="none")
        assert work_amount_plan(outcome.rounds[:1], plain) == 20

    def test_eq5_grows_each_round_by_k_seconds(self):
        # s = 0.1 s at w = 10, n = 11, T = 6.6 s: k = (13.2 - 2.2) / 110 = 0.1 s, i.e. +10 units per round.
        targets = SessionTargets(work_range=(10, 1000), trial_rounds=1, first_estimate_rounds=11,
                                 first_estimate_seconds=6.6)
        rounds = [self.record(0, 10, 0.1)]
        assert work_amount_plan(rounds, targets) == 20
        rounds += [self.record(1, 20, 0.2)]
        assert work_amount_plan(rounds, targets) == 30

    def test_midpoint_sequence_after_the_first_estimate(self):
        targets = SessionTargets(work_range=(1, 1001), trial_rounds=1, first_estimate_rounds=2,
                                 first_estimate_seconds=0.0, whole_units=False)
        rounds = [self.record(0, 1, 0.1), self.record(1, 1, 0.1)]
        amounts = []
        for index in range(2, 9):
            amounts.append(work_amount_plan(rounds, targets))
            rounds.append(self.record(index, amounts[-1], 1.0))
        assert amounts == [501, 251, 751, 126, 376, 626, 876]

    def test_cap_and_floor_stay_inside_the_range(self):
        targets = SessionTargets(work_range=(1, 1000), trial_rounds=1, first_estimate_rounds=2,
                                 first_estimate_seconds=0.0)
        rounds = [self.record(0, 1, 0.1), self.record(1, 1, 0.1)]
        assert work_amount_plan(rounds, targets, cap=40) == 40
        assert work_amount_plan(rounds, targets, cap=40, floor=60) == 60


class TestSingleWorkload:
    def test_iid_readings_converge_and_cover_the_truth(self):
        # sd 20% of the mean, target full width 10%: the oracle needs the smallest n with
        # 2 t_{0.975,n-1} 0.2/sqrt(n) <= 0.1, n = 64.
        oracle = next(n for n in range(2, 1000) if 2 * stats.t.ppf(0.975, n - 1) * 0.2 / np.sqrt(n) <= 0.1)
        sessions = 800
        covered, counts = [], []
        for seed in range(sessions):
            clock = FakeClock()
            noise = 0.2 * np.random.default_rng(seed).standard_normal(1000)
            outcome = run_session({"a": reading_workload(clock, noise)}, [TIME], READINGS, clock=clock)
            estimate = outcome.estimates["a"]["time"]
            assert outcome.status is SessionStatus.CONVERGED
            assert estimate.ci_high - estimate.ci_low <= 0.1 * estimate.mean
            covered.append(estimate.ci_low <= 1.0 <= estimate.ci_high)
            counts.append(estimate.sample_count)
        # Nominal 0.95 ± 2.58 binomial s.e. at 800 sessions: [0.930, 0.970]. Pilot's §2 interval with q
        # re-chosen at every look measured 0.9175 (58 samples) on the same seeds and failed; so do the plain
        # q = 1 interval on autocorrelated data (below) and half the t quantile.
        half = 2.58 * np.sqrt(0.95 * 0.05 / sessions)
        assert 0.95 - half <= np.mean(covered) <= 0.95 + half
        assert 0.8 * oracle <= np.mean(counts) <= 1.3 * oracle

    def test_ar1_unit_readings_get_the_variance_of_their_mean_and_keep_coverage(self):
        rho, sd = 0.7, 0.2
        targets = SessionTargets(warmup="none", work_range=(50, 100), trial_rounds=1, first_estimate_rounds=2,
                                 first_estimate_seconds=0.0, budget_seconds=1e6)
        covered, naive, sizes = [], [], []
        for seed in range(200):
            clock = FakeClock()
            draw = ar1_draw(np.random.default_rng(seed), mean=1.0, sd=sd, rho=rho)
            outcome = run_session({"a": unit_workload(clock, draw)}, [TIME], targets, clock=clock)
            estimate = outcome.estimates["a"]["time"]
            assert outcome.status is SessionStatus.CONVERGED
            covered.append(estimate.ci_low <= 1.0 <= estimate.ci_high)
            sizes.append(estimate.subsession_size)
            samples = np.concatenate([record.outcome.unit_readings["time"] for record in outcome.rounds])
            plain = mean_interval(samples.mean(), samples.var(ddof=1), samples.size)
            naive.append(plain.low <= 1.0 <= plain.high)
        # Pilot's diagnostic sees the correlation (q > 1); the interval is spec §2a's.
        assert np.median(sizes) > 1
        # Nominal band 0.95 ± 2.58 s.e. = [0.91, 0.99] at 200 sessions. Pilot's §2 interval covered 0.905 here
        # (its blocks with |r_1| ≤ 0.1 still underestimate the long-run variance by 15–25%); the naive q = 1
        # interval on the same samples 0.595.
        half = 2.58 * np.sqrt(0.95 * 0.05 / len(covered))
        assert 0.95 - half <= np.mean(covered) <= 0.95 + half
        assert np.mean(naive) < 0.95 - half

    def test_warmup_phase_is_removed_by_edm(self):
        targets = SessionTargets(warmup="edm", work_range=(200, 400), trial_rounds=1, first_estimate_rounds=2,
                                 first_estimate_seconds=0.0, target_width=0.01, budget_seconds=1e6)
        errors, covered = [], []
        for outcome in warm_up_sessions(targets, noise=0.05, seeds=30):
            estimate = outcome.estimates["a"]["time"]
            assert outcome.status is SessionStatus.CONVERGED
            assert estimate.stable_phase
            assert estimate.warmup_removed >= 0.19 * sum(record.work_amount for record in outcome.rounds)
            errors.append(estimate.mean - 1.0)
            covered.append(estimate.ci_low <= 1.0 <= estimate.ci_high)
        # Each mean has a standard error of about 0.0024 (460 readings at 5% noise).
        assert abs(np.mean(errors)) < 0.002
        assert np.mean(covered) >= 0.8
        # Without removal the same rounds are biased by the warm-up: 20% of units at +0.5.
        unfiltered = analyse(outcome.rounds, [TIME], dataclasses.replace(targets, warmup="none"))["a"]["time"]
        assert unfiltered.mean > 1.05

    def test_noisy_warm_ups_below_edms_penalty_are_removed_and_the_cis_cover(self):
        # +50% for the first 20% of every round under 30% noise: EDM alone finds no change point in
        # about a quarter of 400-unit rounds, and sessions then covered 1.0 in 0.69 of cases.
        targets = SessionTargets(warmup="edm", work_range=(60, 400), trial_rounds=1, first_estimate_rounds=10,
                                 first_estimate_seconds=5.0, target_width=0.10, budget_seconds=1e6)
        covered = []
        for outcome in warm_up_sessions(targets, noise=0.3, seeds=200):
            assert outcome.status is SessionStatus.CONVERGED
            estimate = outcome.estimates["a"]["time"]
            covered.append(estimate.ci_low <= 1.0 <= estimate.ci_high)
        # Measured 0.946 [0.930, 0.958] over 1,000 such sessions (benchmarks/time_to_decision.py's warm-up row);
        # 200 seeded sessions leave room for their own spread.
        assert np.mean(covered) >= 0.87

    def test_a_round_keeps_none_of_a_warm_up_found_and_loses_little_without_one(self):
        # 61-reading rounds, +50% for the first 12 under 30% noise: MSER-5 alone stops one batch short of
        # the warm-up in about 40% of them (the straddling batch kept), so the guard batch must follow every
        # warm-up found. Stationary 150-reading rounds: the guard follows only a warm-up found, so they
        # lose about 6% of their readings; a guard after every round's start would cost 8%.
        targets = SessionTargets(warmup="edm")
        rng = np.random.default_rng(15)
        kept_warm_up = []
        for _ in range(200):
            units = 1.0 + 0.3 * rng.standard_normal(61)
            units[:12] += 0.5
            phase = round_stable_phase(units, targets)
            kept_warm_up.append(not phase.dominant or phase.start < 12)
        assert np.mean(kept_warm_up) <= 0.05
        removed, errors = [], []
        for _ in range(200):
            units = 1.0 + 0.3 * rng.standard_normal(150)
            phase = round_stable_phase(units, targets)
            if phase.dominant:
                removed.append(units.size - (phase.stop - phase.start))
                errors.append(phase.values.mean() - 1.0)
        assert len(removed) >= 190
        assert np.mean(removed) <= 0.07 * 150
        assert abs(np.mean(errors)) <= 3 * np.std(errors) / np.sqrt(len(errors))

    def test_wps_recovers_the_stable_speed(self):
        # t = α + w/v + noise with α = 0.2 s of setup and warm-up, v = 1000 units/s.
        alpha, speed = 0.2, 1000.0
        rng = np.random.default_rng(13)
        clock = FakeClock()

        def workload(work_amount):
            duration = alpha + work_amount / speed + 0.01 * rng.standard_normal()
            clock.now += duration
            return RoundOutcome(duration=duration, readings={"throughput": work_amount / duration})

        targets = SessionTargets(warmup="wps", work_range=(1, 2000), target_width=0.05, trial_rounds=2,
                                 first_estimate_rounds=10, first_estimate_seconds=10.0, budget_seconds=1e6)
        outcome = run_session({"a": workload}, [THROUGHPUT], targets, clock=clock)
        estimate = outcome.estimates["a"]["throughput"]
        assert outcome.status is SessionStatus.CONVERGED
        assert estimate.method == "wps"
        assert estimate.ci_low <= speed <= estimate.ci_high
        assert estimate.mean == pytest.approx(speed, rel=0.03)
        # Rounds below α·v = 200 units are mostly setup: the trial rounds at w = 1 were excluded.
        assert estimate.warmup_removed >= 2
        # The per-round readings (work / duration) are biased low by α; the fit is not.
        readings = [record.outcome.readings["throughput"] for record in outcome.rounds]
        assert np.mean(readings) < 0.9 * speed

    def test_budget_exhausted_reports_the_additional_time(self):
        clock = FakeClock()
        noise = 0.5 * np.random.default_rng(3).standard_normal(1000)
        targets = dataclasses.replace(READINGS, budget_rounds=30)
        outcome = run_session({"a": reading_workload(clock, noise)}, [TIME], targets, clock=clock)
        assert outcome.status is SessionStatus.BUDGET_EXHAUSTED
        assert len(outcome.rounds) == 30
        estimate = outcome.estimates["a"]["time"]
        assert estimate.valid and not estimate.converged
        # About (2·1.97·0.5/0.1)² ≈ 390 readings are needed; each of the 30 cost about the mean round time.
        seconds_per_reading = sum(record.outcome.duration for record in outcome.rounds) / 30
        assert 150 * seconds_per_reading < outcome.additional_seconds_needed < 800 * seconds_per_reading

    def test_time_budget_counts_the_clock(self):
        clock = FakeClock()
        noise = 0.5 * np.random.default_rng(3).standard_normal(1000)
        targets = dataclasses.replace(READINGS, budget_seconds=1.0)
        outcome = run_session({"a": reading_workload(clock, noise, seconds_per_unit=0.01)}, [TIME], targets,
                              clock=clock)
        assert outcome.status is SessionStatus.BUDGET_EXHAUSTED
        assert 1.0 <= outcome.elapsed < 2.0


class TestComparison:
    @pytest.mark.parametrize(("metric", "means", "better"), [
        (TIME, {"a": 1.0, "b": 1.15}, "a"),
        (THROUGHPUT, {"a": 100.0, "b": 115.0}, "b"),
    ])
    def test_picks_the_better_one_by_direction(self, metric, means, better):
        clock = FakeClock()
        rng = np.random.default_rng(11)
        workloads = {
            name: reading_workload(clock, 0.1 * mean * rng.standard_normal(1000), mean=mean, metric=metric.name)
            for name, mean in means.items()
        }
        outcome = run_session(workloads, [metric], READINGS, clock=clock)
        assert outcome.status is SessionStatus.RESOLVED
        [pair] = outcome.comparisons
        assert (pair.first, pair.decision) == (better, "different")
        assert [record.workload for record in outcome.rounds] == ["a", "b"] * (len(outcome.rounds) // 2)

    def test_three_workloads_interleave(self):
        clock = FakeClock()
        rng = np.random.default_rng(5)
        workloads = {name: reading_workload(clock, 0.05 * rng.standard_normal(1000), mean=mean)
                     for name, mean in (("a", 1.3), ("b", 1.0), ("c", 1.6))}
        outcome = run_session(workloads, [TIME], READINGS, clock=clock)
        assert outcome.status is SessionStatus.RESOLVED
        assert [(pair.first, pair.second) for pair in outcome.comparisons] == [("b", "a"), ("a", "c")]
        assert [record.workload for record in outcome.rounds[:6]] == ["a", "b", "c"] * 2

    def identical_sessions(self, targets, seeds=range(20)):
        outcomes = []
        for seed in seeds:
            clock = FakeClock()
            rng = np.random.default_rng(100 + seed)
            workloads = {name: reading_workload(clock, 0.1 * rng.standard_normal(1000)) for name in "ab"}
            outcomes.append(run_session(workloads, [TIME], targets, clock=clock))
        return outcomes

    def test_identical_workloads_are_not_resolved_within_budget(self):
        targets = dataclasses.replace(READINGS, budget_rounds=200)
        outcomes = self.identical_sessions(targets)
        for outcome in outcomes:
            assert outcome.status is SessionStatus.UNRESOLVED
            assert outcome.message == NO_DIFFERENCE_RESOLVED
            [pair] = outcome.comparisons
            assert pair.decision == "undecided" and pair.rule == "anytime"
            assert pair.ratio_low < 1.0 < pair.ratio_high
            # The time to decide θ = 2% either way: about (4.5·0.1·√2 / 0.02)² ≈ 1,000 readings per side, of
            # which 94 are analysed; each cost about 0.08 s (the fake clock), so about 140 s at a 10% sd
            # (the estimate uses each session's own variance).
            assert 50 < outcome.additional_seconds_needed < 300

    def test_pilots_rule_stays_selectable(self):
        # Its false decisions under continuous monitoring are measured in tests/stats/test_sequential.py and
        # benchmarks/ab_sessions.py; here, that a job can still choose it and gets Welch's p of the last look.
        clock = FakeClock()
        rng = np.random.default_rng(11)
        workloads = {name: reading_workload(clock, 0.1 * mean * rng.standard_normal(1000), mean=mean)
                     for name, mean in (("a", 1.0), ("b", 1.15))}
        targets = dataclasses.replace(READINGS, comparison_rule="pilot")
        outcome = run_session(workloads, [TIME], targets, clock=clock)
        [pair] = outcome.comparisons
        assert (outcome.status, pair.rule, pair.decision, pair.first) == (SessionStatus.RESOLVED, "pilot",
                                                                          "different", "a")
        a, b = outcome.estimates["a"]["time"], outcome.estimates["b"]["time"]
        assert pair.pvalue == pytest.approx(stats.ttest_ind_from_stats(
            b.mean, np.sqrt(b.variance), b.n, a.mean, np.sqrt(a.variance), a.n, equal_var=False).pvalue)


class TestResumeAndCancel:
    def workloads(self, clock, seed, *, rounds_done=0, fail_at=None):
        rng = np.random.default_rng(seed)
        noises = {name: 0.1 * rng.standard_normal(1000) for name in "ab"}
        workloads = {name: reading_workload(clock, noises[name], mean=mean)
                     for name, mean in (("a", 1.0), ("b", 1.08))}
        for name, workload in workloads.items():
            workload.state["round"] = rounds_done // 2 + (name == "a" and rounds_done % 2)
        if fail_at is not None:
            def failing(work_amount, inner=workloads["a"]):
                if inner.state["round"] == fail_at:
                    raise RuntimeError("worker died")
                return inner(work_amount)
            workloads["a"] = failing
        return workloads

    def test_resumed_session_reaches_the_same_decision(self):
        clock = FakeClock()
        whole = run_session(self.workloads(clock, 21), [TIME], READINGS, clock=clock)

        stored, calls = [], []

        def on_round(record, progress):
            stored.append(record)
            calls.append(progress.rounds_done)

        clock = FakeClock()
        with pytest.raises(RuntimeError, match="worker died"):
            run_session(self.workloads(clock, 21, fail_at=7), [TIME], READINGS, clock=clock, on_round=on_round)
        assert len(stored) == 14 and calls == list(range(1, 15))
        resumed = run_session(self.workloads(clock, 21, rounds_done=len(stored)), [TIME], READINGS,
                              previous_rounds=stored, clock=clock, on_round=on_round)
        assert resumed.status == whole.status
        assert resumed.rounds == whole.rounds
        assert resumed.estimates == whole.estimates
        assert resumed.comparisons == whole.comparisons
        assert calls == list(range(1, len(whole.rounds) + 1))

    def test_should_stop_cancels_between_rounds(self):
        clock = FakeClock()
        seen = []
        outcome = run_session(self.workloads(clock, 4), [TIME], READINGS, clock=clock,
                              on_round=lambda record, progress: seen.append(record),
                              should_stop=lambda: len(seen) >= 5)
        assert outcome.status is SessionStatus.CANCELLED
        assert len(outcome.rounds) == 5 and outcome.additional_seconds_needed is None

    def test_progress_and_analyse_recompute_from_stored_rounds(self):
        clock = FakeClock()
        seen = []
        outcome = run_session(self.workloads(clock, 9), [TIME], READINGS, clock=clock,
                              on_round=lambda record, progress: seen.append(progress))
        assert analyse(outcome.rounds, [TIME], READINGS) == outcome.estimates
        again = progress(outcome.rounds[:10], [TIME], READINGS, elapsed=seen[9].elapsed)
        assert again == seen[9]
        assert seen[-1].estimated_remaining == 0.0
        # The stop rule is checked after complete cycles (a, b); before the last one, time remains.
        cycles = [p for p in seen[:-1] if p.rounds_done % 2 == 0]
        assert all(p.estimated_remaining is None or p.estimated_remaining > 0 for p in cycles)


def test_rounds_at_the_largest_work_amount_are_analysed_even_when_short():
    targets = SessionTargets(warmup="none", work_range=(1, 4), min_round_duration=1.0, trial_rounds=1,
                             first_estimate_rounds=2, first_estimate_seconds=0.0, budget_rounds=40,
                             budget_seconds=1e6)
    rng = np.random.default_rng(1)

    def quick(work_amount):
        return RoundOutcome(duration=0.01 * work_amount, readings={"time": float(1 + rng.normal(0, 0.01))})

    outcome = run_session({"a": quick}, [MetricSpec("time", "s")], targets, clock=iter(range(10**6)).__next__)

    assert [r.analysed for r in outcome.rounds if r.work_amount >= 4] and all(
        r.analysed for r in outcome.rounds if r.work_amount >= 4)
    assert outcome.estimates["a"]["time"].sample_count > 0
