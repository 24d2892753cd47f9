"""The WPS model, work-amount sequence and Pilot's eq. 5 (spec §4), against Pilot's vectors."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from results.stats import (
    NotEnoughSamples,
    StatisticsError,
    round_increment,
    work_amounts,
    wps_fit,
)

# The external reference vectors, copied from the project's shared reference set (see its README.md).
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference"
SECOND = 1e9  # Pilot's durations are int64 nanoseconds


def pilot_case(case_id):
    cases = {case["id"]: case for case in json.loads((REFERENCE / "pilot-bench.json").read_text())["cases"]}
    return cases[case_id]


def pilot_fit(work, duration_ns):
    """Pilot's conventions made explicit: q = 1 (its tests pass ac_limit 1), seconds, factor 2 not t."""
    work = np.asarray(work, dtype=float)
    duration = np.asarray(duration_ns, dtype=float) / SECOND
    fit = wps_fit(work, duration, max_autocorrelation=1.0, min_subsessions=3)
    assert fit.subsession_size == 1
    b, se = fit.slope, fit.slope_stderr
    v_ci = abs(1.0 / (b - 2.0 * se) - 1.0 / (b + 2.0 * se))
    ssr = np.sum((fit.alpha + b * work - duration) ** 2)  # over all raw rounds, s²
    return fit, v_ci, ssr


def test_pilot_ols1():
    case = pilot_case("pilot.wps.ols1")
    fit, v_ci, ssr = pilot_fit(case["inputs"]["work_amount"], case["inputs"]["round_duration_ns"])
    full = case["derived_full_precision_reference"]
    # pilot-bench.json, pilot.wps.ols1: alpha 44 ± 4, v 0.5 ± 0.1, v_ci 0.1803 ± 0.01, ssr 2330 ± 10
    assert fit.alpha == pytest.approx(44, abs=4)
    assert fit.v == pytest.approx(0.5, abs=0.1)
    assert v_ci == pytest.approx(0.1803, abs=0.01)
    assert ssr == pytest.approx(2330, abs=10)
    # ... and its full-precision re-derivation
    assert fit.alpha == pytest.approx(full["alpha_s"], rel=1e-12)
    assert fit.v == pytest.approx(full["v_per_s"], rel=1e-12)
    assert v_ci == pytest.approx(full["v_ci"], rel=1e-10)
    assert ssr == pytest.approx(full["ssr_s2"], rel=1e-10)


def test_pilot_ols2_exact_linear():
    case = pilot_case("pilot.wps.ols2_exact_linear")
    t_s = np.arange(0, 2000, 50)
    work = 500 * 100 + 30 * t_s + 15 * 30  # the case's inputs_generator
    duration_ns = 10 + 100 + 30 + t_s
    fit, v_ci, ssr = pilot_fit(work, duration_ns)
    # pilot-bench.json, pilot.wps.ols2_exact_linear: ssr 0, alpha -1541.7 ns, v 30e9 /s, v_ci 0
    assert ssr == pytest.approx(0, abs=1e-3)
    assert fit.alpha * SECOND == pytest.approx(-1541.7, abs=0.1)
    assert fit.v == pytest.approx(30 * SECOND, abs=0.1)
    # Upstream asserts v_ci 0 ± 0.001 on v = 3e10: its residuals are exactly 0. Here they are
    # rounding noise of the seconds, which leaves a relative width of order 1e-8.
    assert v_ci / fit.v < 1e-7
    assert fit.alpha == pytest.approx(case["derived_full_precision_reference"]["alpha_s"], rel=1e-9)


