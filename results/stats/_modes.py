"""Nights that alternate between two far-apart modes, compared within their mode (spec §8).

Some series alternate between two levels far apart from night to night: a benchmark that sometimes takes a slow
path, a runner type twice as fast as the others. Where the share of nights in each mode drifts (a stretch of slow
nights, then of fast ones), a test on the night means reads the drift as shifts of the series: on Perfherder's
``runs5`` history (modes 38× apart, the slow one 20% to 60% of a month's nights), whose maintainers expect no
alert, the nightly detection confirmed three alerts and showed four change points. Putting the slow mode's nights
on the fast mode's scale makes such a series flat, while a shift of both modes stays a shift.

An alignment must never hide a regression, so it is narrow:

- The modes are read from the nights before those tested: their centres, their spreads, and how long each mode's
  runs of consecutive nights last. The nights tested never define the modes they are put in.
- A night is put in a mode only when it lies within a quarter of the gap from that mode's centre (logarithms), so a
  mode that moves by less stays in it and its move is measured at its size; any other night (a mode moved further,
  a third level) is compared as measured: a fast mode slowed to halfway between the two reads as slower, never as
  the slow mode made fast. (A slow mode made faster by more than a quarter of the gap reads as slower too: a false
  alert, never a hidden regression.)
- Two modes are modes only when they alternate in the nights before those tested: at least ``MIN_SWITCHES``
  changes of mode, each mode ``MIN_SHARE`` of the nights and ``MIN_PER_HALF`` nights in each half, and the gap
  between the centres at least ``MODE_RATIO`` and ``SEPARATION`` times the wider mode's spread.
- A run of slow nights that reaches the newest night and is longer than ``RUN_MULTIPLE`` times the longest slow
  run before it (where a whole history is scanned at once, a run of either mode against its mode's longest other
  run) is no alternation: the nights tested (where the modes are the segment before's, the segment's nights of the
  run too) are compared as measured against the history on the fast mode's scale, so every night slow from some night
  on (the fast path gone) is a regression of its full size. (The slow
  path gone is no alert: an improvement this cannot report.) Before the run is that long, a fast mode slowed to
  within a quarter of the gap of the slow one reads as slow nights, faster than it is: up to ``RUN_MULTIPLE`` times
  the longest slow run, an alert of the wrong sign.
- The upper mode's spread is at most ``SPREAD_RATIO`` times the lower's.
- What it cannot see: a change of the share of nights in each mode, the runs staying short (a slow path taken on
  60% of the nights instead of 30%), is not a shift of such a series.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["AlignedModes", "align_modes"]

MODE_RATIO = 1.5
"""The least ratio between the two modes' centres: far beyond any regression a mixture's shift is looked for at."""
SEPARATION = 12.0
"""The least gap between the modes' centres (logarithms) in robust standard deviations of the wider mode: a quarter
of the gap, the reach of each mode, holds its nights (3 standard deviations at least)."""
MIN_SWITCHES = 4
"""The fewest changes of mode from one night to the next: two visits to the other mode and back."""
MIN_SHARE = 0.15
"""The least share of the nights in each mode (Perfherder's ``runs5``: at least 15% of each 40-night
window slow)."""
MIN_PER_HALF = 2
"""The fewest nights of each mode in each half of the nights the modes are read from: a step with a few odd nights
on either side of it is no alternation (with them fewer than ``MIN_SHARE`` of the nights, nor are its halves). At 3,
a window of Perfherder's ``runs5`` whose second half held 2 slow nights of 15 read as measured, and its next slow
run was confirmed as a regression (a change point shown and an alert confirmed; with 2, none); of six seeded
series whose share of slow nights drifts (tests/results/test_segments.py), one had two alerts confirmed at 3,
none at 2."""
SPREAD_RATIO = 3.0
"""The most the upper mode's spread may exceed the lower's: its nights keep their spread on the lower's scale, and
a noisier one among quiet nights gets winsorized and read as shifts (flat series of 1% and 10% modes aligned:
5.2% of windows significant, against 1.0% as measured). Spreads are estimated from 10 to 20 nights of a mode, so
a limit of 2 switched the alignment off in half of the windows of two equally noisy modes (2 against 1: 46%)."""
RUN_MULTIPLE = 2
"""A run of one mode longer than this many times its longest run before it ends the alignment."""


@dataclass(frozen=True)
class AlignedModes:
    """Night means with the nights of the upper of two alternating modes put on the lower mode's scale.

    Attributes
    ----------
    values : ndarray
        The means, the upper mode's nights multiplied by `factor` (the others as measured; NaN where absent).
    factor : ndarray
        Per series, the lower mode's level over the upper's (1 where the series is compared as measured).
    aligned : ndarray of bool
        Per series, whether its nights were compared within their modes.
    found : ndarray of bool
        Per series, whether the nights the modes are read from hold two alternating, far-apart modes, aligned or
        not (as measured, such nights spread as a mixture does).
    """

    values: np.ndarray
    factor: np.ndarray
    aligned: np.ndarray
    found: np.ndarray


def align_modes(means, *, tested=0, modes_from=0, earlier_from=None):
    """Put the nights of the upper of two alternating, far-apart modes of each series on the lower mode's scale.

    The modes are read from the nights before the last `tested` (see the module's docstring): split at the widest
    gap between the sorted logarithms of their nights, each side's centre is the median of its logarithms and its
    spread 1.4826 × their median absolute deviation. Where they qualify, every night within a quarter of the gap
    from the upper centre is multiplied by the lower mode's level over the upper's (the exponential of the
    centres' difference). A run of slow nights reaching the newest that outlasts ``RUN_MULTIPLE`` times the longest
    slow run before the tested nights leaves the tested nights as measured (the fast path gone; with the modes of
    the segment before, the run's nights since `modes_from` instead, tested or not); a scanned whole
    history with a run of either mode outlasting twice its mode's longest other run is left as measured.

    Parameters
    ----------
    means : array_like, shape (..., T)
        Positive night means, oldest first along the last axis; NaN where a series has no night (padding).
    tested : int, optional
        The newest nights under test (the same columns for every series), which never define the modes. 0: the
        whole history is read at once (a scan of it), where each half must hold the two modes on its own and a
        run is compared with the longest *other* run of its mode.
    modes_from : int, optional
        The first column the modes are read from (the nights of the segment, since the series' last change).
    earlier_from : int, optional
        A column before `modes_from` (the nights of the segment before): where the nights from `modes_from` show no
        two modes (a segment begun a few nights ago), the modes are read from this column on instead, provided every
        night from `modes_from` on lies within one of them (a change that moved the modes moves the segment's
        nights out of their reach); or, where the segment begins with the lower mode moved and its other nights
        lie in the upper mode, the moved level and the upper mode (``_moved_modes``). None: never.

    Returns
    -------
    AlignedModes

    Notes
    -----
    A series whose nights before the tested ones hold a non-positive mean, or fewer than ``4 * MIN_PER_HALF``
    nights, is compared as measured. Comparing nights within a class of runs is how treeherder and Skia Perf keep
    platforms apart; here the class is read off the values, since an upload rarely names it.
    """
    means = np.asarray(means, dtype=float)
    if means.ndim == 0:
        raise ValueError("`means` must hold at least one axis of nights.")
    if isinstance(tested, bool) or not isinstance(tested, (int, np.integer)) or not 0 <= tested < means.shape[-1]:
        raise ValueError(f"`tested` must be a whole number of nights from 0 to {means.shape[-1] - 1} (fewer than "
                         f"the nights given); got {tested!r}.")
    split = means.shape[-1] - tested
    if isinstance(modes_from, bool) or not isinstance(modes_from, (int, np.integer)) or not 0 <= modes_from < split:
        raise ValueError(f"`modes_from` must be a column before the tested nights (0 to {split - 1}); got "
                         f"{modes_from!r}.")
    if earlier_from is not None and (isinstance(earlier_from, bool) or not isinstance(earlier_from, (int, np.integer))
                                     or not 0 <= earlier_from <= modes_from):
        raise ValueError(f"`earlier_from` must be a column from 0 to `modes_from` ({modes_from}), or None; got "
                         f"{earlier_from!r}.")
    shape = means.shape
    rows = means.reshape(-1, shape[-1])
    values = rows.copy()
    factor = np.ones(len(rows))
    aligned = np.zeros(len(rows), dtype=bool)
    found = np.zeros(len(rows), dtype=bool)
    # Two modes' centres lie within the range of the nights they are read from: most series span less than
    # MODE_RATIO there, and are left as measured without looking further.
    read = rows[:, modes_from if earlier_from is None else earlier_from:split]
    wide = (np.fmax.reduce(read, axis=1, initial=-np.inf)
            >= MODE_RATIO * np.fmin.reduce(read, axis=1, initial=np.inf))
    for index in np.flatnonzero(wide):
        row = rows[index]
        start = modes_from
        earlier = row[start:split][~np.isnan(row[start:split])]
        modes = _modes(earlier)
        if modes is None and earlier_from is not None:
            wider = row[earlier_from:split][~np.isnan(row[earlier_from:split])]
            candidate = _modes(wider)
            since = row[modes_from:]
            since = since[~np.isnan(since)]
            if candidate is not None and (_classes(since, candidate) >= 0).all():
                modes, start, earlier = candidate, earlier_from, wider
            else:
                previous = row[earlier_from:modes_from]
                modes = _moved_modes(_modes(previous[~np.isnan(previous)]), since)
                start, earlier = (earlier_from, wider) if modes is not None else (start, earlier)
        if modes is None:
            continue
        found[index] = True
        if tested == 0:
            half = earlier.size // 2
            if _modes(earlier[:half]) is None or _modes(earlier[half:]) is None:
                continue
        classes = _classes(row, modes)
        gone = _run_too_long(classes[start:split], classes[split:], own=tested == 0)
        if gone and tested == 0:
            continue
        factor[index], aligned[index] = np.exp(modes[0] - modes[1]), True
        upper = classes == 1
        if gone:
            # Every night slow for longer than ever before: the tested nights as measured against the history on
            # the fast mode's scale, so that the fast path gone is a regression of its full size. Where a change
            # point split the run off (the segment since it read with the earlier segment's modes), the run's nights
            # in the segment are as measured, tested or not, and the segment's nights before the run stay in their
            # modes: put on the fast scale, the run's older nights read as a step of every slow night tested against
            # them, and an alert was opened and dismissed every other night. (Within a segment's own modes, the
            # run's older nights stay aligned and every tested night is as measured: either way otherwise, a flat
            # two-mode history, Perfherder's runs5, had a change point of ×38.)
            upper[split if start == modes_from else max(modes_from, _last_run_start(classes)):] = False
        values[index] = np.where(upper, row * factor[index], row)
    return AlignedModes(values=values.reshape(shape), factor=factor.reshape(shape[:-1]),
                        aligned=aligned.reshape(shape[:-1]), found=found.reshape(shape[:-1]))


def _modes(nights):
    """The centres ``(lower, upper)`` of the logarithms of `nights` (present, in time order)
    where they hold two alternating, well-separated modes; None otherwise."""
    if nights.size < 4 * MIN_PER_HALF or (nights <= 0).any():
        return None
    logs = np.log(nights)
    ordered = np.sort(logs)
    widest = int(np.argmax(np.diff(ordered)))
    cut = (ordered[widest] + ordered[widest + 1]) / 2.0
    upper = logs > cut
    modes = []
    for side in (~upper, upper):
        part = logs[side]
        if part.size < MIN_SHARE * logs.size:
            return None
        centre = float(np.median(part))
        modes.append((centre, 1.4826 * float(np.median(np.abs(part - centre)))))
    (low, low_spread), (high, high_spread) = modes
    if high - low < max(np.log(MODE_RATIO), SEPARATION * max(low_spread, high_spread)):
        return None
    if high_spread > SPREAD_RATIO * low_spread:
        return None
    half = logs.size // 2
    if min(np.sum(~upper[:half]), np.sum(upper[:half]), np.sum(~upper[half:]), np.sum(upper[half:])) < MIN_PER_HALF:
        return None
    if np.count_nonzero(np.diff(upper.astype(int))) < MIN_SWITCHES:
        return None
    return low, high


def _moved_modes(modes, since):
    """Where the change that began a segment moved the lower of the segment before's two `modes` (logarithms) and
    left the upper: the segment's nights (`since`, present, in time order) begin with nights in neither mode, all at
    one level below the upper mode, and its other nights all lie in the upper mode. Returns the moved level and the
    upper mode's centre, as ``(lower, upper)``; None otherwise.

    A 1x/3x series whose fast path takes 2x from some night on is one change: alerted there, the segment since it
    holds 2x nights, and the slow mode's next night (unchanged, but in neither of the few nights' modes) would
    otherwise be compared as measured and alerted as a second change. Only the upper mode's nights are ever put on
    the moved level's scale, so no night at the moved level or beyond it is scaled: a segment begun by a night or two
    above the lower mode and then back in it (the lower mode regressing now and then), or by the upper mode moved
    (its later nights at that level a regression of it), is never read so. As with any two modes, a moved level that
    slows to within a quarter of the new gap of the upper mode reads as upper-mode nights (faster than it is) until
    its run outlasts the upper mode's."""
    if modes is None or since.size == 0 or (since <= 0).any():
        return None
    classes = _classes(since, modes)
    logs = np.log(since)
    if classes[0] != -1 or not (classes == 1).any() or (classes == 0).any():
        return None
    level = float(np.median(logs[classes == -1]))
    reach = (modes[1] - level) / 4.0
    if reach <= 0 or (np.abs(logs[classes == -1] - level) > reach).any() or (
            np.abs(logs[classes == 1] - modes[1]) > reach).any():
        return None
    return level, modes[1]


def _classes(nights, modes):
    """Per night: 0 in the lower mode, 1 in the upper, -1 in neither, -2 absent."""
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.log(np.where(nights > 0, nights, np.nan))
    classes = np.where(np.isnan(nights), -2, -1)
    reach = (modes[1] - modes[0]) / 4.0
    for label, centre in enumerate(modes):
        classes[np.abs(logs - centre) <= reach] = label
    return classes


def _runs(classes):
    """``(label, start, length)`` of each run of consecutive present nights of one mode: absent nights are skipped,
    a night in neither mode ends a run."""
    present = classes[classes >= -1]
    runs, start = [], 0
    for position in range(1, present.size + 1):
        if position == present.size or present[position] != present[start]:
            if present[start] >= 0:
                runs.append((int(present[start]), start, position - start))
            start = position
    return runs


def _last_run_start(classes):
    """The column of the first night of the run of one mode that reaches the newest present night (:func:`_runs`,
    its start counted among present nights, mapped back to its column)."""
    _, start, _ = _runs(classes)[-1]
    return int(np.flatnonzero(classes >= -1)[start])


def _run_too_long(earlier, tested, *, own):
    """Whether the alignment ends: where the run of slow nights that reaches the newest night outlasts
    ``RUN_MULTIPLE`` times the longest slow run among the `earlier` nights' (the fast path gone); where `own` (a
    whole history, `tested` empty), where any mode's longest run outlasts that many times its next longest (or is
    its only one).

    A long run of fast nights among the tested ends nothing: slow nights coming back after it are the share
    drifting, unless the slow ones have gone from the nights the modes are read from, where no modes are found and
    their return is compared as measured (Perfherder's ``runs5``: 18 fast nights in a row, then slow ones, had two
    alerts confirmed when a fast run ended the alignment).

    A run is counted whole, its part before the tested nights included; the earlier runs it is compared with are
    those that ended before the tested nights began. Only a slow run that still lasts is the fast path gone: one
    that ended was a stretch of the share's drift (measured on flat series alternating 1x/38x, 15-60% slow: any long
    slow run among the tested nights made 4.0% of the series-nights alert, one that reaches the newest night fewer)."""
    runs = _runs(np.concatenate([earlier, tested]))
    if own:
        for label in (0, 1):
            lengths = sorted((length for mode, _, length in runs if mode == label), reverse=True)
            if lengths and (len(lengths) == 1 or lengths[0] > RUN_MULTIPLE * lengths[1]):
                return True
        return False
    offset = int(np.count_nonzero(earlier >= -1))  # present nights before the tested ones
    present = offset + int(np.count_nonzero(tested >= -1))
    longest = max((length for mode, start, length in runs if mode == 1 and start + length <= offset), default=0)
    if not runs:
        return False
    label, start, length = runs[-1]
    return label == 1 and start + length == present and length > RUN_MULTIPLE * longest
