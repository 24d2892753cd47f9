"""The stable phase of a series: its dominant segment between change points (spec §4).

Pilot (Li et al., §III-A) runs E-Divisive with Medians (:mod:`results.stats._edm`) on unit
readings and keeps the *stable phase*: the longest segment, provided it holds more than half of
the samples.
"""

import itertools
from dataclasses import dataclass, field

import numpy as np

from ._base import StatisticsError, as_sample, check_positive_int
from ._edm import DEFAULT_EXACT_LIMIT, edm
from ._transient import mser_truncation

__all__ = ["StablePhaseResult", "stable_phase"]


@dataclass(frozen=True)
class StablePhaseResult:
    """The stable phase chosen by :func:`stable_phase`.

    Attributes
    ----------
    dominant : bool
        True when the longest segment holds more than half of the samples.
        When False there is no stable phase: `start` and `stop` are None and
        `segment` and `values` raise :class:`StatisticsError`.
    start, stop : int or None
        Bounds of the stable phase, ``x[start:stop]``.
    longest : tuple of int
        ``(start, stop)`` of the longest segment (the earliest on ties),
        reported even when it is not dominant.
    reason : str
        Why there is no stable phase; empty when `dominant`.
    change_points : tuple of int
        The change points between the segments: those from :func:`edm`, less
        the `unconfirmed` ones.
    n : int
        Number of samples.
    truncated : int
        Samples removed from the start of the longest segment as an initial
        transient the change points missed (``mser_batch_size``); 0 otherwise.
    unconfirmed : tuple of int
        Change points from :func:`edm` dropped because EDM found no change
        point in their two adjacent segments alone (``confirm=True``).
    """

    dominant: bool
    start: int | None
    stop: int | None
    longest: tuple
    reason: str
    change_points: tuple
    n: int
    samples: np.ndarray = field(repr=False, compare=False)
    truncated: int = 0
    unconfirmed: tuple = ()

    @property
    def segment(self):
        """The stable phase as a :class:`slice` of the samples."""
        if not self.dominant:
            raise StatisticsError(self.reason)
        return slice(self.start, self.stop)

    @property
    def values(self):
        """The samples of the stable phase (read-only)."""
        return self.samples[self.segment]


def stable_phase(
    x,
    *,
    min_size=30,
    beta=None,
    degree=1,
    percent=None,
    rescale=True,
    exact_limit=DEFAULT_EXACT_LIMIT,
    mser_batch_size=None,
    confirm=False,
):
    """The stable phase of a series: its dominant segment between change points (spec §4).

    The change points come from :func:`edm` (all options are passed on). The
    stable phase is the longest segment, and only if it holds more than half of
    the samples; otherwise the result says "no dominant stable phase"
    (``dominant=False`` with a `reason`). This removes any number of warm-up
    segments at the start and cool-down segments at the end (Pilot §III-A).

    Parameters
    ----------
    x : array_like
        Samples in time order (1-D, finite), at least `min_size` of them.
    min_size, beta, degree, percent, rescale, exact_limit
        As for :func:`edm`.
    mser_batch_size : int, optional
        When given, an initial transient inside the dominant segment is then
        truncated by :func:`mser_truncation` with batches of this size (5 for
        MSER-5); `start` moves past it and `truncated` says by how much. The
        dominance decision is EDM's, made before truncating. None (the
        default) is spec §4 exactly.
    confirm : bool, optional
        When True, each change point is checked by running :func:`edm` (same
        options) on its two adjacent segments alone; one where EDM finds no
        change point is dropped and its segments merge, until every change
        point left is confirmed. False (the default) is spec §4 exactly.

    Returns
    -------
    StablePhaseResult

    Notes
    -----
    Pilot (``pilot_find_dominant_segment``) returns the first segment that is
    the longest so far and longer than ``n // 2``; at most one segment can be,
    so the rules agree. Pilot detects with ``percent=0.25, rescale=False``.

    EDM's default penalty has little power against a warm-up that shifts the
    readings by less than about two standard deviations: with 30% noise and
    +50% for the first 20% of 400 readings it finds no change point in about
    a quarter of such series. MSER then removes the warm-up in all but a few
    percent of them at the cost of a few readings of a stationary series
    (``tests/stats/test_transient.py``).

    EDM's statistic weighs the squared difference of adjacent medians by
    ``(t-p)(s-t)/(s-p)²``, largest for segments of equal length. A single
    step at τ < n/2 therefore gains from a second, spurious change point
    near 2τ, which makes the segment after the step as long as the one
    before it: a warm-up of 20% of the readings costs 40% of them, and
    when 2τ > n/2 no segment is dominant at all (97% of 120-reading series
    with +50% for the first 20% and 10% noise). On the two segments around
    such a point alone, EDM finds nothing; `confirm` drops it.
    """
    if mser_batch_size is not None:
        mser_batch_size = check_positive_int(mser_batch_size, "mser_batch_size")
    if not isinstance(confirm, bool):
        raise ValueError(f"`confirm` must be True or False; got {confirm!r}.")
    options = {
        "min_size": min_size,
        "beta": beta,
        "degree": degree,
        "percent": percent,
        "rescale": rescale,
        "exact_limit": exact_limit,
    }
    found = edm(x, **options)
    samples = np.array(as_sample(x, "x"))  # a private, read-only copy
    samples.flags.writeable = False
    change_points = found.change_points
    if confirm:
        change_points = _confirmed(samples, change_points, options)
    bounds = (0, *change_points, found.n)
    longest = max(itertools.pairwise(bounds), key=lambda segment: segment[1] - segment[0])
    dominant = longest[1] - longest[0] > found.n // 2
    reason = ""
    if not dominant:
        reason = (
            f"No dominant stable phase: the longest segment, [{longest[0]}, {longest[1]}), "
            f"holds {longest[1] - longest[0]} of {found.n} samples, not more than half."
        )
    truncated = 0
    if dominant and mser_batch_size is not None and longest[1] - longest[0] >= 2 * mser_batch_size:
        truncated = mser_truncation(samples[longest[0] : longest[1]], batch_size=mser_batch_size).truncation
    return StablePhaseResult(
        dominant=dominant,
        start=longest[0] + truncated if dominant else None,
        stop=longest[1] if dominant else None,
        longest=longest,
        reason=reason,
        change_points=change_points,
        n=found.n,
        samples=samples,
        truncated=truncated,
        unconfirmed=tuple(point for point in found.change_points if point not in change_points),
    )


def _confirmed(samples, change_points, options):
    """The change points that EDM finds again on their two adjacent segments alone, dropping the
    first unconfirmed one and re-checking the merged segments until none is left to drop."""
    points = list(change_points)
    while True:
        bounds = (0, *points, samples.size)
        for index in range(1, len(bounds) - 1):
            if not edm(samples[bounds[index - 1] : bounds[index + 1]], **options).change_points:
                del points[index - 1]
                break
        else:
            return tuple(points)