@pytest.mark.parametrize(
    ("case_id", "tolerances"),
    [
        ("pilot.wps.ols3_real_A", {"alpha": 1e-4, "v": 1e4, "v_ci": 1, "ssr": 1e-3}),
        ("pilot.wps.ols4_real_B", {"alpha": 1, "v": 1, "v_ci": 1, "ssr": 1e-6}),
    ],
)
def test_pilot_real_rounds(case_id, tolerances):
    case = pilot_case(case_id)
    fit, v_ci, ssr = pilot_fit(case["inputs"]["work_amount"], case["inputs"]["round_duration_ns"])
    full = case["derived_full_precision_reference"]
    # pilot-bench.json, ols3: alpha 2.0296, v 1e9/6.7485, v_ci 15068212467, ssr 0.2059332;
    # ols4: alpha 2694596476 ns (checked as |alpha - 2| <= 1 upstream), v 172572240, v_ci 114550295,
    # ssr 0.59193307. Checked against the full-precision values with the upstream tolerances.
    assert fit.alpha == pytest.approx(full["alpha_s"], abs=tolerances["alpha"])
    assert fit.v == pytest.approx(full["v_per_s"], abs=tolerances["v"])
    assert v_ci == pytest.approx(full["v_ci"], abs=tolerances["v_ci"])
    assert ssr == pytest.approx(full["ssr_s2"], abs=tolerances["ssr"])


@pytest.mark.parametrize("case_id", ["pilot.wps.fixed_warmup_1", "pilot.wps.fixed_warmup_2"])
def test_pilot_fixed_warm_up(case_id):
    case = pilot_case(case_id)
    fit, v_ci, _ = pilot_fit(case["inputs"]["work_amount"], case["inputs"]["round_duration_ns"])
    # pilot-bench.json: v 1.5 ± 1e-8, v_ci 0 ± 1e-5 (setup 1 s, warm-up 2 s at 3v, cool-down 1 s)
    assert fit.v == pytest.approx(1.5, abs=1e-8)
    assert v_ci == pytest.approx(0, abs=1e-5)
    assert fit.alpha == pytest.approx(case["derived_full_precision_reference"]["alpha_s"], abs=1e-8)


def test_pilot_not_enough_data():
    case = pilot_case("pilot.wps.not_enough_data")
    # pilot-bench.json, pilot.wps.not_enough_data: ERR_NOT_ENOUGH_DATA for one round
    with pytest.raises(NotEnoughSamples, match="at least `min_subsessions` = 3 rounds"):
        wps_fit(case["inputs"]["work_amount"], case["inputs"]["round_duration_ns"], min_subsessions=3)


def test_ols_against_scipy_and_t_interval():
    rng = np.random.default_rng(0)
    work = work_amounts(100.0, 1000.0, 30)
    duration = 3.0 + work / 50.0 + rng.normal(0.0, 0.2, 30)
    fit = wps_fit(work, duration, max_autocorrelation=1.0)
    reference = stats.linregress(work, duration)
    assert fit.slope == reference.slope and fit.slope_stderr == reference.stderr
    assert fit.df == 28 and fit.n == 30 and fit.subsession_size == 1
    half = stats.t.ppf(0.975, 28) * reference.stderr
    assert (fit.slope_low, fit.slope_high) == pytest.approx((reference.slope - half, reference.slope + half))
    assert fit.bounded
    assert fit.confidence_interval() == pytest.approx((1 / fit.slope_high, 1 / fit.slope_low))
    assert fit.low < fit.v < fit.high
    assert fit.alpha == pytest.approx(reference.intercept) and fit.alpha_stderr == reference.intercept_stderr


def test_unbounded_speed_is_explicit():
    # Slope barely above its noise: the interval of 1/v reaches 0, so v has no upper limit.
    rng = np.random.default_rng(1)
    work = work_amounts(1.0, 2.0, 12)
    duration = 5.0 + 0.01 * work + rng.normal(0.0, 0.01, 12)
    fit = wps_fit(work, duration, max_autocorrelation=1.0)
    assert fit.slope > 0 and fit.slope_low <= 0
    assert not fit.bounded and fit.high == np.inf and fit.low == 1 / fit.slope_high


