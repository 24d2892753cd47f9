"""Which earlier nights ran in the same machine environment as tonight, and what it did to each series (spec §8).

A machine's nightly run is many series measured together. Hosted CI runners are not one machine: a night lands on
one of several runner types (CPU models, hosts), and each type moves *all* of the run's series at once, each by
its own amount (one benchmark 20% faster, another 10%). Seen one series at a time this is noise with several
modes, far wider than the series' own (on 200 nights of django's asv runs: night-to-night sd 13% of the level
against 5% once the environment is removed), and a 10% step of one benchmark hides in it. Seen across the run it
is one fingerprint: the vector of every series' deviation from its own recent level. Nights whose fingerprints
match ran in the same environment; the series' deviations on those nights say what the environment does to each
of them, and that is removed before tonight is tested for a shift of its own.

Only an environment the machine has *left again*, within a few nights, is recognised: a night is a usable
neighbour only if its run of alike nights was short and ended. A new environment that stays (a runner image, a
compiler) is therefore never removed: it is a shift of the machine's series, detected and reported as one
(spec §8, machine-wide shifts), and once the series' levels follow it the fingerprints return to zero. A step of one
series moves one coordinate of the fingerprint and does not change which nights match, so it stays in that series'
adjusted values whole. Independent series (no shared environment) have fingerprints that match no night.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ._base import check_positive_int

__all__ = ["EnvironmentMatch", "environment_match", "environment_offsets", "level_deviations", "without_environment"]

STAND_OUT = 4.0
"""An environment is recognised only when tonight's fingerprint is at least this many times the machine's
night-to-night distance (the lower quartile of the distances between consecutive earlier nights: its ordinary
noise, whatever share of the nights other environments took). A smaller one cannot be told from noise, nor from
a change of level of some of the series (half of them stepping 5% at a night-to-night sd of 1.5% is a
fingerprint of about 3%, three times that quartile)."""



@dataclass(frozen=True)
class EnvironmentMatch:
    """Tonight's machine environment recognised among earlier nights, and what it moved each series by.

    Attributes
    ----------
    offsets : ndarray
        Per series (the columns of `deviations`), the natural logarithm of the factor by which the environment
        moved it tonight: the median of its deviations on the matching nights (the median over the series where
        it has none). Dividing tonight's value by ``exp(offset)`` removes it. Zeros where nothing matched.
    neighbours : tuple of int
        The rows of `past` that matched (nearest first); empty where nothing matched.
    move : float
        The median of tonight's deviations over the series that have one: how far the whole run moved.
    spread : float
        The median absolute deviation tonight (the fingerprint's size); NaN with too few series.
    """

    offsets: np.ndarray
    neighbours: tuple[int, ...]
    move: float
    spread: float

    @property
    def matched(self) -> bool:
        return bool(self.neighbours)


def environment_match(deviations, past, *, ratio=0.6, neighbours=5, min_neighbours=2, min_series=8, floor=0.02,
                      longest=8):
    """Recognise tonight's machine environment among earlier nights by the run's fingerprint (nearest neighbours).

    The fingerprint of a night is the vector of its series' deviations from their recent levels (log scale:
    ``log(value) − log(level)``). Its size is ``s = median_i |d_i|``; the distance between two nights is the
    median over the series both have of ``|d_i − d'_i|`` (a median, so that the series that stepped on either
    night do not decide it). An earlier night j matches tonight when its distance is below ``ratio · s`` and the
    machine left its environment afterwards: the run of consecutive nights whose distance from j is below
    ``ratio`` times j's own size, j among them, lasted at most `longest` nights and the night after it did not go
    on the same way (series drifting together grow on: each series the way night j moved it, the median of what
    the night after adds is positive). With at
    least `min_neighbours` such nights (the nearest `neighbours` used), each series' offset is the median of its
    deviations on them.

    The rule is a classification, not a test: on nights whose environment is new, nothing is removed and every
    series is compared as it is. Measured on django's asv runs (levels of 20 nights, the last 60 searched) with
    steps of +10% injected into 30 of 60 series at the nights of benchmarks/injected_steps.py: the night-to-night
    sd falls from 13% to 5% of the level while the step seen in the adjusted values over its first 7 nights keeps
    its size (median 9.9%, 10–90% 6.9–11.9%); a persistent 5% shift stays in the values: 4.1–4.3% of it seen over
    its first 7 nights when every series moves, 4.7–4.9% when a third do (at nights 70, 100 and 130). The leaving
    (2026-11-28): 20 of 40 simulated series slowed by 1% a night had 120 and 40 of their 300 nights divided out
    without it at 0.5% and 1.5% run-to-run noise, 0 and 20 with it (benchmarks/nightly_detection.py --scenario
    machine-drift --drift 0.01, seed 14); on django's 200 asv nights the same 96 of 185 nights are matched with
    and without it. What it costs: a runner type followed at once by one that moves every series further the
    same way (+10%, then +20%) is not left by the first (in 12 such cycles, 10 of the 20 nights matched, against
    all 20 without it), as series drifting together are not.

    Parameters
    ----------
    deviations : array_like, shape (S,)
        Tonight's deviation of each series from its recent level (log scale); NaN where a series has no level.
    past : array_like, shape (T, S)
        The earlier nights' deviations, oldest first, in the same columns; NaN where a series was not measured.
    ratio : float, optional
        How close a match must be, as a share of the fingerprint's size, in (0, 1).
    neighbours : int, optional
        The most matching nights used.
    min_neighbours : int, optional
        The fewest matching nights that recognise an environment (``<= neighbours``).
    min_series : int, optional
        The fewest series a fingerprint (and a distance) needs, at least 2.
    floor : float, optional
        Fingerprints no larger than this (log scale) are an ordinary night: nothing is removed.
    longest : int, optional
        The most consecutive nights an environment may have lasted to be recognised. A series' level follows a
        change after about half the nights it is the median of (10 of 20, :mod:`results.environment`), after
        which the fingerprint of a change of level fades just as that of an environment left does: without the
        bound, a second step of the same series (or a change of level that recurs) would look like an environment seen
        before.

    Returns
    -------
    EnvironmentMatch

    References
    ----------
    Kalibera, T. and Jones, R. "Rigorous Benchmarking in Reasonable Time", ISMM 2013, §8 (the run-to-run level and
    its causes). Spec §8, revised 2026-11-26 (machine-wide shifts; many modes on hosted runners).
    """
    tonight, earlier = _night_and_earlier(deviations, past, "deviations", "past")
    if np.isinf(tonight).any() or np.isinf(earlier).any():
        raise ValueError("`deviations` and `past` must be finite or NaN.")
    if not 0 < ratio < 1:
        raise ValueError(f"`ratio` must be in (0, 1); got {ratio}.")
    neighbours = check_positive_int(neighbours, "neighbours")
    min_neighbours = check_positive_int(min_neighbours, "min_neighbours")
    if min_neighbours > neighbours:
        raise ValueError(f"`min_neighbours` must be at most `neighbours` ({neighbours}); got {min_neighbours}.")
    min_series = check_positive_int(min_series, "min_series")
    longest = check_positive_int(longest, "longest")
    if min_series < 2:
        raise ValueError(f"`min_series` must be at least 2; got {min_series}.")
    if not floor >= 0:
        raise ValueError(f"`floor` must be non-negative; got {floor}.")

    present = ~np.isnan(tonight)
    nothing = EnvironmentMatch(offsets=np.zeros(tonight.size), neighbours=(), move=np.nan, spread=np.nan)
    if present.sum() < min_series:
        return nothing
    move = float(np.median(tonight[present]))
    spread = float(np.median(np.abs(tonight[present])))
    nothing = EnvironmentMatch(offsets=np.zeros(tonight.size), neighbours=(), move=move, spread=spread)
    if spread <= floor or earlier.shape[0] == 0:
        return nothing

    # The machine's ordinary night-to-night distance: the lower quartile over consecutive earlier nights.
    steps = _median_distances(earlier[1:], earlier[:-1], min_series)
    steps = steps[np.isfinite(steps)]
    noise = float(np.quantile(steps, 0.25)) if steps.size else np.inf
    if spread < STAND_OUT * noise:
        return nothing
    distance = _median_distances(earlier, tonight, min_series)
    close = np.flatnonzero(distance < ratio * spread)
    if close.size < min_neighbours:
        return nothing
    close = close[np.argsort(distance[close], kind="stable")]
    # A matching night is usable only if the machine left that environment afterwards, within `longest` nights:
    # a fingerprint that lasts longer is the series following a change of level, not an environment; and one that
    # ends by growing further (series that drift together) was never left.
    sizes = np.nanmedian(np.abs(earlier[close]), axis=1)
    usable = []
    for j, size in zip(close, sizes):
        alike = _median_distances(earlier, earlier[j], min_series) < ratio * size
        first = last = j
        while first > 0 and alike[first - 1]:
            first -= 1
        while last + 1 < alike.size and alike[last + 1]:
            last += 1
        if (last + 1 < alike.size and last - first + 1 <= longest
                and _left(earlier[last + 1], earlier[j], floor, min_series)):
            usable.append(int(j))
            if len(usable) == neighbours:
                break
    if len(usable) < min_neighbours:
        return nothing
    return EnvironmentMatch(offsets=environment_offsets(earlier[usable]), neighbours=tuple(usable), move=move,
                            spread=spread)


def level_deviations(values, history, *, min_nights=5):
    """Each series' deviation from its recent level, a coordinate of the night's fingerprint (log scale).

    ``log(value) − median(log(history))`` over the series' earlier nights that have a positive value, where it
    has at least `min_nights` of them; NaN elsewhere (and where tonight's value is not positive).

    Parameters
    ----------
    values : array_like, shape (S,)
        Tonight's value of each series.
    history : array_like, shape (T, S)
        The series' values on earlier nights with their environment divided out; NaN where not measured.
    min_nights : int, optional
        The fewest earlier nights a level is taken from.

    Returns
    -------
    ndarray, shape (S,)
    """
    tonight, earlier = _night_and_earlier(values, history, "values", "history")
    min_nights = check_positive_int(min_nights, "min_nights")
    with np.errstate(all="ignore"):
        logs = np.log(np.where(earlier > 0, earlier, np.nan))
        enough = (~np.isnan(logs)).sum(axis=0) >= min_nights
        levels = np.full(tonight.size, np.nan)
        levels[enough] = np.nanmedian(logs[:, enough], axis=0)
        return np.where(tonight > 0, np.log(np.where(tonight > 0, tonight, 1.0)), np.nan) - levels


def environment_offsets(matched):
    """What a recognised environment moved each series by: the median of its deviations on the matching nights.

    Parameters
    ----------
    matched : array_like, shape (k, S)
        The deviations (log scale) of the series on the k nights that matched; NaN where a series was not
        measured.

    Returns
    -------
    ndarray, shape (S,)
        Each series' median; a series measured on none of the nights gets the median of the others (the
        environment's typical move), and zeros where no series was measured.
    """
    seen = np.asarray(matched, dtype=float)
    if seen.ndim != 2:
        raise ValueError(f"`matched` must be two-dimensional (nights, series); got {seen.ndim} dimensions.")
    if np.isinf(seen).any():
        raise ValueError("`matched` must be finite or NaN.")
    counts = (~np.isnan(seen)).sum(axis=0)
    offsets = np.full(seen.shape[1], np.nan)
    measured = counts > 0
    offsets[measured] = np.nanmedian(seen[:, measured], axis=0)
    fallback = float(np.median(offsets[measured])) if measured.any() else 0.0
    return np.where(measured, offsets, fallback)


def _night_and_earlier(night, earlier, night_name: str, earlier_name: str) -> tuple[np.ndarray, np.ndarray]:
    """One night's values of S series and the earlier nights' (nights × S), as float arrays, checked."""
    tonight, past = np.asarray(night, dtype=float), np.asarray(earlier, dtype=float)
    if tonight.ndim != 1:
        raise ValueError(f"`{night_name}` must be one-dimensional; got {tonight.ndim} dimensions.")
    if past.ndim != 2 or past.shape[1] != tonight.size:
        raise ValueError(f"`{earlier_name}` must have shape (nights, {tonight.size}) to match `{night_name}`; "
                         f"got {past.shape}.")
    return tonight, past


def _left(after: np.ndarray, environment: np.ndarray, floor: float, min_series: int) -> bool:
    """Whether the night `after` a run of nights in an `environment` (both fingerprints) left it rather than went
    on the same way: over the series the environment moved by more than `floor`, each taken the way it moved,
    the median of what the night after adds is not positive. The night after a runner type is ordinary, or
    another type; the night after a few nights of series drifting together has drifted further the same way.
    Fewer than `min_series` such series: left (nothing tells a drift)."""
    with np.errstate(invalid="ignore"):
        moved = ~np.isnan(after) & (np.abs(environment) > floor)
    if moved.sum() < min_series:
        return True
    return bool(np.median((after[moved] - environment[moved]) * np.sign(environment[moved])) <= 0)


def _median_distances(rows: np.ndarray, target: np.ndarray, min_series: int) -> np.ndarray:
    """Median |row − target| over the columns both have, per row (`target` one row, or one per row); +inf where
    fewer than `min_series` do."""
    differences = np.abs(rows - target)
    shared = (~np.isnan(differences)).sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # rows with no shared column: inf below
        median = np.nanmedian(differences, axis=1)
    return np.where(shared >= min_series, median, np.inf)


def without_environment(offset):
    """The factor a night's values are multiplied by to divide its machine environment out.

    Parameters
    ----------
    offset : float or None
        The environment's offset of the series on that night, on the log scale (:func:`environment_offsets`);
        None or 0 where the night ran in no recognised environment.

    Returns
    -------
    float
        ``exp(-offset)``; 1 where there is no offset.
    """
    return math.exp(-offset) if offset else 1.0
