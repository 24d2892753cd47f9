"""One result's statistics from its raw samples, the Pilot way (spec §2, §6)."""

import math
from dataclasses import dataclass

import numpy as np

from ._base import NotEnoughSamples, as_array, check_positive_int
from ._subsessions import MAX_AUTOCORRELATION, MIN_SUBSESSIONS, autocorrelation, subsessions

__all__ = ["SampleSummary", "summarize_samples"]


@dataclass(frozen=True)
class SampleSummary:
    """The statistics a result is stored as (spec §2, §6).

    Attributes
    ----------
    mean : float
        Mean of the independent units.
    subsession_size : int
        q, readings per unit (for levelled samples, the readings under one top-level unit).
    variance : float
        Variance (ddof=1) of the unit means; 0.0 with a single unit.
    n : int
        Number of units.
    sample_count : int
        Number of readings behind the summary.
    autocorrelation : float
        Lag-1 autocorrelation of the unit means; NaN with fewer than three units or when not computed.
    independent : bool
        Whether the units may be treated as independent: False when no subsession size qualified and the
        readings themselves were kept as units, so no interval built on them is to be trusted.
    """

    mean: float
    subsession_size: int
    variance: float
    n: int
    sample_count: int
    autocorrelation: float
    independent: bool


def summarize_samples(samples, *, max_autocorrelation=MAX_AUTOCORRELATION, min_subsessions=MIN_SUBSESSIONS):
    """Summarise raw samples as independent units (spec §2, §6).

    One-level samples go through subsession analysis (:func:`subsessions`). When no subsession size
    qualifies, the readings are kept as units but marked not independent. Samples with levels (an array of
    two or more dimensions, the first the top level, e.g. process runs) take the top-level means as the units
    (Kalibera & Jones §6.2).

    Parameters
    ----------
    samples : array_like
        Finite readings, 1-D in time order, or N-D with levels.
    max_autocorrelation : float, optional
        Largest acceptable lag-1 autocorrelation of subsession means (spec §2).
    min_subsessions : int, optional
        Fewest subsessions a size may leave (spec §2).

    Returns
    -------
    SampleSummary
    """
    samples = np.asarray(samples, dtype=float)
    if samples.size == 0:
        raise ValueError("`samples` must not be empty.")
    if not np.isfinite(samples).all():
        raise ValueError("`samples` must not contain NaN or infinite values.")
    max_autocorrelation = float(as_array(max_autocorrelation, "max_autocorrelation", minimum=0.0))
    if max_autocorrelation >= 1.0:
        raise ValueError("`max_autocorrelation` must be a number in [0, 1).")
    min_subsessions = check_positive_int(min_subsessions, "min_subsessions", minimum=3)
    if samples.ndim == 1:
        try:
            analysis = subsessions(samples, max_autocorrelation=max_autocorrelation, min_subsessions=min_subsessions)
        except NotEnoughSamples:
            means, subsession_size, independent = samples, 1, False
        else:
            means, subsession_size, independent = analysis.means, analysis.subsession_size, True
    else:
        means = samples.reshape(samples.shape[0], -1).mean(axis=1)
        subsession_size, independent = int(np.prod(samples.shape[1:])), True
    n = means.size
    return SampleSummary(
        mean=float(np.mean(means)), subsession_size=subsession_size,
        variance=float(np.var(means, ddof=1)) if n > 1 else 0.0, n=n, sample_count=samples.size,
        autocorrelation=float(autocorrelation(means)) if n > 2 else math.nan, independent=independent,
    )
