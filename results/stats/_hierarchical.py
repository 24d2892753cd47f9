"""Hierarchical (multi-level) experiments after Kalibera & Jones (spec §6).

Kalibera & Jones, "Quantifying Performance Changes with Effect Size Confidence
Intervals" (2012), model a measurement as the sum of independent random effects,
one per level of the experiment: level 1 = measurements (iterations) within an
execution, level 2 = executions within a build, level 3 = builds, and so on.
Data are balanced arrays whose axis 0 is the *top* level and whose last axis
holds the measurements of one execution.
"""

from dataclasses import dataclass, field

import numpy as np

from ._base import (
    StatisticsError,
    as_array,
    as_hierarchy,
    check_confidence,
)
from ._distributions import t_quantile
from ._subsessions import mean_interval

__all__ = [
    "RepetitionPlan",
    "VarianceComponents",
    "plan_repetitions",
    "predicted_half_width",
    "variance_components",
]


@dataclass(frozen=True)
class VarianceComponents:
    """Variance estimates per level of a balanced hierarchical experiment (spec §6).

    All per-level arrays are ordered bottom-up: index 0 is level 1 (measurements).

    Attributes
    ----------
    mean : float
        The grand mean.
    counts : tuple of int
        Repetitions per level, ``(n_1, ..., n_top)``.
    biased : ndarray
        S_i², the biased estimators (K&J §6.1).
    unbiased : ndarray
        T_i², the unbiased variance components: ``T_1² = S_1²``,
        ``T_i² = S_i² - S_{i-1}² / n_{i-1}``.
    droppable : tuple of int
        Levels (1-based) with ``T_i² <= 0``: they add no variation and may be
        merged into the level below.
    """

    mean: float
    counts: tuple
    biased: np.ndarray = field(compare=False)
    unbiased: np.ndarray = field(compare=False)
    droppable: tuple

    def confidence_interval(self, confidence=0.95):
        """CI of the grand mean, ``Ȳ ± t_{(1+c)/2, n_top-1} sqrt(S_top² / n_top)`` (K&J §6.2)."""
        return mean_interval(self.mean, self.biased[-1], self.counts[-1], confidence=confidence)


def variance_components(data):
    """Biased and unbiased variance estimators per level (K&J §6.1; spec §6).

    Parameters
    ----------
    data : array_like
        Balanced measurements, axis 0 = top level (e.g. builds), last axis =
        measurements within one execution; at least 2 repetitions at every
        level. 1-D data is a single level.

    Returns
    -------
    VarianceComponents

    Notes
    -----
    ``S_1²`` is the mean within-execution variance (ddof=1); ``S_i²`` is the
    mean, over the level-(i+1) units, of the variance (ddof=1) of their level-i
    unit means; ``S_top²`` is the variance of the top-level unit means.
    ``E[S_i²] = T_i² + T_{i-1}²/n_{i-1} + ...``, hence the unbiased recursion.
    """
    data = as_hierarchy(data)
    levels = data.ndim
    counts = tuple(reversed(data.shape))
    biased = np.empty(levels)
    means = data
    for level in range(levels):
        biased[level] = means.var(axis=-1, ddof=1).mean()
        means = means.mean(axis=-1)
    unbiased = biased.copy()
    unbiased[1:] -= biased[:-1] / np.asarray(counts[:-1])
    droppable = tuple(int(level) + 1 for level in np.flatnonzero(unbiased <= 0.0))
    return VarianceComponents(
        mean=float(data.mean()),
        counts=counts,
        biased=biased,
        unbiased=unbiased,
        droppable=droppable,
    )


def predicted_half_width(variances, counts, *, confidence=0.95):
    """CI half-width a design is expected to give (K&J §7.4; spec §6).

    ``t_{(1+c)/2, N-1} * sqrt(Var(Ȳ))`` with ``Var(Ȳ) = sum_i T_i² / prod_{j>=i} n_j``,
    where N is the number of units at the highest level with ``T_i² > 0``
    (the top level, unless it adds no variation).

    Parameters
    ----------
    variances : array_like
        Variance components ``T_1², ..., T_top²`` (bottom-up). Values ``<= 0``
        count as zero. Pass relative components (T_i² / mean²) for a relative
        half-width.
    counts : array_like of int
        Repetitions per level ``n_1, ..., n_top`` (bottom-up), each ``>= 1``.
    confidence : float, optional
        Confidence level c in (0, 1).

    Returns
    -------
    float
    """
    confidence = check_confidence(confidence)
    variances = _as_levels(variances, "variances")
    counts = np.asarray(counts)
    if counts.shape != variances.shape or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError("`counts` must hold one whole number per level of `variances`.")
    if np.any(counts < 1):
        raise ValueError("`counts` must be at least 1 at every level.")
    components = np.clip(variances, 0.0, None)
    totals = np.cumprod(counts[::-1])[::-1]
    active = np.flatnonzero(components > 0.0)
    if active.size == 0:
        return 0.0
    units = int(totals[active[-1]])
    if units < 2:
        raise StatisticsError(
            "The design has a single unit at the highest varying level; at least 2 are needed for an interval."
        )
    quantile = t_quantile((1.0 + confidence) / 2.0, units - 1)
    return float(quantile * np.sqrt(np.sum(components / totals)))


