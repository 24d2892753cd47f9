"""Nights that land in one of two far-apart modes, put on one scale before a shift is looked for (spec §8).

Some series alternate between two levels far apart from night to night: a benchmark that sometimes takes a slow
path, a runner type twice as fast as the others. Where the share of nights in each mode drifts (a stretch of slow
nights, then of fast ones), a test on the night means reads the drift as shifts of the series: on Perfherder's
``runs5`` history (modes 38× apart, the slow one 20% to 60% of a month's nights), whose maintainers expect no
alert, the nightly detection opened three alerts and stored four change points. Dividing each mode by its own
level makes such a series flat, while a shift of the whole mixture (both modes move) stays a shift of the aligned
nights.

Two modes are taken as modes, not a step, only when they alternate: the nights switch between them often, and
each holds nights in both halves of the window. A step (the nights after it all in one mode) never qualifies,
whatever its size, nor does an odd night.
"""

from dataclasses import dataclass

import numpy as np

from ._base import check_positive_int

__all__ = ["AlignedModes", "align_modes"]

MODE_RATIO = 1.5
"""The least ratio between the nearest nights of two modes: far beyond a regression a mixture's shift is
looked for at, so nights never change mode by a shift of the series."""
MIN_SWITCHES = 4
"""The fewest changes of mode from one night to the next: two visits to the other mode and back."""
MIN_NIGHTS_PER_HALF = 2
"""The fewest nights of each mode in each half of the window."""
MIN_SHARE_PER_HALF = 0.0
"""The least share of each half's nights in each mode. On Perfherder's ``runs5`` the rarer mode held at least 15%
of each half of every 40-night window (13% of 30-night ones); a 2× step with two odd nights on each side of it
(4 of 20) would otherwise pass for two modes."""


@dataclass(frozen=True)
class AlignedModes:
    """Night means with the upper of two alternating modes put on the lower one's scale.

    Attributes
    ----------
    values : ndarray
        The means, the upper mode's nights multiplied by `factor` (the others as they were; NaN where absent).
    factor : ndarray
        Per series, the ratio of a lower-mode night to an upper-mode night beside it, the median over every change of
        mode (1 where no two modes were found).
    upper : ndarray of bool
        Per night, whether it was in the upper mode.
    """

    values: np.ndarray
    factor: np.ndarray
    upper: np.ndarray


def align_modes(means, *, context=None, ratio=MODE_RATIO, min_switches=MIN_SWITCHES, min_nights=MIN_NIGHTS_PER_HALF,
                min_share=MIN_SHARE_PER_HALF):
    """Put the upper of two alternating, far-apart modes of each series on the lower mode's scale.

    The nights of a series' `context` (positive means in time order; NaN where absent) are split at the widest gap
    between their sorted logarithms. The two sides are modes when that gap is at least ``log(ratio)``, the nights
    switch sides at least `min_switches` times from one present night to the next, and each side holds at least
    `min_nights` nights and a share `min_share` of the nights in each half of the context's present nights. Then
    every night of `means` above the gap is multiplied by the median, over the context's changes of mode, of the
    ratio of the lower night to the upper one beside it, so a change of the share of nights in each mode no longer
    moves the series, and a shift of both modes moves every aligned night.

    Parameters
    ----------
    means : array_like, shape (..., T)
        Night means, oldest first along the last axis; NaN where a series has no night.
    context : array_like, shape (..., S), optional
        The nights the modes are read from, per series (e.g. the nights of the segment before `means` too, so a
        short segment is aligned as the series is); `means` itself by default.
    ratio : float, optional
        The least ratio across the gap between the two modes (> 1).
    min_switches : int, optional
        The fewest changes of mode between consecutive present nights of the context.
    min_nights : int, optional
        The fewest nights of each mode in each half of the context's present nights.
    min_share : float, optional
        The least share of each half's present nights in each mode (in [0, 0.5]).

    Returns
    -------
    AlignedModes

    Notes
    -----
    A series whose context holds a non-positive mean, or fewer than ``4 * min_nights`` nights, is left as it is.
    Only two modes are aligned: a series of more far-apart modes is left as it is unless its widest gap parts two
    alternating groups. Comparing nights within a class of runs is how treeherder and Skia Perf keep platforms
    apart; here the class is read off the values, since an upload rarely names it.
    """
    ratio = float(ratio)
    if not ratio > 1.0:
        raise ValueError(f"`ratio` must be greater than 1 (the least ratio across the gap); got {ratio}.")
    min_switches = check_positive_int(min_switches, "min_switches")
    min_nights = check_positive_int(min_nights, "min_nights")
    min_share = float(min_share)
    if not 0.0 <= min_share <= 0.5:
        raise ValueError(f"`min_share` must be between 0 and 0.5 (a share of each half's nights); got {min_share}.")
    means = np.asarray(means, dtype=float)
    if means.ndim == 0:
        raise ValueError("`means` must hold at least one axis of nights.")
    context = means if context is None else np.asarray(context, dtype=float)
    if context.ndim == 0 or context.shape[:-1] != means.shape[:-1]:
        raise ValueError(f"`context` must hold one row of nights per series of `means` (shape {means.shape[:-1]} "
                         f"before the last axis); got shape {context.shape}.")
    shape = means.shape
    rows = means.reshape(-1, shape[-1])
    modes, cut, factor = _modes(context.reshape(-1, context.shape[-1]), ratio, min_switches, min_nights, min_share)
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = modes[:, None] & (rows > 0) & (np.log(np.where(rows > 0, rows, 1.0)) > cut[:, None])
    values = np.where(upper, rows * factor[:, None], rows)
    return AlignedModes(values=values.reshape(shape), factor=factor.reshape(shape[:-1]), upper=upper.reshape(shape))


