"""Shifts in a short series of run means, one per night: where a nightly history moved (spec §4, §8).

E-Divisive with Medians places the shifts (:func:`edm`, James, Kejariwal & Matteson 2014) on the means in
units of their night-to-night noise; each is then moved to the best split of its two segments by least
absolute deviations from their medians.
"""

import numpy as np

from ._base import as_array, check_positive_int
from ._changepoint import edm

__all__ = ["SHIFT_MIN_SEGMENT", "SHIFT_PENALTY", "locate_shifts"]

# Fewest runs in a segment. EDM's default of 30 suits thousands of unit readings of one session; a
# nightly history gains one point a day, and 30 would hide a shift for a month. Five nights (a working
# week) keep the median of a segment robust to one odd night, give the segment comparison at least
# 5 + 5 − 2 = 8 degrees of freedom, and report a shift five nights after it began. The history
# comparison of every single night (spec §8) covers the days before that.
SHIFT_MIN_SEGMENT = 5

# EDM's penalty β per change point, in units of the night-to-night noise variance: the means are divided
# by a robust noise scale first (see `_noise_scale`), so β means the same for every metric and unit. Under
# no change, splitting a segment of L runs in the middle scores about (π/2)/L·χ²₁ noise variances, largest
# for the shortest splittable segment (L = 2·SHIFT_MIN_SEGMENT: 0.16·χ²₁), while a real shift of δ noise
# standard deviations scores up to δ²/4. β = 1.5 sits above the largest null score of those short
# segments. Seeded simulation (200–400 series per cell, normal and Student-t(3) noise) of results.changepoints:
# series without a shift got a change point in 1–3.5% of 12–20-night series, 0.5% of 40-night ones and
# none of 80–500 nights; a 5σ step in the middle was placed within one night in 98–100% of 80–500-night
# series, a 3σ step in 85–98%. β = 2 halves the false alarms of short series but finds a 3σ step at 80
# nights only 61% of the time instead of 85%. Whatever β, about 6% of 30-night series with one step get a
# second change point inside the short segment after it (EDM scores a new change point against its left
# neighbour only), under 1% at 80 nights; its interval and p-value show it for what it is.
SHIFT_PENALTY = 1.5

# 1 / Φ⁻¹(3/4): turns a median absolute deviation into a normal standard deviation.
MAD_TO_SD = 1.482602218505602


def locate_shifts(means, *, min_segment=SHIFT_MIN_SEGMENT, penalty=SHIFT_PENALTY):
    """Where a series of run means shifted: the index of the first mean of every new segment (spec §8).

    EDM (:func:`edm`, BreakoutDetection's ``method="multi"``, degree 1) on the means divided by their
    night-to-night noise scale, then every change point moved to the best split of the two segments around
    it by least absolute deviations from their medians. EDM decides how many shifts there are and roughly
    where; its statistic, a squared difference of medians weighted by (t−p)(s−t)/(s−p)², is flat near the
    middle of a long segment, and in simulation it placed a 5σ step more than a night away in 20–30% of
    80–500-night series. The refinement, robust to a stray night like EDM, placed it within one night in
    98–100% (see `SHIFT_PENALTY`). A ramp is placed inside it, most often at its middle, where a step fits
    it best.

    Parameters
    ----------
    means : array_like
        The run means in time order (1-D, finite).
    min_segment : int, optional
        Fewest runs in a segment.
    penalty : float, optional
        EDM's penalty per change point, in units of the noise variance (``>= 0``).

    Returns
    -------
    tuple of int
        Increasing indices into `means`; empty for a series shorter than two segments or a constant one.
    """
    min_segment = check_positive_int(min_segment, "min_segment")
    penalty = float(as_array(penalty, "penalty", minimum=0.0))
    means = np.asarray(means, dtype=float)
    if means.ndim != 1 or not np.isfinite(means).all():
        raise ValueError("`means` must be a 1-D series of finite numbers.")
    if means.size < 2 * min_segment:
        return ()
    scale = _noise_scale(means)
    if scale == 0.0:
        return ()
    found = edm(means / scale, min_size=min_segment, beta=penalty, degree=1, rescale=False)
    return _refine(means, found.change_points, min_segment)


def _noise_scale(means: np.ndarray) -> float:
    """Standard deviation of the night-to-night noise, from the differences of consecutive run means.

    A shift adds one large difference, which the median ignores; a slow drift barely moves the differences.
    Readings so repeatable (or quantised) that most consecutive runs are equal have a zero median
    difference: their spread of differences is used instead. Zero only for a constant series.
    """
    steps = np.diff(means)
    scale = MAD_TO_SD * np.median(np.abs(steps)) / np.sqrt(2.0)
    if scale > 0.0:
        return float(scale)
    return float(np.sqrt(np.mean(steps**2) / 2.0))


def _refine(means: np.ndarray, change_points: tuple[int, ...], min_segment: int) -> tuple[int, ...]:
    """Move each change point, in turn, to the split between its neighbours that minimises the sum of absolute
    deviations of both segments from their medians; segments keep at least `min_segment` runs."""
    bounds = [0, *change_points, means.size]
    for i in range(1, len(bounds) - 1):
        start, stop = bounds[i - 1], bounds[i + 1]
        candidates = range(start + min_segment, stop - min_segment + 1)
        cost = [_absolute_deviation(means[start:split]) + _absolute_deviation(means[split:stop])
                for split in candidates]
        bounds[i] = candidates[int(np.argmin(cost))]  # the earliest on ties, as EDM
    return tuple(bounds[1:-1])


def _absolute_deviation(values: np.ndarray) -> float:
    return float(np.abs(values - np.median(values)).sum())
