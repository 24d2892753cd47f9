"""Change points by E-Divisive with Medians (spec §4): the search.

EDM (James, Kejariwal & Matteson 2014, "Leveraging cloud data to mitigate user
experience from 'breaking bad'", reference implementation: the BreakoutDetection
R package) places change points by dynamic programming over the squared
difference of the medians of adjacent segments. What Pilot keeps between them (the
stable phase) is :mod:`results.stats._stable_phase`.
"""

import itertools
import numbers
from dataclasses import dataclass

import numpy as np

from ._base import NotEnoughSamples, as_sample, check_positive_int
from ._order_statistics import WaveletMatrix

__all__ = ["EDMResult", "edm"]

DEFAULT_BETA = 0.008  # BreakoutDetection's default for method="multi"
DEFAULT_EXACT_LIMIT = 2000  # candidate positions solved exactly by default; see edm's Notes

# Candidate change points are bounded in tiles of this many candidates.
_TILE = 128
# Blocks with at most this many (t, s) pairs are evaluated without bounds.
_DIRECT_PAIRS = 4096
# The long-series approximation refines the neighbourhoods of this many best cells of its coarse
# grid for every maximisation the answer rests on (see edm's Notes) ...
_REFINED_CELLS = 3
# ... and recomputes at most this many times (it stops earlier once no neighbourhood is new).
_MAX_REFINEMENTS = 8
# Relative slack added to every upper bound so that rounding can never prune a
# candidate that the exact recurrence would accept.
_BOUND_SLACK = 1e-9


@dataclass(frozen=True)
class EDMResult:
    """Change points found by :func:`edm`.

    Attributes
    ----------
    change_points : tuple of int
        Sorted 0-based indices at which a new segment starts (R's ``loc``).
    n : int
        Number of samples analysed.
    min_size : int
        Minimum segment length used.
    degree : int
        Penalty degree used (0, 1 or 2).
    beta : float or None
        Penalty of the ``"multi"`` variant, None for the percent variant.
    percent : float or None
        Required relative gain of the percent variant, None for ``"multi"``.
    rescaled : bool
        Whether the samples were rescaled to [0, 1] first.
    grid : int
        1 when the exact recurrence was solved; otherwise the spacing of the
        candidate grid of the long-series approximation (see :func:`edm`,
        Notes).
    """

    change_points: tuple
    n: int
    min_size: int
    degree: int
    beta: float | None
    percent: float | None
    rescaled: bool
    grid: int

    @property
    def exact(self):
        """Whether the change points solve the exact EDM recurrence."""
        return self.grid == 1

    @property
    def segments(self):
        """The ``(start, stop)`` bounds of every segment, in order."""
        bounds = (0, *self.change_points, self.n)
        return tuple(itertools.pairwise(bounds))


