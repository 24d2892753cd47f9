"""environment_match: runs of many series recognised by their fingerprint, on simulated machines whose truth is
known (each environment's effect on each series drawn here), never on independent series or an environment that
stays."""

import math

import numpy as np
import pytest

from results.stats import environment_match, environment_offsets, level_deviations, without_environment

SERIES = 40


def machine(nights: int, *, seed: int, environments: int = 2, noise: float = 0.01, share: float = 0.3):
    """Deviations of `nights` runs: most nights ordinary, a `share` of them in one of `environments` runner types,
    each moving every series by its own amount (between −30% and −5%, or +5% and +25%); returns the deviations,
    each night's environment (0 ordinary) and the effects (environments × series, log scale)."""
    rng = np.random.default_rng(seed)
    effects = np.vstack([np.zeros(SERIES)] + [
        rng.uniform(-0.30, -0.05, SERIES) if kind % 2 else rng.uniform(0.05, 0.25, SERIES)
        for kind in range(1, environments + 1)])
    kinds = np.where(rng.random(nights) < share, rng.integers(1, environments + 1, nights), 0)
    deviations = effects[kinds] + rng.normal(0.0, noise, (nights, SERIES))
    return deviations, kinds, effects


def test_a_recurring_environment_is_recognised_and_its_effect_on_each_series_recovered():
    matched = errors = 0
    for seed in range(50):
        deviations, kinds, effects = machine(61, seed=seed)
        kinds[-1] = 1
        tonight = effects[1] + np.random.default_rng(1000 + seed).normal(0.0, 0.01, SERIES)
        if (kinds[:-1] == 1).sum() < 3:
            continue
        result = environment_match(tonight, deviations[:-1])
        matched += result.matched
        if result.matched:
            assert all(kinds[j] == 1 for j in result.neighbours), (seed, result.neighbours)
            errors = max(errors, float(np.max(np.abs(result.offsets - effects[1]))))
            assert result.move == pytest.approx(np.median(tonight))
    assert matched >= 45
    # The median of up to 5 nights' noise (sd 1%) around each series' true effect.
    assert errors < 0.03


def test_a_step_of_one_series_stays_in_its_values_once_the_environment_is_divided_out():
    deviations, kinds, effects = machine(60, seed=3)
    tonight = effects[2] + np.random.default_rng(4).normal(0.0, 0.01, SERIES)
    tonight[7] += np.log(1.10)
    result = environment_match(tonight, deviations)
    assert result.matched
    assert tonight[7] - result.offsets[7] == pytest.approx(np.log(1.10), abs=0.03)


def test_an_environment_the_machine_has_not_left_is_never_divided_out():
    # A new runner image from night 50 on, moving every series: a shift of the machine, to be reported.
    deviations, _, _ = machine(60, seed=5, share=0.0)
    moved = np.random.default_rng(6).uniform(0.04, 0.12, SERIES)
    deviations[50:] += moved
    assert not environment_match(moved + 0.001, deviations).matched
    # Ten nights later the series' levels have followed it; the fingerprint fades as if the machine had left,
    # but that long a run was a change of level, not an environment: the same move again is a change again.
    deviations = np.vstack([deviations, np.random.default_rng(7).normal(0.0, 0.01, (3, SERIES))])
    assert not environment_match(moved + 0.001, deviations).matched


