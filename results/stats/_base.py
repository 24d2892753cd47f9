"""Shared validation helpers, result pieces and domain exceptions for ``results.stats``.

Every public function validates first, with a message that names the offending
parameter, then computes. Invalid input raises :class:`ValueError`; a
statistically meaningful "cannot answer (yet)" raises a :class:`StatisticsError`
subclass (itself a :class:`ValueError`), so callers can tell "more data needed"
apart from a programming error.
"""

import operator
from typing import NamedTuple

import numpy as np

__all__ = [
    "ConfidenceInterval",
    "NotEnoughSamples",
    "StatisticsError",
    "as_array",
    "as_counts",
    "as_hierarchy",
    "as_sample",
    "check_confidence",
    "check_positive_int",
    "scalar_or_array",
]


class StatisticsError(ValueError):
    """A statistical quantity cannot be computed from the given data."""


class NotEnoughSamples(StatisticsError):
    """More samples are needed before the quantity is valid.

    Attributes
    ----------
    needed : int
        How many further samples are needed (at least 1).
    """

    def __init__(self, message, *, needed):
        super().__init__(message)
        self.needed = int(needed)


class ConfidenceInterval(NamedTuple):
    """Lower and upper confidence limits (as returned by ``confidence_interval()``)."""

    low: float
    high: float


def as_sample(x, name="x", *, min_size=1):
    """Return `x` as a 1-D float64 array of finite values.

    Parameters
    ----------
    x : array_like
        The samples.
    name : str
        The parameter name used in error messages.
    min_size : int
        The smallest accepted number of samples.

    Raises
    ------
    ValueError
        If `x` is not numeric, not 1-D, shorter than `min_size`, or holds NaN or
        infinite values.
    """
    array = _as_float_array(x, name)
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional; got {array.ndim} dimensions.")
    if array.size < min_size:
        raise ValueError(
            f"`{name}` must hold at least {min_size} sample{'s' if min_size != 1 else ''}; "
            f"got {array.size}."
        )
    _check_finite(array, name)
    return array


def as_hierarchy(data, name="data"):
    """Return balanced hierarchical data as a float64 array with every axis at least 2 long.

    Axis 0 is the top level (e.g. builds); the last axis holds the measurements
    of one bottom-level unit (level 1 of Kalibera & Jones). Nested lists must be
    balanced: every unit of a level has the same number of sub-units.
    """
    array = _as_float_array(data, name, balanced=True)
    if array.ndim == 0:
        raise ValueError(f"`{name}` must have at least one dimension; got a scalar.")
    if min(array.shape) < 2:
        raise ValueError(
            f"`{name}` needs at least 2 repetitions at every level; got shape {array.shape}."
        )
    _check_finite(array, name)
    return array


def as_array(x, name, *, minimum=None, inclusive=True):
    """Return `x` as a finite float64 array (any shape), optionally bounded below."""
    array = _as_float_array(x, name)
    _check_finite(array, name)
    if minimum is not None:
        bad = array < minimum if inclusive else array <= minimum
        if np.any(bad):
            relation = "at least" if inclusive else "greater than"
            raise ValueError(f"`{name}` must be {relation} {minimum}.")
    return array


def as_counts(n, name, *, minimum=2):
    """Return `n` as an int64 array of whole numbers no smaller than `minimum`."""
    array = np.asarray(n)
    whole = np.issubdtype(array.dtype, np.integer) or (
        np.issubdtype(array.dtype, np.floating)
        and np.all(np.isfinite(array))
        and np.all(array == np.floor(array))
    )
    if array.dtype == bool or not whole:
        raise ValueError(f"`{name}` must be a whole number (or an array of whole numbers).")
    if np.any(array < minimum):
        raise ValueError(f"`{name}` must be at least {minimum}.")
    return array.astype(np.int64)


def check_confidence(confidence, name="confidence"):
    """Return `confidence` as a float, checking it lies strictly between 0 and 1."""
    try:
        value = float(confidence)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a number strictly between 0 and 1.") from None
    if not 0.0 < value < 1.0:
        raise ValueError(f"`{name}` must be strictly between 0 and 1; got {confidence}.")
    return value


def as_confidence(confidence, name="confidence"):
    """`confidence` as a float, or as an array of levels, one per series, that broadcasts with them;
    every level strictly between 0 and 1."""
    if np.ndim(confidence) == 0:
        return check_confidence(confidence, name)
    try:
        levels = np.asarray(confidence, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be numbers strictly between 0 and 1.") from None
    outside = ~((levels > 0.0) & (levels < 1.0))
    if outside.any():
        raise ValueError(f"`{name}` must be strictly between 0 and 1; got {levels[outside][0]}.")
    return levels


def check_positive_int(value, name, *, minimum=1):
    """Return `value` as an int, checking it is an integer not below `minimum`."""
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"`{name}` must be an integer; got {value!r}.") from None
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}; got {value}.")
    return value


def scalar_or_array(value):
    """Unwrap a 0-d array into a Python float so scalar calls return scalars."""
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array


def _as_float_array(x, name, *, balanced=False):
    try:
        return np.asarray(x, dtype=np.float64)
    except ValueError as error:
        # numpy 2 reports ragged nested lists as an "inhomogeneous shape".
        if balanced and "inhomogeneous" in str(error):
            raise ValueError(
                f"`{name}` must be balanced: every unit of a level needs the same number of sub-units."
            ) from None
        if "inhomogeneous" in str(error):
            raise ValueError(f"`{name}` must be a rectangular array of numbers.") from None
        raise ValueError(f"`{name}` must be numeric.") from None
    except TypeError:
        raise ValueError(f"`{name}` must be numeric.") from None


def _check_finite(array, name):
    if not np.all(np.isfinite(array)):
        raise ValueError(f"`{name}` must not contain NaN or infinite values.")