def _modes(rows, ratio, min_switches, min_nights, min_share):
    """Per row of nights: whether it holds two alternating modes, the logarithm the gap between them is cut at,
    and the factor that puts the upper on the lower's scale (1 where no modes)."""
    present = ~np.isnan(rows)
    counts = present.sum(axis=1)
    positive = present & (rows > 0)
    logs = np.where(positive, np.log(np.where(positive, rows, 1.0)), np.nan)
    usable = (counts >= 4 * min_nights) & ~(present & ~positive).any(axis=1)

    # The widest gap between sorted logarithms (NaN sort last; gaps past a row's last night are not gaps).
    pick = np.arange(len(rows))
    ordered = np.sort(logs, axis=1)
    if rows.shape[1] < 2:
        return np.zeros(len(rows), dtype=bool), np.full(len(rows), np.inf), np.ones(len(rows))
    gaps = np.diff(ordered, axis=1)
    gaps = np.where(np.arange(gaps.shape[1]) < (counts - 1)[:, None], gaps, -np.inf)
    widest = np.argmax(gaps, axis=1)
    cut = (ordered[pick, widest] + ordered[pick, widest + 1]) / 2.0
    candidate = usable & (gaps[pick, widest] >= np.log(ratio))
    with np.errstate(invalid="ignore"):
        upper = present & candidate[:, None] & (logs > cut[:, None])

    # Changes of mode between consecutive present nights: each present night against the last present before it.
    columns = np.arange(rows.shape[1])
    last_present = np.maximum.accumulate(np.where(present, columns, -1), axis=1)
    before = np.concatenate([np.full((len(rows), 1), -1), last_present[:, :-1]], axis=1)
    previous_upper = np.take_along_axis(upper, np.maximum(before, 0), axis=1)
    switched = present & (before >= 0) & (upper != previous_upper)
    switches = switched.sum(axis=1)

    # Nights of each mode in each half of the present nights.
    order = np.cumsum(present, axis=1)
    first_half = present & (order <= (counts // 2)[:, None])
    halves = (first_half, present & ~first_half)
    each_half = np.stack([(upper & half).sum(axis=1) for half in halves]
                         + [(~upper & half).sum(axis=1) for half in halves])
    least = np.maximum(min_nights, min_share * np.stack([half.sum(axis=1) for half in halves] * 2))
    modes = candidate & (switches >= min_switches) & (each_half >= least).all(axis=0)

    # The gap between the modes, from each change of mode: the upper night's logarithm less the lower's, of two
    # consecutive nights. Medians of each mode's nights would be biased by a shift of the series that the share of
    # nights in each mode differs across; two consecutive nights straddle a shift at most once.
    factor = np.ones(len(rows))
    if modes.any():
        previous_log = np.take_along_axis(logs, np.maximum(before, 0), axis=1)
        across = np.where(switched, np.where(upper, logs - previous_log, previous_log - logs), np.nan)
        factor[modes] = np.exp(-np.nanmedian(across[modes], axis=1))
    return modes, np.where(modes, cut, np.inf), factor