def edm(
    x, *, min_size=30, beta=None, degree=1, percent=None, rescale=True, exact_limit=DEFAULT_EXACT_LIMIT
):
    """Change points by E-Divisive with Medians (spec §4).

    The same dynamic program as BreakoutDetection's
    ``breakout(Z, min.size, method="multi", beta, degree)``: with ``F[s]`` the
    best statistic for the prefix ``x[:s]``,

        F[s] = max over t of  F[t] + (t-p)(s-t)/(s-p)² · (med x[p:t] - med x[t:s])² - β·G(k_t)

    where ``p`` is the previous change point chosen for the prefix ``x[:t]``,
    ``k_t`` the number of change points in that prefix and G the penalty
    (degree 0: 0, 1: 1, 2: 2k + 1). Every segment holds at least `min_size`
    samples; ties go to the earliest t.

    Parameters
    ----------
    x : array_like
        Samples in time order (1-D, finite), at least `min_size` of them.
    min_size : int, optional
        Minimum segment length, at least 2.
    beta : float, optional
        Penalty per change point of the default ("multi") variant, ``>= 0``;
        0.008 when omitted. It is compared with squared differences of
        medians, so it is scale dependent: see `rescale`.
    degree : {0, 1, 2}, optional
        Degree of the penalty G.
    percent : float, optional
        Use the percent variant (BreakoutDetection's ``EDM_percent``, which
        Pilot uses with ``min_size=30, percent=0.25, degree=1``) instead of a
        β penalty: statistics start at 0 and a new change point is kept only if
        it raises the statistic by at least ``percent · G(k)`` of its previous
        value. Cannot be combined with `beta`.
    rescale : bool, optional
        Rescale `x` to [0, 1] first, as R's ``breakout()`` does, so that
        `beta` means the same for any unit. A constant series then has no
        change points. The percent variant is invariant to rescaling (up to
        rounding); Pilot calls it on raw data, i.e. ``rescale=False``.
    exact_limit : int or None, optional
        Series with at most this many candidate positions
        (``n - 2*min_size + 1``) are solved exactly; longer ones by the
        grid approximation of the Notes, flagged by ``result.exact``, which
        usually but not always gives the exact answer. None always solves
        exactly (the time can grow as n² log n).

    Returns
    -------
    EDMResult

    Raises
    ------
    NotEnoughSamples
        If `x` holds fewer than `min_size` samples. Between `min_size` and
        ``2 * min_size - 1`` samples no change point is possible and the
        result is empty.

    Notes
    -----
    The recurrence needs the median of ``x[t:s]`` for every pair
    ``min_size <= t <= s - min_size``, Θ(n²) pairs; BreakoutDetection walks them
    all with balanced trees. Here medians of arbitrary windows come from a
    wavelet matrix over the ranks of `x` (O(log n) each, vectorised), and
    whole tiles of candidate t are skipped when an upper bound of their
    statistic cannot beat the best value already known for s. The bound uses
    order statistics of the window common to the tile (the median of a window
    that adds e samples to a core of the tile lies between the core's order
    statistics e/2 ranks either side of its median) and the largest
    normalisation factor over the tile, plus a relative slack of 1e-9 against
    rounding; rows of a surviving tile get the same bound from their own
    windows. The bar a bound must reach starts at the best score ``F[t] -
    β·G`` valid for s (the gain is never negative) and at the values of the
    previous ends' winners. For EDM_percent, a block of ends whose every
    possible winner shares one state (F, prev, number), as the ends of a
    rejected stretch do, and whose bounds all fail the percent test takes that
    state without evaluating its pairs. Skipping never changes the result:
    the output is the exact recurrence, tie rule included; only the running
    time depends on the data (near O(n log n) when few candidates compete,
    O(n² log n) at worst; about 8 s for the multi variant and a minute for
    the percent variant at n = 10⁵, ``benchmarks/edm_speed.py``).

    Longer series than `exact_limit` candidates are solved on a grid: first
    with change points restricted to every g-th candidate (``g = result.grid``,
    the smallest spacing leaving at most `exact_limit` of them), then,
    repeatedly, with every position added that lies within g of the winner
    of a maximisation the answer rests on (following the chain back from n,
    including, for EDM_percent, the end whose state a rejected end took) or
    of one of the 3 grid candidates with the largest statistic at that
    maximisation's end, until no position is new (at most 8 times). This
    usually reproduces the exact answer, but cannot promise it: EDM's
    balancing splits (see :func:`stable_phase`) and EDM_percent's short early
    segments sit on flat stretches, where the statistics of candidates a
    hundred samples apart differ by 10⁻⁵ or 10⁻⁶ (data in [0, 1]), and a
    state made at an end between two grid points can leave no trace at them.

    References
    ----------
    N. A. James, A. Kejariwal, D. S. Matteson, "Leveraging cloud data to
    mitigate user experience from 'breaking bad'", IEEE Big Data 2016
    (arXiv:1411.7955, 2014). twitter/BreakoutDetection, ``src/edm-multi.cpp``
    and ``src/edm-per.cpp``. Y. Li et al., "Pilot", §III-A.
    """
    min_size = check_positive_int(min_size, "min_size", minimum=2)
    if isinstance(degree, bool) or degree not in (0, 1, 2):
        raise ValueError(f"`degree` must be 0, 1 or 2; got {degree!r}.")
    if beta is not None and percent is not None:
        raise ValueError("Pass either `beta` (multi variant) or `percent` (percent variant), not both.")
    if percent is None:
        beta = _nonnegative(DEFAULT_BETA if beta is None else beta, "beta")
    else:
        percent = _nonnegative(percent, "percent")
    if not isinstance(rescale, bool):
        raise ValueError(f"`rescale` must be True or False; got {rescale!r}.")
    if exact_limit is not None:
        exact_limit = check_positive_int(exact_limit, "exact_limit")
    x = as_sample(x, "x")
    if x.size < min_size:
        raise NotEnoughSamples(
            f"`x` holds {x.size} samples; EDM needs at least `min_size` = {min_size}.",
            needed=min_size - x.size,
        )

    low, high = x.min(), x.max()
    change_points = ()
    grid = 1
    if not (rescale and low == high):
        z = (x - low) / (high - low) if rescale else x
        change_points, grid = _search(z, min_size, beta, percent, degree, exact_limit)
    return EDMResult(
        change_points=change_points,
        n=int(x.size),
        min_size=min_size,
        degree=degree,
        beta=beta,
        percent=percent,
        rescaled=rescale,
        grid=grid,
    )


