"""MSER truncation of an initial transient, against kim-convergence's MSER-m and simulations with a known warm-up."""

import json
from pathlib import Path

import numpy as np
import pytest

from results.stats import mser_truncation, stable_phase

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference"


def reference_rows():
    rows = json.loads((REFERENCE / "kim-convergence-mser.json").read_text())["rows"]
    # kim-convergence marks a minimum beyond the middle as no truncation; we restrict d to the first half instead.
    return [row for row in rows if row["truncated"]]


def test_the_reference_has_rows_of_both_batch_sizes_with_and_without_truncation():
    rows = reference_rows()
    assert {row["batch_size"] for row in rows} == {1, 5}
    assert any(row["truncation_point"] == 0 for row in rows)
    assert any(row["truncation_point"] > 0 for row in rows)


@pytest.mark.parametrize("row", reference_rows(), ids=lambda row: f"b{row['batch_size']}-n{len(row['x'])}")
def test_truncation_point_equals_kim_convergence_mser_m(row):
    result = mser_truncation(row["x"], batch_size=row["batch_size"])
    assert result.truncation == row["truncation_point"]
    assert result.n == len(row["x"])
    assert result.truncation % row["batch_size"] == 0


def test_statistic_is_the_definition_for_every_candidate():
    x = np.random.default_rng(3).standard_normal(53)
    result = mser_truncation(x, batch_size=5)
    means = x[:50].reshape(10, 5).mean(axis=1)
    expected = [np.sum((means[d:] - means[d:].mean()) ** 2) / (10 - d) ** 2 for d in range(5)]
    np.testing.assert_allclose(result.statistic, expected, rtol=1e-12)
    assert result.truncation == 5 * int(np.argmin(expected))


def test_a_step_at_the_start_is_cut_where_it_ends():
    x = np.r_[np.full(20, 3.0), np.full(80, 1.0)] + 0.01 * np.random.default_rng(4).standard_normal(100)
    # All of the step goes, and at most a batch or two of the noise after it.
    assert 20 <= mser_truncation(x, batch_size=5).truncation <= 30
    assert 20 <= mser_truncation(x, batch_size=1).truncation <= 22


def test_a_constant_series_is_not_truncated():
    assert mser_truncation(np.ones(40)).truncation == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x": np.ones(9)}, "`x` must hold at least 10 samples"),
        ({"x": np.ones(20), "batch_size": 0}, "`batch_size` must be at least 1"),
        ({"x": np.ones(20), "batch_size": 2.5}, "`batch_size` must be an integer"),
        ({"x": np.r_[np.ones(19), np.nan]}, "`x` must"),
        ({"x": np.ones((4, 5))}, "`x` must"),
    ],
)
def test_invalid_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mser_truncation(**kwargs)


def warmed_up(rng, n, sd, fraction=0.2, shift=0.5):
    x = 1.0 + sd * rng.standard_normal(n)
    x[: int(fraction * n)] += shift
    return x


def test_mser_removes_the_noisy_warm_ups_edm_misses_at_little_cost_on_stationary_rounds():
    # +50% for the first 20% of 400 readings with 30% noise: 1.7 sd, below EDM's default penalty.
    rng = np.random.default_rng(6)
    rounds = [warmed_up(rng, 400, 0.3) for _ in range(200)]
    plain = [stable_phase(x, min_size=30) for x in rounds]
    mser = [stable_phase(x, min_size=30, mser_batch_size=5) for x in rounds]
    assert np.mean([phase.start < 80 for phase in plain if phase.dominant]) > 0.15
    # Without mser_batch_size the stable phase is spec §4's: the longest segment, untouched.
    assert all(phase.truncated == 0 and (phase.start, phase.stop) == phase.longest for phase in plain if phase.dominant)
    assert np.mean([phase.start < 75 for phase in mser if phase.dominant]) < 0.05
    # What is left of the warm-up biases the mean by a small fraction of its standard error (0.017).
    bias = np.mean([phase.values.mean() - 1.0 for phase in mser if phase.dominant])
    assert abs(bias) < 0.005

    stationary = [1.0 + 0.3 * rng.standard_normal(400) for _ in range(200)]
    phases = [stable_phase(x, min_size=30, mser_batch_size=5) for x in stationary]
    kept = np.array([phase.values.size for phase in phases if phase.dominant])
    assert np.mean(kept) > 0.95 * 400
    # Truncating a stationary start leaves the mean unbiased: within 3 standard errors of the truth.
    means = np.array([phase.values.mean() for phase in phases if phase.dominant])
    assert abs(means.mean() - 1.0) < 3 * means.std(ddof=1) / np.sqrt(means.size)