def test_non_positive_slope_is_an_error():
    work = work_amounts(1.0, 2.0, 12)
    with pytest.raises(StatisticsError, match="slope .* is not positive"):
        wps_fit(work, 10.0 - work, max_autocorrelation=1.0)


def test_merges_rounds_until_residuals_are_uncorrelated():
    rng = np.random.default_rng(2)
    rounds = 120
    work = np.tile([200.0, 400.0, 300.0, 500.0], rounds // 4)
    # AR(1) noise (φ = 0.9) makes neighbouring rounds' residuals correlated.
    noise = np.zeros(rounds)
    for i in range(1, rounds):
        noise[i] = 0.9 * noise[i - 1] + rng.normal(0.0, 0.3)
    duration = 2.0 + work / 100.0 + noise
    fit = wps_fit(work, duration)
    assert fit.subsession_size > 1 and abs(fit.autocorrelation) <= 0.1
    assert fit.n == rounds // fit.subsession_size
    assert fit.low <= 100.0 <= fit.high
    # The §2 rule: q = 1 itself is refused here.
    with pytest.raises(NotEnoughSamples, match="more rounds are needed to try subsession size"):
        wps_fit(work[:12], duration[:12])


def test_exact_fit_counts_as_uncorrelated():
    work = work_amounts(10.0, 100.0, 15)
    fit = wps_fit(work, 1.0 + work / 4.0)
    assert fit.subsession_size == 1 and fit.autocorrelation == 0.0
    assert fit.v == pytest.approx(4.0) and fit.alpha == pytest.approx(1.0)


def test_coverage_of_the_speed_interval():
    # Seeded: 2,000 sessions of 20 rounds, t = α + w/v + N(0, σ²); the 95% CI of v should hold v ~95%.
    rng = np.random.default_rng(2024)
    alpha, v, replications = 1.5, 80.0, 2000
    work = work_amounts(50.0, 800.0, 20)
    hits = 0
    for _ in range(replications):
        duration = alpha + work / v + rng.normal(0.0, 0.25, work.size)
        fit = wps_fit(work, duration, max_autocorrelation=1.0)
        hits += fit.low <= v <= fit.high
    assert 0.93 <= hits / replications <= 0.97


def test_coverage_with_merging():
    # The same with the default ρ_max = 0.1 and 100 rounds: when the data choose q, the sessions
    # that get a fit still cover at about 95%; the others are told how many rounds to add.
    rng = np.random.default_rng(2025)
    alpha, v, replications = 1.5, 80.0, 2000
    work = work_amounts(50.0, 800.0, 100)
    hits = fitted = 0
    for _ in range(replications):
        duration = alpha + work / v + rng.normal(0.0, 0.25, work.size)
        try:
            fit = wps_fit(work, duration)
        except NotEnoughSamples as error:
            assert error.needed >= 1
            continue
        fitted += 1
        hits += fit.low <= v <= fit.high
    assert fitted >= 0.9 * replications
    assert 0.93 <= hits / fitted <= 0.97


# --- Work amounts (Pilot §III-A Fig. 3) and eq. 5 ---


def test_work_amounts_breadth_first_midpoints():
    # spec §4 / Pilot Fig. 3: 1/2, then 1/4, 3/4, then 1/8, 3/8, 5/8, 7/8, then 1/16 ...
    expected = np.array([8, 4, 12, 2, 6, 10, 14, 1]) / 16
    np.testing.assert_array_equal(work_amounts(0.0, 1.0, 8), expected)
    amounts = work_amounts(100.0, 1100.0, 7)
    assert amounts[0] == 600.0  # Rd.1: midpoint of a and b
    assert amounts[1] == (100.0 + amounts[0]) / 2  # Rd.2: midpoint of a and Rd.1
    assert amounts[2] == (amounts[0] + 1100.0) / 2  # Rd.3: midpoint of Rd.1 and b
    assert work_amounts(100.0, 1100.0, 8)[7] == (100.0 + amounts[3]) / 2  # Rd.8: midpoint of a and Rd.4
    many = work_amounts(0.0, 1.0, 1000)
    assert np.unique(many).size == 1000 and np.all((many > 0) & (many < 1))
    assert work_amounts(0.0, 1.0, 0).size == 0


def test_round_increment_pilot_eq5():
    # pilot-bench.json, pilot.session.wps_next_work_amount: first round 1 s, n = 10, T = 60 s
    # -> k = (2*60 - 2*1*10) / (10^2 - 10) = 1.111 s
    assert round_increment(1.0, 10) == pytest.approx(100 / 90)
    # Eq. 5 inverts the total duration n s + k n (n - 1) / 2 = T.
    k = round_increment(2.0, 8, target_time=100.0)
    assert 8 * 2.0 + k * 8 * 7 / 2 == pytest.approx(100.0)
    assert round_increment(10.0, 10) < 0  # ten 10-second rounds already exceed 60 s


# --- Validation ---


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([1, 2, 3], [1, 2]), {}, r"`work` and `duration` must have the same length; got 3 and 2"),
        (([1, 0, 3], [1, 2, 3]), {}, r"`work` must be positive"),
        (([1, 2, 3], [1, -2, 3]), {}, r"`duration` must be positive"),
        (([1, np.nan, 3], [1, 2, 3]), {}, r"`work` must not contain NaN or infinite"),
        (([1, 2, 3], [1, np.inf, 3]), {}, r"`duration` must not contain NaN or infinite"),
        (([[1, 2], [3, 4]], [1, 2]), {}, r"`work` must be one-dimensional"),
        (([2, 2, 2], [1, 2, 3]), {"min_subsessions": 3}, r"`work` must take at least two distinct values"),
        (([1, 2, 3], [1, 2, 3]), {"confidence": 1.0}, r"`confidence` must be strictly between 0 and 1"),
        (([1, 2, 3], [1, 2, 3]), {"confidence": 0}, r"`confidence` must be strictly between 0 and 1"),
        (([1, 2, 3], [1, 2, 3]), {"max_autocorrelation": 1.5}, r"`max_autocorrelation` must lie in \[0, 1\]"),
        (([1, 2, 3], [1, 2, 3]), {"max_autocorrelation": "x"}, r"`max_autocorrelation` must be a number"),
        (([1, 2, 3], [1, 2, 3]), {"min_subsessions": 2}, r"`min_subsessions` must be at least 3"),
    ],
)
def test_wps_validation(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        wps_fit(*args, **kwargs)


def test_wps_too_few_rounds():
    with pytest.raises(NotEnoughSamples, match="at least `min_subsessions` = 10 rounds; got 4") as error:
        wps_fit([1, 2, 3, 4], [1, 2, 3, 4])
    assert error.value.needed == 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.0, 1.0, 3), r"`a` must be less than `b`"),
        ((2.0, 1.0, 3), r"`a` must be less than `b`"),
        ((-1.0, 1.0, 3), r"`a` must be at least 0"),
        ((0.0, np.inf, 3), r"`b` must be a finite number"),
        ((np.nan, 1.0, 3), r"`a` must be a finite number"),
        ((0.0, 1.0, -1), r"`count` must be at least 0"),
        ((0.0, 1.0, 2.0), r"`count` must be an integer"),
    ],
)
def test_work_amounts_validation(args, message):
    with pytest.raises(ValueError, match=message):
        work_amounts(*args)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0.0, 10), {}, r"`first_duration` must be positive"),
        ((np.nan, 10), {}, r"`first_duration` must be a finite number"),
        ((1.0, 1), {}, r"`rounds` must be at least 2"),
        ((1.0, 10), {"target_time": 0.0}, r"`target_time` must be positive"),
    ],
)
def test_round_increment_validation(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        round_increment(*args, **kwargs)
