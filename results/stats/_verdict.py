"""What the UI shows for a change: a verdict and a formatted percentage (spec §7)."""

import enum
import math

import numpy as np

from ._base import as_array

__all__ = ["Direction", "Verdict", "format_change", "verdict"]


class Verdict(enum.StrEnum):
    """Outcome of comparing a ratio interval with the practical-significance band."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no change"
    INCONCLUSIVE = "inconclusive"


class Direction(enum.StrEnum):
    """Which way a performance index improves."""

    LOWER_IS_BETTER = "lower_is_better"
    HIGHER_IS_BETTER = "higher_is_better"


def verdict(low, high, *, threshold=0.02, direction=Direction.LOWER_IS_BETTER):
    """Classify the ratio interval [low, high] of candidate / baseline (spec §7).

    For a lower-is-better index (e.g. seconds) and threshold θ:

    * regression: ``low > 1 + θ``;
    * improvement: ``high < 1 - θ``;
    * no change: ``1 - θ <= low`` and ``high <= 1 + θ``, only when θ > 0;
    * inconclusive otherwise: the interval straddles a band edge.

    Higher-is-better indices (e.g. MB/s) swap regression and improvement.

    Parameters
    ----------
    low, high : array_like
        Confidence limits of the ratio, ``low <= high``; ``-inf``/``+inf``
        (an unbounded interval) are allowed, NaN is not. Arrays broadcast.
    threshold : array_like, optional
        θ >= 0, the practical-significance threshold as a fraction (0.02 = 2%); broadcasts,
        so every series of a run may have its own.
    direction : {"lower_is_better", "higher_is_better"} or array_like of them, optional
        Broadcasts like `threshold`.

    Returns
    -------
    Verdict or ndarray of Verdict
        A single :class:`Verdict` for scalar limits, else an object array.
    """
    low = _as_limits(low, "low")
    high = _as_limits(high, "high")
    if np.any(low > high):
        raise ValueError("`low` must not exceed `high`.")
    threshold = as_array(threshold, "threshold", minimum=0.0)
    directions = np.asarray(direction, dtype=object)
    known = np.isin(directions, [member.value for member in Direction])
    if not np.all(known):
        wrong = directions if directions.ndim == 0 else directions[~known][0]
        raise ValueError(
            f"`direction` must be 'lower_is_better' or 'higher_is_better'; got {wrong!r}."
        )
    lower_is_better = directions == Direction.LOWER_IS_BETTER.value

    above = low > 1.0 + threshold
    below = high < 1.0 - threshold
    worse = np.where(lower_is_better, above, below)
    better = np.where(lower_is_better, below, above)
    # With θ = 0 the band is the single point 1: even a zero-width interval there is "inconclusive".
    inside = (threshold > 0.0) & (low >= 1.0 - threshold) & (high <= 1.0 + threshold)
    outcomes = np.array(
        [Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.NO_CHANGE, Verdict.INCONCLUSIVE], dtype=object
    )
    result = outcomes[np.select([worse, better, inside], [0, 1, 2], 3)]
    return result


def format_change(ratio, low, high, *, digits=1):
    """Format a ratio and its interval as a percentage change, e.g. ``"+5.5% [+3.0%, +8.0%]"``.

    An unbounded interval (infinite limits, or None as stored for one) is shown as
    ``"[unbounded]"``. Plain floats skip array validation: pages format hundreds of these.
    """
    if not all(isinstance(value, float | int | None) for value in (ratio, low, high)):
        ratio = float(as_array(ratio, "ratio"))
        low, high = float(_as_limits(low, "low")), float(_as_limits(high, "high"))
    if ratio is None or not math.isfinite(ratio) or any(value is not None and math.isnan(value)
                                                        for value in (low, high)):
        raise ValueError("`ratio`, `low` and `high` must be numbers, not NaN (None: unbounded limit).")
    change = f"{(ratio - 1.0) * 100:+.{digits}f}%"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return f"{change} [unbounded]"
    return f"{change} [{(low - 1.0) * 100:+.{digits}f}%, {(high - 1.0) * 100:+.{digits}f}%]"


def _as_limits(x, name):
    try:
        array = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be numeric.") from None
    if np.any(np.isnan(array)):
        raise ValueError(f"`{name}` must not contain NaN.")
    return array