def _search(z, min_size, beta, percent, degree, exact_limit):
    """Change points and the grid spacing (1: exact recurrence; see edm's Notes)."""
    n = z.size
    if n < 2 * min_size:
        return (), 1
    search = _EDMSearch(z, min_size, beta, percent, degree, WaveletMatrix(z))
    everywhere = np.arange(min_size, n - min_size + 1)
    if exact_limit is None or everywhere.size <= exact_limit:
        return search.change_points(everywhere), 1
    grid = -(-everywhere.size // exact_limit)
    coarse = everywhere[::grid]
    candidates = coarse
    found = search.change_points(candidates)
    for _ in range(_MAX_REFINEMENTS):
        refined = np.union1d(candidates, search.decisive_neighbourhood(coarse, grid))
        if refined.size == candidates.size:
            break
        candidates = refined
        found = search.change_points(candidates)
    return found, grid


def _nonnegative(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a number; got {value!r}.")
    value = float(value)
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"`{name}` must be finite and at least 0; got {value}.")
    return value


class _EDMSearch:
    """The EDM dynamic program over the prefixes ending at candidate positions.

    `candidates` are the positions allowed as change points (all of
    ``min_size .. n - min_size`` for the exact recurrence); F is computed at
    every candidate and at n.
    """

    def __init__(self, z, min_size, beta, percent, degree, tree):
        self.n = z.size
        self.m = min_size
        self.beta = beta
        self.percent = percent
        self.degree = degree
        self.initial = 0.0 if percent is not None else -3.0
        self.tree = tree

    def penalty(self, number):
        """G(k) of BreakoutDetection's helper.cpp for an array of change-point counts."""
        if self.degree == 0:
            return np.zeros(number.shape)
        if self.degree == 1:
            return np.ones(number.shape)
        return 2.0 * number + 1.0

    def change_points(self, candidates):
        n, m = self.n, self.m
        self.candidates = candidates
        self.F = np.full(n + 1, self.initial)
        self.prev = np.zeros(n + 1, dtype=np.int64)
        self.number = np.zeros(n + 1, dtype=np.int64)
        self.origin = np.zeros(n + 1, dtype=np.int64)  # the end whose maximisation set (F, prev, number)
        self.left_median = np.zeros(n + 1)
        self.score = np.zeros(n + 1)  # F[t] - β·G(number[t]): the part of the statistic fixed by t
        tiles = candidates.size // _TILE + 1
        self.tile_score = np.full(tiles, -np.inf)
        self.tile_median_low = np.full(tiles, np.inf)
        self.tile_median_high = np.full(tiles, -np.inf)
        self.tile_run_low = np.full(tiles, np.iinfo(np.int64).max)
        self.tile_run_high = np.zeros(tiles, dtype=np.int64)
        # Prefixes shorter than 2m hold no change point: those candidates are final at once.
        ends = np.append(candidates[candidates >= 2 * m], n)
        self.pending = candidates[candidates < 2 * m]
        block_start = 0
        while block_start < ends.size:
            # Every candidate t <= s - m of the ends s < ends[block_start] + m is already final.
            block_stop = np.searchsorted(ends, ends[block_start] + m)
            self.solve_block(ends[block_start:block_stop])
            self.pending = ends[block_start:block_stop]
            block_start = block_stop
        found = []
        at = n
        while at:
            if self.prev[at]:
                found.append(int(self.prev[at]))
            at = self.prev[at]
        return tuple(sorted(found))

    def decisive(self):
        """The (end, winner) maximisations the change points found last rest on, last first.

        Following the chain back from n: an end whose own winner EDM_percent rejected took the
        state made at an earlier end, its origin; that origin competed as a candidate at the end.
        """
        at = self.n
        while self.origin[at]:
            origin = int(self.origin[at])
            if origin != at:
                yield at, origin
            at = int(self.prev[origin])
            yield origin, at

    def decisive_neighbourhood(self, coarse, grid):
        """Positions within `grid` of every decisive winner and of the `_REFINED_CELLS` coarse
        candidates with the largest statistic at its end (values from the last search)."""
        centres = []
        for end, winner in self.decisive():
            t = coarse[coarse <= end - self.m]
            ends = np.full(t.size, end)
            value = self.statistic(t, ends, self.tree.median(t, ends)[0])
            centres.append(t[np.argsort(-value, kind="stable")[:_REFINED_CELLS]])
            centres.append([winner])
        if not centres:
            return np.empty(0, dtype=np.int64)
        near = (np.concatenate(centres)[:, None] + np.arange(-grid, grid + 1)).ravel()
        return near[(near >= self.m) & (near <= self.n - self.m)]

    def finalize(self, left_median):
        """Record what the pending candidates contribute, now that their F is final."""
        t = self.pending
        self.left_median[t] = left_median
        score = self.F[t]
        if self.percent is None:
            score = score - self.beta * self.penalty(self.number[t])
        self.score[t] = score
        tile = np.searchsorted(self.candidates, t) // _TILE
        run = t - self.prev[t]
        np.maximum.at(self.tile_score, tile, score)
        np.minimum.at(self.tile_median_low, tile, left_median)
        np.maximum.at(self.tile_median_high, tile, left_median)
        np.minimum.at(self.tile_run_low, tile, run)
        np.maximum.at(self.tile_run_high, tile, run)

    def solve_block(self, s):
        """Compute F, prev and number at the prefix ends `s` (all within m of each other)."""
        m = self.m
        count = np.searchsorted(self.candidates, s[-1] - m, side="right")
        first = np.searchsorted(self.candidates, m)
        pending_windows = (self.prev[self.pending], self.pending)
        if (count - first) * s.size <= _DIRECT_PAIRS:
            # Few pairs: evaluate them all, in the same pass as the pending left medians.
            t = self.candidates[first:count]
            t_pairs, s_pairs = self.valid_pairs(t, s)
            left, right = self.tree.median(*pending_windows, extra=self.median_queries(t_pairs, s_pairs))
            self.finalize(left)
            right = self.pair_medians(right, t_pairs, s_pairs)
            candidates = (t_pairs, s_pairs, self.statistic(t_pairs, s_pairs, right))
        else:
            candidates, rejected = self.pruned_candidates(s, first, count, pending_windows)
            if rejected is not None:
                # EDM_percent rejects whichever t wins, and every possible winner has the state of `rejected`.
                self.F[s] = self.F[rejected]
                self.prev[s] = self.prev[rejected]
                self.number[s] = self.number[rejected]
                self.origin[s] = self.origin[rejected]
                return
        if candidates[0].size == 0:
            return
        best, winner = self.best_per_end(*candidates, s)
        better = best > self.initial
        s, best, winner = s[better], best[better], winner[better]
        self.F[s] = best
        self.prev[s] = winner
        self.number[s] = self.number[winner] + 1
        self.origin[s] = s
        if self.percent is not None:
            self.percent_check(s)

    def pruned_candidates(self, s, first, count, pending_windows):
        """Exact statistics of the pairs that an upper bound cannot rule out."""
        tiles = np.arange(first // _TILE, (count - 1) // _TILE + 1)
        first_t = self.candidates[np.maximum(tiles * _TILE, first)]
        last_t = self.candidates[np.minimum(tiles * _TILE + _TILE, count) - 1]
        # Windows x[t:s] of a tile all contain the core x[last_t:s[0]] and add at most `extra` samples.
        core = s[0] - last_t
        extra = (last_t - first_t) + (s[-1] - s[0])
        low_rank = (core - extra - 1) // 2
        high_rank = (core + extra) // 2
        left, order = self.tree.median(
            *pending_windows,
            extra=(
                np.concatenate((last_t, last_t)),
                np.full(2 * tiles.size, s[0]),
                np.concatenate((np.clip(low_rank, 0, core - 1), np.clip(high_rank, 0, core - 1))),
            ),
        )
        self.finalize(left)
        right_low = np.where(low_rank >= 0, order[: tiles.size], self.tree.sorted[0])
        right_high = np.where(high_rank < core, order[tiles.size :], self.tree.sorted[-1])
        gap = np.maximum(
            self.tile_median_high[tiles] - right_low, right_high - self.tile_median_low[tiles]
        )
        # (t-p)(s-t)/(s-p)² = r/(1+r)² with r = (t-p)/(s-t) peaks at r = 1.
        ratio = np.clip(
            1.0, self.tile_run_low[tiles] / (s[-1] - first_t), self.tile_run_high[tiles] / core
        )
        bound = self.bound(self.tile_score[tiles], ratio, gap)
        # The gain is never negative, so F[s] is at least the best score of the tiles valid for s.
        valid_tiles = np.searchsorted(last_t, s - self.m, side="right")
        best_score = np.maximum.accumulate(self.tile_score[tiles])
        threshold = np.where(valid_tiles > 0, best_score[np.maximum(valid_tiles - 1, 0)], self.initial)
        threshold = np.maximum(threshold, self.initial)
        found = []
        # The winners of the previous ends are usually close to the best for these: they raise the bar first.
        recent = np.unique(self.prev[self.pending])
        recent = recent[recent > 0]
        if recent.size:
            found.append(self.exact(recent, s))
            threshold = np.maximum(threshold, self.best_per_end(*found[0], s)[0])
        alive = (bound > self.initial) & (bound >= threshold.min())
        if np.count_nonzero(alive) > 1:
            # Evaluate the most promising tile first: its values raise the bar for the rest.
            seed = np.argmax(np.where(alive, bound, -np.inf))
            t = self.candidates[max(tiles[seed] * _TILE, first) : min(tiles[seed] * _TILE + _TILE, count)]
            found.append(self.exact(t, s))
            threshold = np.maximum(threshold, self.best_per_end(*found[-1], s)[0])
            alive[seed] = False
            alive &= bound >= threshold.min()
        if np.any(alive):
            rows = (tiles[alive] * _TILE)[:, None] + np.arange(_TILE)
            rows = rows[(rows >= first) & (rows < count)]
            tile = rows // _TILE - tiles[0]
            t = self.candidates[rows]
            run = t - self.prev[t]
            ratio = np.clip(1.0, run / (s[-1] - t), run / (s[0] - t))
            median = self.left_median[t]
            gap = np.maximum(median - right_low[tile], right_high[tile] - median)
            row_bound = self.bound(self.score[t], ratio, gap)
            # Rows that survive the tile's order statistics get their own, with a slack of only the block.
            close = row_bound >= threshold.min()
            t, run, median = t[close], run[close], median[close]
            # A row pairs only with the ends s >= t + m: their windows all contain x[t:first_end].
            first_end = np.maximum(s[0], t + self.m)
            core = first_end - t
            low_rank = (core - (s[-1] - first_end) - 1) // 2
            high_rank = (core + (s[-1] - first_end)) // 2
            order = self.tree.kth(
                np.concatenate((t, t)),
                np.concatenate((first_end, first_end)),
                np.concatenate((np.clip(low_rank, 0, core - 1), np.clip(high_rank, 0, core - 1))),
            )
            right_low = np.where(low_rank >= 0, order[: t.size], self.tree.sorted[0])
            right_high = np.where(high_rank < core, order[t.size :], self.tree.sorted[-1])
            gap = np.maximum(median - right_low, right_high - median)
            ratio = np.clip(1.0, run / (s[-1] - t), run / core)
            row_bound = self.bound(self.score[t], ratio, gap)
            if self.percent is not None:
                rejected = self.rejected_state(found, t, row_bound, threshold.min())
                if rejected is not None:
                    return None, rejected
            found.append(self.exact(t, s, row_bound, threshold))
        elif self.percent is not None:
            rejected = self.rejected_state(found, np.empty(0, dtype=np.int64), np.empty(0), threshold.min())
            if rejected is not None:
                return None, rejected
        if not found:
            return (np.empty(0, dtype=np.int64),) * 3, None
        return tuple(np.concatenate(column) for column in zip(*found)), None

    def rejected_state(self, found, t, row_bound, threshold):
        """The candidate whose state every end of the block takes, if EDM_percent must reject all winners.

        The winner of an end is an evaluated pair or a row of `t` whose value (bound) reaches the
        lowest `threshold`. When all of those share one state (F, prev, number), as the ends of a
        rejected stretch do, and even the largest value or bound stays below the percent test's bar,
        the end takes that state whichever of them wins; None when that cannot be shown.
        """
        evaluated_t = np.concatenate([pairs[0] for pairs in found] + [np.empty(0, dtype=np.int64)])
        evaluated_value = np.concatenate([pairs[2] for pairs in found] + [np.empty(0)])
        keep = evaluated_value >= threshold
        close = row_bound >= threshold
        contenders = np.concatenate((evaluated_t[keep], t[close]))
        if contenders.size == 0:
            return None
        top = max(evaluated_value[keep].max(initial=-np.inf), row_bound[close].max(initial=-np.inf))
        state = self.F[contenders], self.prev[contenders], self.number[contenders]
        if any(np.any(column != column[0]) for column in state):
            return None
        f, number = state[0][:1], state[2][:1]
        if not (f[0] > 0.0 and top - f[0] < self.percent * self.penalty(number)[0] * f[0]):
            return None
        return int(contenders[0])

    @staticmethod
    def bound(score, ratio, gap):
        """score + r/(1+r)² · gap², plus a relative slack so rounding never prunes a winner."""
        gain = ratio / (1.0 + ratio) ** 2 * gap * gap
        return score + gain + _BOUND_SLACK * (np.abs(score) + gain + 1.0)

    def valid_pairs(self, t, s):
        t_pairs, s_pairs = np.broadcast_arrays(t[:, None], s[None, :])
        keep = t_pairs <= s_pairs - self.m
        return t_pairs[keep], s_pairs[keep]

    @staticmethod
    def median_queries(lo, hi):
        """k-th value queries whose answers `pair_medians` turns into window medians."""
        length = hi - lo
        middle = (length - 1) // 2
        return np.concatenate((lo, lo)), np.concatenate((hi, hi)), np.concatenate((middle, length // 2))

    @staticmethod
    def pair_medians(values, lo, hi):
        lower, upper = values[: lo.size], values[lo.size :]
        return np.where((hi - lo) % 2 == 0, (lower + upper) / 2, lower)

    def exact(self, t, s, row_bound=None, threshold=None):
        """Exact statistic of every valid pair (t, s), skipping those bounded below `threshold`."""
        t_pairs, s_pairs = np.broadcast_arrays(t[:, None], s[None, :])
        keep = t_pairs <= s_pairs - self.m
        if threshold is not None:
            keep &= row_bound[:, None] >= threshold[None, :]
        t_pairs, s_pairs = t_pairs[keep], s_pairs[keep]
        right, _ = self.tree.median(t_pairs, s_pairs)
        return t_pairs, s_pairs, self.statistic(t_pairs, s_pairs, right)

    def statistic(self, t, s, right):
        """BreakoutDetection's candidate value, in its order of floating-point operations."""
        prev = self.prev[t]
        normalize = ((t - prev) * (s - t)) / ((s - prev) ** 2).astype(float)
        difference = self.left_median[t] - right
        value = self.F[t] + normalize * (difference * difference)
        if self.percent is None:
            value = value - self.beta * self.penalty(self.number[t])
        return value

    def percent_check(self, s):
        """EDM_percent: keep a new change point only if it raises F by percent·G(k)·F[prev]."""
        prev = self.prev[s]
        weak = (prev != 0) & (
            self.F[s] - self.F[prev] < self.percent * self.penalty(self.number[prev]) * self.F[prev]
        )
        s, prev = s[weak], prev[weak]
        self.number[s] = self.number[prev]
        self.F[s] = self.F[prev]
        self.prev[s] = self.prev[prev]
        self.origin[s] = self.origin[prev]

    @staticmethod
    def best_per_end(t, s_pairs, value, s):
        """Largest value per end s and the earliest t reaching it."""
        index = np.searchsorted(s, s_pairs)
        best = np.full(s.size, -np.inf)
        np.maximum.at(best, index, value)
        hit = value == best[index]
        winner = np.full(s.size, np.iinfo(np.int64).max)
        np.minimum.at(winner, index[hit], t[hit])
        return best, winner
