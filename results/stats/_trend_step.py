"""A step against a trend: is a change point a jump of the level, or a stretch of a series that moves steadily?

A change-point scan splits a series into segments of constant level. A series that drifts (a cache warming over
weeks, data that grows, a trend or a slow cycle) has no constant level, and the scan reads its drift as a staircase
of steps, each "confirmed" by the segments either side of it. Whether a split is a step is a question of nested
linear models around it: a line, and the same line with a jump at the split. The jump's t test in the larger model
asks whether the split adds anything a trend does not explain; the slope's, whether there is a trend at all. This
is the regression with a level shift of Perron (1989, "The Great Crash, the Oil Price Shock, and the Unit Root
Hypothesis", Econometrica 57(6), model A), its jump tested as Chow (1960, "Tests of equality between sets of
coefficients in two linear regressions", Econometrica 28(3)) tests a break at a known point.
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._base import as_sample, check_positive_int

__all__ = ["DriftReading", "TrendStep", "read_drifts", "trend_step"]

FEWEST_EACH_SIDE = 2
"""Values needed on each side of the split for the jump and the slope to be told apart."""


@dataclass(frozen=True)
class TrendStep:
    """A line with a jump fitted around a split by :func:`trend_step`.

    Attributes
    ----------
    slope : float
        Relative change per step of the series (a night) along the line: ``exp(b) - 1``.
    slope_pvalue : float
        Two-sided p-value of the t test that the slope is zero, in the model with the jump.
    step : float
        The jump at the split, as a ratio: ``exp(c)``.
    step_pvalue : float
        Two-sided p-value of the t test that the jump is zero, in the model with the slope: the nested F test of
        the line against the line with a jump (its t statistic squared is that F).
    df : int
        Residual degrees of freedom, ``n - 3``.
    """

    slope: float
    slope_pvalue: float
    step: float
    step_pvalue: float
    df: int


def trend_step(x, split):
    """Fit ``log x = a + b·t + c·[t ≥ split]`` by least squares and test the slope b and the jump c.

    Parameters
    ----------
    x : array_like
        Positive values in time order (1-D, finite), e.g. the night means of a series around a change point.
    split : int
        Index of the first value after the change: ``x[split:]`` is the new segment. At least 2 values lie on
        each side and 4 in all, so the three coefficients leave a degree of freedom for the error.

    Returns
    -------
    TrendStep

    Raises
    ------
    ValueError
        If `x` is not 1-D, finite and positive, or `split` leaves fewer than 2 values on either side.

    Notes
    -----
    On the logarithm, so the slope and the jump are relative, as every change of the dashboard is a ratio. The
    t statistics use the residual variance of the model with both terms (ordinary least squares,
    ``σ² (XᵀX)⁻¹``); a perfect fit (residuals within rounding of 0) has p-value 0 for a coefficient that is not
    zero and 1 for one that is. Two assumptions make the p-values liberal in use: the values are taken as
    independent about the line (positively autocorrelated noise makes both tests reject too often: at lag-1
    autocorrelation 0.5 a 0.1% slope test rejects about as often as a 5% one), and the split is taken as known
    (where a scan chose it from the same values, the jump's test is the supremum over splits, Andrews 1993,
    and rejects too often: it leans towards a step).
    """
    values = as_sample(x, "x", min_size=2 * FEWEST_EACH_SIDE)
    if np.any(values <= 0):
        raise ValueError("`x` must be positive (the fit is on its logarithm).")
    split = check_positive_int(split, "split", minimum=FEWEST_EACH_SIDE)
    if values.size - split < FEWEST_EACH_SIDE:
        raise ValueError(f"`split` must leave at least {FEWEST_EACH_SIDE} values after it; "
                         f"got {split} of {values.size}.")
    y = np.log(values)
    t = np.arange(values.size, dtype=float) - split
    design = np.column_stack([np.ones(values.size), t, (t >= 0).astype(float)])
    coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ coefficients
    df = values.size - design.shape[1]
    # Rounding leaves a perfect fit's residuals, and its zero coefficients, near the values' resolution times their
    # number, not at 0 (measured: up to 8,000 eps · max|log x| on 1,000 geometric values).
    resolution = 16 * values.size * np.finfo(float).eps * max(1.0, float(np.abs(y).max()))
    if np.abs(residuals).max() <= resolution:
        # A perfect fit: a coefficient that is not zero is certain, one that is zero is no evidence.
        coefficients = np.where(np.abs(coefficients) > resolution, coefficients, 0.0)
        statistic = np.where(coefficients[1:] != 0, np.inf, 0.0)
    else:
        errors = np.sqrt(residuals @ residuals / df * np.diag(np.linalg.inv(design.T @ design)))[1:]
        statistic = np.abs(coefficients[1:]) / errors
    slope_pvalue, step_pvalue = 2 * stats.t.sf(statistic, df)
    return TrendStep(slope=float(np.expm1(coefficients[1])), slope_pvalue=float(slope_pvalue),
                     step=float(np.exp(coefficients[2])), step_pvalue=float(step_pvalue), df=df)


@dataclass(frozen=True)
class DriftReading:
    """The change points of a series read as steps or drifts by :func:`read_drifts`.

    Attributes
    ----------
    fits : tuple of TrendStep or None
        Per split, in the order given, the fit that decided it: a step's on its final window, a drift's on the
        window it was read as a drift in (a drift is not read again as its neighbours' windows widen); None where
        the split was not read (too few values on a side, or too few since it).
    drift : numpy.ndarray of bool
        Per split, whether it reads as a drift.
    """

    fits: tuple
    drift: np.ndarray


def read_drifts(x, splits, *, step_level, slope_level, nights=30, fewest_each_side=4, nights_since=10,
                through_drifts=True):
    """Read each split of a segmented series as a step or a drift, a drift being no boundary of a level.

    Each split is fitted by :func:`trend_step` on up to `nights` values on each side, bounded by its neighbouring
    splits, and reads as a drift where its jump is not significant (p above `step_level`) and its slope is (p below
    `slope_level`). A drift bounds no level, so the splits beside it are read again on the wider window it leaves
    them, until no more drifts are found (a steady trend read as a staircase by a scan has each step's window cut
    short by its neighbours, too short to show the slope).

    Parameters
    ----------
    x : array_like
        Positive values in time order (1-D, finite).
    splits : sequence of int
        Indices of the first value of each segment after the first, increasing, within ``(0, len(x))``.
    step_level, slope_level : float
        Levels of the jump's and the slope's tests, in (0, 1).
    nights : int, optional
        Values read on each side of a split at most.
    fewest_each_side : int, optional
        Values needed on each side of a split (up to the neighbouring boundaries) for it to be read at all; at
        least 2.
    nights_since : int, optional
        Values the series holds from a split on before it is read at all (a drift needs time to show its slope).
    through_drifts : bool, optional
        Whether a split read as a drift stops bounding its neighbours' windows (the default); False reads each split
        once, between its neighbours as given.

    Returns
    -------
    DriftReading
    """
    values = as_sample(x, "x")
    if np.any(values <= 0):
        raise ValueError("`x` must be positive (the fit is on its logarithm).")
    given = np.asarray(splits).reshape(-1)
    if given.size and not np.issubdtype(given.dtype, np.integer):
        raise ValueError(f"`splits` must be integers; got {given.dtype}.")
    at = given.astype(np.int64)
    if at.size and (np.any(np.diff(at) <= 0) or at[0] <= 0 or at[-1] >= values.size):
        raise ValueError(f"`splits` must be increasing indices within (0, {values.size}).")
    for name, level in (("step_level", step_level), ("slope_level", slope_level)):
        if not 0 < level < 1:
            raise ValueError(f"`{name}` must be strictly between 0 and 1; got {level}.")
    fewest_each_side = check_positive_int(fewest_each_side, "fewest_each_side", minimum=FEWEST_EACH_SIDE)
    nights = check_positive_int(nights, "nights", minimum=fewest_each_side)
    nights_since = check_positive_int(nights_since, "nights_since")
    drift = np.zeros(at.size, dtype=bool)
    fits: list[TrendStep | None] = [None] * at.size
    while True:
        steps = [0, *at[~drift].tolist(), values.size]
        found = False
        for index in np.flatnonzero(~drift):
            split = int(at[index])
            place = steps.index(split)
            left, right = max(steps[place - 1], split - nights), min(steps[place + 1], split + nights)
            if min(split - left, right - split) < fewest_each_side or values.size - split < nights_since:
                continue
            fit = fits[index] = trend_step(values[left:right], split - left)
            if fit.step_pvalue > step_level and fit.slope_pvalue < slope_level:
                drift[index] = found = True
        if not found or not through_drifts:
            return DriftReading(fits=tuple(fits), drift=drift)