@dataclass(frozen=True)
class RepetitionPlan:
    """Optimal repetition counts for a time budget (result of :func:`plan_repetitions`).

    Attributes
    ----------
    counts : tuple of int
        ``(n_1, ..., n_top)``, bottom-up: measurements per execution,
        executions per build, ..., number of top-level units.
    cost : float
        Total cost of the plan, in the unit of `budget`.
    half_width : float
        Predicted CI half-width of the grand mean, in the unit of
        ``sqrt(variances)`` (relative if the variances were relative).
    droppable : tuple of int
        Levels (1-based) with ``T_i² <= 0``, merged into the level below:
        they are repeated once per unit of the level above.
    confidence_level : float
    """

    counts: tuple
    cost: float
    half_width: float
    droppable: tuple
    confidence_level: float


def plan_repetitions(variances, costs, *, budget, confidence=0.95):
    """Repetition counts per level that minimize the CI width for a budget (K&J §6.1, §7.5).

    Parameters
    ----------
    variances : array_like
        Variance components ``T_1², ..., T_top²`` bottom-up (see
        :func:`variance_components`); relative ones give a relative half-width.
    costs : array_like
        ``costs[0]`` is the cost of one measurement; ``costs[i]`` (i ≥ 1) the
        fixed cost of one new unit at level i+1 (warm-up of an execution,
        building a binary, ...), all in the unit of `budget`. ``costs[0] > 0``,
        the others ``>= 0``.
    budget : float
        Total time available, ``> 0``.
    confidence : float, optional
        Confidence level of the predicted interval.

    Returns
    -------
    RepetitionPlan

    Raises
    ------
    StatisticsError
        If the budget cannot pay for two units of the highest varying level.

    Notes
    -----
    With costs in units of one measurement (``c_1 = 1``, ``c_i = costs[i-1] /
    costs[0]``), a design costs ``C = sum_i c_i P_i`` and gives
    ``Var(Ȳ) = sum_i T_i² / P_i``, with ``P_i = prod_{j>=i} n_j`` units at level
    i. By Cauchy–Schwarz, ``V·C >= (sum_i sqrt(c_i T_i²))²`` with equality when
    ``P_i ∝ sqrt(T_i² / c_i)``, so the optimum is

    ``n_i = P_i / P_{i+1} = sqrt(c_{i+1} T_i² / (c_i T_{i+1}²))``,

    rounded up; the top count is ``floor(budget / cost of one top unit)``.
    The spec (§6) writes ``⌈sqrt(c_{i+1} T_i² / T_{i+1}²)⌉``, which drops
    ``c_i``; that is only right for ``i = 1``. The exact form reproduces
    K&J's check: FFT with variations 4.1%/6.7%/4.6%, 19 warm-up measurements of
    0.25 s, 20-minute builds and 6 hours give 3 measurements, 26 executions,
    16 builds and a half-width of 2.3% (their §8.5 and Table 8.5).

    A level with ``T_i² <= 0`` is repeated once (``n_i = 1``) and its cost joins
    the fixed cost of the level above; the optimum is taken over the remaining
    levels. If the top level adds no variation, a single top unit is planned
    and the budget goes to the highest level that varies.
    """
    confidence = check_confidence(confidence)
    variances = _as_levels(variances, "variances")
    costs = _as_levels(costs, "costs")
    if costs.shape != variances.shape:
        raise ValueError("`costs` must hold one cost per level of `variances`.")
    if costs[0] <= 0.0 or np.any(costs[1:] < 0.0):
        raise ValueError("`costs` must be positive for a measurement and non-negative above it.")
    budget = as_array(budget, "budget", minimum=0.0, inclusive=False)
    if budget.ndim != 0:
        raise ValueError("`budget` must be a single number.")
    budget = float(budget)

    droppable = tuple(int(level) + 1 for level in np.flatnonzero(variances <= 0.0))
    active = np.flatnonzero(variances > 0.0)
    counts = np.ones(variances.size, dtype=np.int64)
    if active.size:
        # A dropped level is repeated once, so its cost joins the next active level above it.
        top = int(active[-1])
        merged = np.add.reduceat(costs[: top + 1], np.concatenate(([0], active[:-1] + 1)))
        lower, upper = active[:-1], active[1:]
        ratio = merged[1:] * variances[lower] / (merged[:-1] * variances[upper])
        counts[lower] = np.maximum(1, np.ceil(np.sqrt(ratio))).astype(np.int64)
        # Levels above the highest varying one are single units, paid for once.
        overhead = costs[top + 1:].sum()
        counts[top] = max(0.0, (budget - overhead) // _unit_cost(costs, counts, top))
        if counts[top] < 2:
            raise StatisticsError(
                f"`budget` pays for {counts[top]} unit(s) at level {top + 1}, the highest level that varies; "
                "at least 2 are needed for an interval."
            )
    cost = _unit_cost(costs, counts, variances.size - 1) * counts[-1]
    if cost > budget:
        raise StatisticsError(f"`budget` {budget} does not pay for a single measurement plan costing {cost}.")
    return RepetitionPlan(
        counts=tuple(int(c) for c in counts),
        cost=float(cost),
        half_width=predicted_half_width(variances, counts, confidence=confidence) if active.size else 0.0,
        droppable=droppable,
        confidence_level=confidence,
    )


def _unit_cost(costs, counts, level):
    """Cost of one unit at 0-based `level`: its fixed cost plus its sub-units' costs."""
    unit = costs[0]
    for below in range(1, level + 1):
        unit = costs[below] + counts[below - 1] * unit
    return unit


def _as_levels(values, name):
    array = as_array(values, name)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D sequence, one value per level (bottom-up).")
    return array
