"""locate_shifts on seeded nightly series whose shifts are known."""

import numpy as np
import pytest

from results.stats import SHIFT_MIN_SEGMENT, locate_shifts


def test_a_step_is_placed_within_one_night_in_most_series():
    rng = np.random.default_rng(5)
    placed = []
    for _ in range(100):
        means = rng.normal(0.0, 1.0, 80)
        means[40:] += 5.0
        placed.append(locate_shifts(means))
    within_one = sum(len(found) == 1 and abs(found[0] - 40) <= 1 for found in placed)
    assert within_one >= 95


def test_series_without_a_shift_rarely_get_one():
    rng = np.random.default_rng(6)
    assert sum(bool(locate_shifts(rng.normal(0.0, 1.0, 80))) for _ in range(200)) <= 4


def test_too_short_and_constant_series_have_none_and_segments_keep_their_minimum():
    assert locate_shifts(np.r_[np.zeros(SHIFT_MIN_SEGMENT), np.ones(SHIFT_MIN_SEGMENT - 1)]) == ()
    assert locate_shifts(np.full(50, 3.0)) == ()
    found = locate_shifts(np.r_[np.zeros(30), np.full(30, 10.0)] + np.random.default_rng(7).normal(0, 1, 60))
    bounds = (0, *found, 60)
    assert found and min(np.diff(bounds)) >= SHIFT_MIN_SEGMENT


@pytest.mark.parametrize(("arguments", "message"), [
    ({"means": [[1.0, 2.0]]}, "`means`"), ({"means": [1.0, np.inf]}, "`means`"),
    ({"means": [1.0], "min_segment": 0}, "`min_segment`"), ({"means": [1.0], "penalty": -1.0}, "`penalty`"),
])
def test_bad_input_names_the_parameter(arguments, message):
    with pytest.raises(ValueError, match=message):
        locate_shifts(**arguments)