def test_a_machine_whose_series_drift_together_is_never_divided_out():
    # Half the series slow by 1% a night from night 25 (a degrading machine). Each night's deviation from the
    # series' level of its last 20 nights (as results.environment takes it) grows for 10 nights, so a few alike
    # nights end, as an environment left does, but by drifting further: a change of the machine to report, not an
    # environment it has left (before the rule, 25 of these 35 nights were matched).
    rng = np.random.default_rng(8)
    drift = np.where(np.arange(SERIES) < SERIES // 2, 0.01, 0.0)
    values = np.exp(np.maximum(np.arange(60) - 24, 0)[:, None] * drift + rng.normal(0.0, 0.01, (60, SERIES)))
    deviations = np.vstack([level_deviations(values[night], values[max(0, night - 20):night])
                            for night in range(5, 60)])
    assert not any(environment_match(deviations[night], deviations[:night]).matched
                   for night in range(20, len(deviations)))


def test_two_runner_types_in_a_row_are_each_recognised():
    # A night of one type, then one of another (each moving every series by its own amount), then ordinary ones:
    # the first is left for the second, not drifted out of.
    rng = np.random.default_rng(3)
    first, second = rng.uniform(0.05, 0.15, SERIES), rng.uniform(-0.25, 0.25, SERIES)
    kinds = [0, 0, 0, 1, 2] * 12
    nights = np.array([(0 * first, first, second)[kind] + rng.normal(0.0, 0.01, SERIES) for kind in kinds])
    typed = [night for night in range(10, len(kinds)) if kinds[night]]
    assert all(environment_match(nights[night], nights[:night]).matched for night in typed)


def test_a_short_environment_left_again_is_recognised():
    deviations, _, _ = machine(60, seed=5, share=0.0)
    moved = np.random.default_rng(6).uniform(0.04, 0.12, SERIES)
    deviations[[20, 21, 40, 50, 51, 52]] += moved
    result = environment_match(moved + 0.001, deviations)
    assert result.matched and set(result.neighbours) <= {20, 21, 40, 50, 51, 52}


def test_a_second_step_of_the_same_series_is_no_environment_seen_before():
    # Half the series step by 5% on night 25; their deviations fade as their levels follow (5 nights of the 10
    # a level is the median of). The same series stepping again is a change, not that night's environment.
    rng = np.random.default_rng(14)
    deviations = rng.normal(0.0, 0.015, (50, SERIES))
    deviations[25:30, :SERIES // 2] += 0.05
    tonight = rng.normal(0.0, 0.015, SERIES)
    tonight[:SERIES // 2] += 0.05
    assert not environment_match(tonight, deviations).matched


def test_independent_series_match_no_night():
    rng = np.random.default_rng(8)
    matched = sum(environment_match(rng.normal(0.0, 0.05, SERIES), rng.normal(0.0, 0.05, (60, SERIES))).matched
                  for _ in range(500))
    assert matched == 0


def test_an_ordinary_night_and_too_few_series_are_left_alone():
    deviations, _, effects = machine(60, seed=9)
    quiet = environment_match(np.random.default_rng(10).normal(0.0, 0.01, SERIES), deviations)
    assert not quiet.matched and not quiet.offsets.any()
    few = environment_match(effects[1][:5], deviations[:, :5])
    assert not few.matched and np.isnan(few.spread)


def test_series_missing_on_some_nights_are_compared_on_those_both_have():
    deviations, kinds, effects = machine(60, seed=11)
    deviations[:, :10] = np.nan  # ten series new tonight
    deviations[np.random.default_rng(12).random(deviations.shape) < 0.1] = np.nan
    tonight = effects[1] + np.random.default_rng(13).normal(0.0, 0.01, SERIES)
    result = environment_match(tonight, deviations)
    assert result.matched and all(kinds[j] == 1 for j in result.neighbours)
    # A series none of the matching nights measured gets the environment's typical move.
    assert result.offsets[:10] == pytest.approx(np.full(10, np.median(result.offsets[10:])))


def test_environment_offsets_are_each_series_median():
    matched = np.array([[0.1, -0.2, np.nan], [0.3, -0.4, np.nan], [0.2, np.nan, np.nan]])
    assert environment_offsets(matched) == pytest.approx([0.2, -0.3, -0.05])
    assert environment_offsets(np.full((2, 3), np.nan)) == pytest.approx([0.0, 0.0, 0.0])


@pytest.mark.parametrize(("arguments", "options", "named"), [
    (([[0.1, 0.2]], np.zeros((3, 2))), {}, "`deviations`"),
    ((np.zeros(3), np.zeros((4, 2))), {}, "`past`"),
    ((np.zeros(3), np.zeros(3)), {}, "`past`"),
    ((np.array([np.inf, 0, 0]), np.zeros((2, 3))), {}, "`deviations` and `past`"),
    ((np.zeros(3), np.zeros((2, 3))), {"ratio": 1.0}, "`ratio`"),
    ((np.zeros(3), np.zeros((2, 3))), {"neighbours": 0}, "neighbours"),
    ((np.zeros(3), np.zeros((2, 3))), {"neighbours": 2, "min_neighbours": 3}, "`min_neighbours`"),
    ((np.zeros(3), np.zeros((2, 3))), {"min_series": 1}, "`min_series`"),
    ((np.zeros(3), np.zeros((2, 3))), {"floor": -0.1}, "`floor`"),
    ((np.zeros(3), np.zeros((2, 3))), {"longest": 0}, "longest"),
])
def test_invalid_input_is_refused_naming_the_parameter(arguments, options, named):
    with pytest.raises(ValueError, match=named):
        environment_match(*arguments, **options)


def test_environment_offsets_refuses_what_is_not_a_matrix():
    with pytest.raises(ValueError, match="`matched`"):
        environment_offsets([0.1, 0.2])


def test_level_deviations_are_the_log_distance_from_each_series_level():
    # Known levels, nights scattered 0.1% around them: tonight 10% above one series' level, 20% below another's.
    rng = np.random.default_rng(15)
    levels = np.array([2.0, 50.0, 0.3, 7.0])
    history = levels * np.exp(rng.normal(0.0, 0.001, (20, 4)))
    history[:17, 3] = np.nan  # three nights only
    tonight = levels * np.array([1.10, 0.80, 1.0, 1.0])
    tonight[2] = 0.0
    deviations = level_deviations(tonight, history)
    assert deviations[:2] == pytest.approx(np.log([1.10, 0.80]), abs=0.002)
    assert np.isnan(deviations[2]) and np.isnan(deviations[3])
    assert not np.isnan(level_deviations(tonight, history, min_nights=3)[3])
    with pytest.raises(ValueError, match="`history`"):
        level_deviations(tonight, history[:, :3])
    with pytest.raises(ValueError, match="min_nights"):
        level_deviations(tonight, history, min_nights=0)


def test_without_environment_divides_the_offset_out_on_the_log_scale():
    # A night 10% up in its environment is brought back to its level; no offset changes nothing.
    assert without_environment(math.log(1.10)) * 1.10 == pytest.approx(1.0, rel=1e-15)
    assert without_environment(math.log(0.80)) * 0.80 == pytest.approx(1.0, rel=1e-15)
    assert without_environment(None) == without_environment(0.0) == 1.0
