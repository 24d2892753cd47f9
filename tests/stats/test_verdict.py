"""Verdicts shown in the UI (spec §7)."""

import numpy as np
import pytest

from results.stats import Direction, Verdict, format_change, verdict


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (1.03, 1.08, Verdict.REGRESSION),  # lo > 1 + θ
        (0.90, 0.97, Verdict.IMPROVEMENT),  # hi < 1 - θ
        (0.99, 1.01, Verdict.NO_CHANGE),  # inside the band
        (0.98, 1.02, Verdict.NO_CHANGE),  # band edges are inclusive
        (1.01, 1.05, Verdict.INCONCLUSIVE),  # straddles 1 + θ
        (0.95, 0.99, Verdict.INCONCLUSIVE),  # straddles 1 - θ
        (0.90, 1.10, Verdict.INCONCLUSIVE),  # covers the whole band
        (-np.inf, np.inf, Verdict.INCONCLUSIVE),  # unbounded Fieller interval
        (1.02, 1.05, Verdict.INCONCLUSIVE),  # lo == 1 + θ is not above it
    ],
)
def test_lower_is_better(low, high, expected):
    assert verdict(low, high, threshold=0.02) is expected


def test_higher_is_better_is_the_mirror():
    assert verdict(1.03, 1.08, direction="higher_is_better") is Verdict.IMPROVEMENT
    assert verdict(0.90, 0.97, direction=Direction.HIGHER_IS_BETTER) is Verdict.REGRESSION
    assert verdict(0.99, 1.01, direction="higher_is_better") is Verdict.NO_CHANGE


def test_thresholds_and_directions_broadcast_per_series():
    outcome = verdict([1.03, 1.03, 0.93], [1.08, 1.08, 0.97], threshold=[0.02, 0.05, 0.02],
                      direction=["lower_is_better", "lower_is_better", "higher_is_better"])

    assert list(outcome) == [Verdict.REGRESSION, Verdict.INCONCLUSIVE, Verdict.REGRESSION]


def test_zero_threshold_never_says_no_change():
    assert verdict(1.0, 1.0, threshold=0.0) is Verdict.INCONCLUSIVE
    assert verdict(1.001, 1.002, threshold=0.0) is Verdict.REGRESSION


def test_vectorized():
    result = verdict([1.03, 0.90, 0.99, 0.95], [1.08, 0.97, 1.01, 1.05])
    assert list(result) == [Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.NO_CHANGE, Verdict.INCONCLUSIVE]


def test_verdicts_are_strings():
    assert Verdict.NO_CHANGE == "no change"
    assert str(Verdict.REGRESSION) == "regression"


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((1.1, 1.0), {}, "`low` must not exceed `high`"),
        ((np.nan, 1.0), {}, "`low` must not contain NaN"),
        ((1.0, np.nan), {}, "`high` must not contain NaN"),
        ((1.0, 1.1), {"threshold": -0.01}, "`threshold` must be at least 0"),
        ((1.0, 1.1), {"threshold": [0.01, -0.02]}, "`threshold` must be at least 0"),
        ((1.0, 1.1), {"direction": ["lower_is_better", "down"]}, "got 'down'"),
        ((1.0, 1.1), {"direction": "up"}, "`direction` must be 'lower_is_better' or 'higher_is_better'"),
        (("a", 1.1), {}, "`low` must be numeric"),
    ],
)
def test_validation(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        verdict(*args, **kwargs)


def test_format_change():
    assert format_change(1.055, 1.03, 1.08) == "+5.5% [+3.0%, +8.0%]"
    assert format_change(0.9, 0.85, 0.95, digits=2) == "-10.00% [-15.00%, -5.00%]"
    assert format_change(1.2, -np.inf, np.inf) == "+20.0% [unbounded]"
    assert format_change(1.2, None, None) == "+20.0% [unbounded]"
    assert format_change(np.float64(1.055), np.array(1.03), 1.08) == "+5.5% [+3.0%, +8.0%]"


def test_format_change_refuses_nan():
    with pytest.raises(ValueError, match="NaN"):
        format_change(1.0, float("nan"), 1.1)
