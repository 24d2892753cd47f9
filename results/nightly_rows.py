"""The nightly comparison's rows, computed: each series against its history, and the accumulated evidence of a
shift (spec §8, its revisions of 2026-11-23 and 2026-11-26), as :class:`results.rows.ComparisonRow` rows.

Pure, as :mod:`results.pairwise_rows` is: it takes :class:`results.series.Series` and the stored nights before
them, and needs no database and no Django. :mod:`results.baselines` decides which nights those are (and whether a
change's evidence is carried); :mod:`results.comparisons` reads them, calls these builders, and stores what they
return.
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import NamedTuple

import numpy as np

from . import pairwise_rows, stats
from .pairwise_rows import METHOD_HISTORY, METHOD_SHIFT
from .decisions import ALPHA, INSUFFICIENT_HISTORY, NIGHTLY_ALERTS, series_verdict
from .rows import ComparisonRow, Side
from .series import Series

MIN_HISTORY = 3
"""The fewest earlier nights a series is compared with its history on."""

SHIFT_HISTORY = 30
"""K of the detection: nights before a start it is compared with (see results.stats.recent_shift)."""
SHIFT_RECENT = 14
"""The most recent nights tried as the first night of a shift: tonight alone (``NEWEST_NIGHT_WEIGHT``) and the 13
before it, scanned. More starts find older shifts, fewer find new ones sooner (the scan's adjustment grows with its
starts). At a run-to-run sd of 3% a 5% step needs about 10 nights of evidence, so with 10 starts the nights after
the tenth only slid the starts tried past it: measured (benchmarks/nightly_detection.py, seed 14), 14 starts with
tonight apart from the scan alert 95% of 5% steps by night 13 at 3% (10 starts, tonight among them: 14), by the
fourth night at 1.5% and the first at 0.5% as before, at 0.44% false alerts per A/A series-night at 3% (0.41%)."""
NEWEST_NIGHT_WEIGHT = 0.5
"""Tonight alone is also judged against the segment's history, apart from the scan of the older starts, with this share
of the series' level (results.stats.recent_shift's ``newest_weight``; a Shewhart limit beside a CUSUM-type scan, Lucas
1982): the scan's adjustment for its starts costs a first night's shift several times its own p-value, and the
morning after a change is when an alert is worth most. It spends the false-alarm budget the scan leaves (spec §8:
0.5% per series-night). Measured (benchmarks/nightly_detection.py, seed 14; without → with): 5% steps alerted on
their first night at 1.5% run-to-run noise 27% → 47%, at 3% 2% → 5%; false alerts per A/A series-night 0.01% →
0.10%, 0.21% → 0.27%, 0.33% → 0.41% at 0.5%, 1.5%, 3%. On the Firefox Talos histories (benchmarks/injected_steps.py,
one value a push) +3% steps alerted on their first push 25% → 50% (Otava 50%; median pushes to the alert 2 → 1.5,
Otava 1.5), at 1.31% → 1.58% alerts per untouched series-night (the peers' change points 1.88% and 1.92%). A weight
of 0.3 bought less (41% at 1.5% noise) for little less (0.36% false at 3%). The scan of the older starts no longer
includes tonight (two families of starts that do not overlap): it paid for a start only tonight's own test finds."""

MODES_UNREAD = 10
"""The newest nights a scan never reads a series' two modes from (results.stats.align_modes' ``tested``), fewer than
the first nights it tries: modes need nights, and a slow run reaching tonight is compared with the slow runs before
these. With all 14 first nights unread, a two-mode series whose slow nights came in runs of 3 then 4 (the 3 among
the unread) had its 4 judged the fast path's end and alerted (tests/results/test_segments.py, seed 2); a shift old
enough to sit among the 4 nights read is one its own first nights alerted, and a shift moves a level by percents,
not by the factor that makes two modes."""

SHIFT_MIN_HISTORY = 10
"""The fewest nights of a segment a shift is tested against. The test takes night means as normal; with 3 to 9
nights a series whose nights fall in one of two modes (bimodal noise) often has all of them in one mode, and
the first night in the other looks like a shift (3 alerts on 4 such series over 40 nights with 3)."""

SHIFT_CLIP = 3.5
"""The nights of a segment's history are winsorized at this many robust standard deviations (median ± 3.5 × IQR /
1.349) before a shift is tested against them (results.stats.recent_shift): an odd night (a spike, a runner that
misbehaved) neither hides a later step by inflating the spread nor moves the level. Normal nights are clipped
about once in 1,000; a series whose odd nights are one in ten or more (several modes) is not clipped."""


class StoredNight(NamedTuple):
    """An earlier night's stored result of a series: what its history and shift comparisons read."""

    result_id: int
    run_id: int
    mean: float
    variance: float
    n: int
    subsession_size: int
    independent: bool
    environment_offset: float = 0.0

    def without_environment(self) -> "StoredNight":
        """The night with its machine environment divided out (:mod:`results.environment`): what a shift is
        tested on."""
        if not self.environment_offset:
            return self
        factor = stats.without_environment(self.environment_offset)
        return self._replace(mean=self.mean * factor, variance=self.variance * factor * factor,
                             environment_offset=0.0)


def history_rows(candidates: Sequence[Series], histories: Sequence[Sequence[StoredNight]]) -> list[ComparisonRow]:
    """One row per candidate against its history (its earlier nights, newest first), in their order, from one
    vectorized call: the ratio with the run-to-run variance carried in (spec §8). Fewer than ``MIN_HISTORY``
    nights give an *insufficient history* row."""
    rows: list[ComparisonRow | None] = [None] * len(candidates)
    usable = [i for i, history in enumerate(histories) if len(history) >= MIN_HISTORY]
    for i in set(range(len(candidates))) - set(usable):
        found = len(histories[i])
        rows[i] = ComparisonRow(
            **pairwise_rows.identity(candidates[i]), method=METHOD_HISTORY, baseline=Side(mean=None),
            candidate=pairwise_rows.side_of(candidates[i], None), ratio=None, low=None, high=None, bounded=False,
            statistic=None, df=None, pvalue=None, qvalue=None, verdict=INSUFFICIENT_HISTORY,
            threshold=candidates[i].threshold, confidence_level=candidates[i].confidence_level,
            note=f"{found} earlier night{'s' if found != 1 else ''}, {MIN_HISTORY} needed")
    if usable:
        chosen = [candidates[i] for i in usable]
        lengths = np.array([len(histories[i]) for i in usable])
        padded = np.full((3, len(usable), lengths.max()), np.nan)
        # Every night's row (its series) and column (its place in the history, newest first) in one assignment.
        rows_of = np.repeat(np.arange(len(usable)), lengths)
        columns_of = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[:, rows_of, columns_of] = np.array(
            [(night.mean, night.variance, night.n) for i in usable for night in histories[i]]).T
        levels = np.array([series.confidence_level for series in chosen])
        result = stats.compare_with_history(
            *pairwise_rows.summary_arrays([series.summary for series in chosen]), *padded,
            threshold=np.array([series.threshold for series in chosen]),
            direction=np.array([series.direction for series in chosen], dtype=object), confidence=levels)
        columns = pairwise_rows.result_columns(result, (
            "ratio", "low", "high", "bounded", "statistic", "pvalue", "df", "verdict", "baseline", "history_variance",
            "history_size", "between_variance", "prediction_low", "prediction_high"))
        candidate_widths = pairwise_rows.half_widths([series.summary for series in chosen], levels)
        baseline_widths = pairwise_rows.half_width(columns["history_variance"], columns["history_size"], levels)
        listed = {name: values.tolist() for name, values in columns.items()}
        for row, i in enumerate(usable):
            size = int(listed["history_size"][row])
            baseline = Side(mean=float(listed["baseline"][row]), variance=float(listed["history_variance"][row]),
                            n=size, half_width=baseline_widths[row])
            rows[i] = pairwise_rows.comparison_row(
                candidates[i], method=METHOD_HISTORY, alpha=ALPHA,
                numbers={name: values[row] for name, values in listed.items()}, verdict=str(listed["verdict"][row]),
                baseline=baseline, candidate=pairwise_rows.side_of(candidates[i], candidate_widths[row]),
                note=f"mean of {size} nights" + (SINGLE_VALUES if _single_values(candidates[i], histories[i]) else ""),
                inputs=_history_inputs(histories[i], listed, row))
    return rows


SINGLE_VALUES = "; one value per night, so the run-to-run spread alone (no within-run term, no bootstrap)"


def _single_values(candidate: Series, history: Sequence[StoredNight]) -> bool:
    return candidate.summary.n == 1 and all(night.n == 1 for night in history)


def shift_rows(candidates: Sequence[Series], segments: Sequence[Sequence[StoredNight]], *, recent: Sequence[int],
               carried: Sequence["Carried | None"],
               previous: Sequence[Sequence[StoredNight]] | None = None) -> list[ComparisonRow]:
    """One row per candidate: has its series shifted at one of its recent nights (spec §8)?

    ``segments`` are each candidate's earlier nights of its newest segment, oldest first: each of the ``recent``
    newest nights (tonight included) is tried as the first night of a new shift, against the nights of the segment
    before it (:func:`results.stats.recent_shift`, adjusted for the starts tried). Where the segment began with a
    change whose evidence is still gathered (``carried``), the nights since it are also pooled against the segment
    before it (:func:`results.stats.shift_since`): the row is that evidence, unless the scan finds a new shift
    of ``CLOSING_NIGHTS`` nights or more inside the change's nights, which is then the row, and says how the
    change it closes stands on its own nights (``inputs["closes"]``: a step inside an alert's nights is a change
    of its own, never pooled into it). The
    night means are the units, so a series of single values (n = 1) is tested like any other. Where an earlier
    segment (``previous``, oldest first) has the nights to tell the series' night-to-night spread, its spread is
    pooled in (:func:`results.stats.prior_spread`), and a shift is tested against as few as
    ``SHIFT_MIN_HISTORY_AFTER_CHANGE`` nights of the newest segment: a shift soon after another is seen.
    """
    scans = _scan_rows(candidates, segments, recent, previous or [[] for _ in candidates])
    pooled = _carried_rows(candidates, [None if found is None else found.nights for found in carried],
                           [None if found is None else found.since for found in carried],
                           [1 if found is None else found.sign for found in carried],
                           [None if found is None else found.latest for found in carried])
    rows = []
    closing: list[int] = []
    for i, (scan, evidence) in enumerate(zip(scans, pooled)):
        if evidence is None:
            rows.append(scan)
        elif _finds_shift(scan, candidates[i]) and scan.inputs["nights_since"] >= CLOSING_NIGHTS:
            rows.append(scan)
            closing.append(i)
        else:
            rows.append(evidence)
    if closing:
        # The closed change on its own nights: from its first night up to the new shift's.
        ends = [len(carried[i].nights) - int(rows[i].inputs["nights_since"]) + 1 for i in closing]
        closed = _carried_rows([candidates[i] for i in closing],
                               [list(carried[i].nights[:end]) for i, end in zip(closing, ends)],
                               [carried[i].since for i in closing], [carried[i].sign for i in closing], tonight=False)
        for i, end, evidence in zip(closing, ends, closed):
            settled = {"alert": carried[i].alert}
            if evidence is not None:
                settled.update(ratio=evidence.ratio, low=evidence.low, high=evidence.high, pvalue=evidence.pvalue,
                               verdict=evidence.verdict, welch_pvalue=evidence.inputs.get("welch_pvalue"),
                               nights=len(evidence.inputs["pooled_runs"]))
            if _returns(carried[i], end, candidates[i]):
                settled["transient"] = True
            rows[i] = replace(rows[i], inputs={**rows[i].inputs, "closes": settled})
    return rows


CLOSING_NIGHTS = 2
"""The fewest nights a shift found inside a carried change's nights is made of before it closes that change: one
night just after a change is as likely the new level's spread, which its few nights cannot tell yet (measured:
a machine-wide step of 20 series at 1.5% and 3% run-to-run noise drew 2 and 3 one-night alerts in the nights after
it; benchmarks/nightly_detection.py --scenario machine-wide). Until then the night is pooled into the change's
evidence."""


TRANSIENT_NIGHTS = 3
"""A change of at most this many nights after which the series returns to its level before it was a transient
(an excursion: a runner of another kind for a night or two, a spike), not two changes: it is dismissed and its
return opens no alert. Measured on 200 real asv nights of hosted runners: runner types new to the machine moved
every series for 2 nights and back, and each excursion opened two alerts a series, both confirmed
(benchmarks/injected_steps.py)."""


def _returns(change: "Carried", end: int, tonight: Series) -> bool:
    """Whether the nights after a change's own (from ``end`` on, and tonight) are back at the level before it: the
    change lasted at most ``TRANSIENT_NIGHTS`` nights, and the level since is nearer the one before the change
    than the change's own (log scale)."""
    own = change.nights[change.since:end]
    before = change.nights[max(0, change.since - SHIFT_HISTORY):change.since]
    since = [night.mean for night in change.nights[end:]] + [tonight.summary.mean]
    if not own or len(own) > TRANSIENT_NIGHTS or not before:
        return False
    levels = [float(np.median(values)) for values in ([n.mean for n in before], [n.mean for n in own], since)]
    if min(levels) <= 0:
        return False
    earlier, changed, now = np.log(levels)
    return abs(now - earlier) < abs(changed - earlier) / 2


class Carried(NamedTuple):
    """A series' change whose evidence tonight's nights add to: its alert, the nights of the segment before it and
    since it (oldest first, tonight not included), the index among them of its first night, which way the
    night means moved (+1: up), and the index of the night its alert was opened on (``latest``: a re-estimated
    first night is never later, or an outlier's alert could follow the noise forward and never be settled)."""

    alert: int
    nights: list[StoredNight]
    since: int
    sign: int = 1
    latest: int | None = None


def _finds_shift(row: ComparisonRow, series: Series) -> bool:
    """Whether a scan row is a shift that would open an alert on its own evidence: significant at the series'
    level (adjusted for the starts tried) with its estimate beyond the threshold (:mod:`results.alerts`)."""
    if row.pvalue is None or not row.inputs.get("starts_tried"):
        return False
    return series_verdict(row.verdict, ratio=row.ratio, pvalue=row.pvalue, threshold=row.threshold,
                          direction=row.direction) in NIGHTLY_ALERTS


SHIFT_MIN_HISTORY_AFTER_CHANGE = 3
"""The fewest nights of a segment a shift is tested against when an earlier segment lends it the series' spread
(at least ``PRIOR_MIN_NIGHTS`` of them): a level's mean needs a few nights, its spread many."""
PRIOR_MIN_NIGHTS = 9


def _scan_rows(candidates: Sequence[Series], segments: Sequence[Sequence[StoredNight]], recent: Sequence[int],
               previous: Sequence[Sequence[StoredNight]]) -> list[ComparisonRow]:
    rows: list[ComparisonRow | None] = [None] * len(candidates)
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (series, earlier) in enumerate(zip(candidates, segments)):
        least = SHIFT_MIN_HISTORY_AFTER_CHANGE if len(previous[i]) >= PRIOR_MIN_NIGHTS else SHIFT_MIN_HISTORY
        if recent[i] >= 1 and len(earlier) >= least:
            groups[recent[i], least].append(i)
        else:
            rows[i] = _untested_shift(series, len(earlier), recent[i])
    for (count, least), members in groups.items():
        means, before, factors = _night_means(candidates, segments, members, tested=min(count, MODES_UNREAD),
                                              previous=previous)
        prior = stats.prior_spread(before, clip=SHIFT_CLIP) if least < SHIFT_MIN_HISTORY else None
        found = _shift_test(candidates, members, means, factors, lambda means, levels: stats.recent_shift(
            means, history=SHIFT_HISTORY, recent=count, min_history=least, confidence=levels,
            clip=SHIFT_CLIP, prior=prior, newest_weight=NEWEST_NIGHT_WEIGHT))
        for row, i in enumerate(members):
            values = {name: column[row] for name, column in found.items()}
            rows[i] = _shift_row(candidates[i], segments[i], values, starts=count, pooled_since=False)
    return rows


def _carried_rows(candidates: Sequence[Series], nights: Sequence[Sequence[StoredNight] | None],
                  since: Sequence[int | None], signs: Sequence[int], latest: Sequence[int | None] | None = None, *,
                  tonight: bool = True) -> list[ComparisonRow | None]:
    """Each carried change's evidence: the nights since its first night (``since``, an index in ``nights``; with
    tonight's when `tonight`) pooled against those before it; None where nothing is carried.

    Tonight's evidence also re-estimates the night the change began, among the ``REFINE_BEFORE`` nights before
    its first night and the ``REFINE_AFTER`` after it, up to the night its alert was opened on (``latest``)
    (:func:`results.stats.recent_shift` with its newest nights skipped, adjusted for the starts tried), in the
    direction the change moved (``signs``, +1 up): a change first seen on an odd night, or a night early, comes
    to name the night its shift began, never a shift the other way beside it. A closed change's (`tonight`
    False) keeps its first night."""
    rows: list[ComparisonRow | None] = [None] * len(candidates)
    groups: dict[tuple[int, int, int, int], list[int]] = defaultdict(list)
    for i, earlier in enumerate(nights):
        if earlier is None:
            continue
        count = len(earlier) - since[i] + (1 if tonight else 0)  # nights since its first night
        before = max(0, min(REFINE_BEFORE, since[i] - SHIFT_MIN_HISTORY)) if tonight else 0
        last = None if latest is None else latest[i]
        after = max(0, min(REFINE_AFTER, count - 1, len(earlier) if last is None else last - since[i])) \
            if tonight else 0
        groups[count, before, after, min(SHIFT_MIN_HISTORY, since[i] - before)].append(i)
    for (count, before, after, least), members in groups.items():
        if count < 1 or least < 2:
            continue
        if before == after == 0:
            test = partial(stats.shift_since, nights=count, history=SHIFT_HISTORY, clip=SHIFT_CLIP)
        else:
            test = partial(stats.recent_shift, history=SHIFT_HISTORY, recent=count + before, skip=count - after - 1,
                           min_history=least, clip=SHIFT_CLIP, sign=np.array([signs[i] for i in members]))
        means, _, factors = _night_means(candidates, nights, members, tested=count + before, tonight=tonight)
        found = _shift_test(candidates, members, means, factors,
                            lambda means, levels, test=test: test(means, confidence=levels))
        for row, i in enumerate(members):
            values = {name: column[row] for name, column in found.items()}
            earlier = nights[i] if tonight else nights[i][:-1]
            series = candidates[i] if tonight else night_series(candidates[i], nights[i][-1])
            rows[i] = _shift_row(series, earlier, values, starts=1 + before + after, pooled_since=True)
    return rows


REFINE_BEFORE = 3
REFINE_AFTER = 5
"""How far a carried change's first night may move, each night, from where it is: its evidence tries the nights
from REFINE_BEFORE before it to REFINE_AFTER after it as the first (spec §8, revised 2026-11-26: "re-scans
refine, never absorb")."""


def _night_means(candidates: Sequence[Series], nights: Sequence[Sequence[StoredNight]], members: list[int], *,
                 tested: int, tonight: bool = True, previous: Sequence[Sequence[StoredNight]] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The night means of `members` as their shift is tested (right-aligned, newest last: tonight's unless
    `tonight` is False, then the last of their nights), those of their `previous` segment before them (whose
    spread a short segment borrows), and the factor their slow mode's nights were multiplied by (1: none).

    Nights alternating between two far-apart modes are compared within their mode
    (:func:`results.stats.align_modes`): the modes are read from the segment's nights before the `tested` newest
    (an earlier level's modes may have moved: a change of the series), or where a short segment shows none, from
    the previous segment's with them if every night of the segment fits those modes. The previous segment lends its
    spread only on the same footing: within its own modes where the segment's nights are compared within theirs, as
    measured where neither is and it has no two modes (NaN otherwise: no spread lent)."""
    own = [[night.mean for night in nights[i]] + ([candidates[i].summary.mean] if tonight else []) for i in members]
    earlier = [[night.mean for night in previous[i]] if previous is not None else [] for i in members]
    width, extra = max(map(len, own)), max(map(len, earlier))
    # Each window right-aligned in its own columns (absent nights between them are NaN, skipped by the alignment).
    context = np.full((len(members), extra + width), np.nan)
    for row, (values, before) in enumerate(zip(own, earlier)):
        context[row, extra + width - len(values):] = values
        context[row, extra - len(before):extra] = before
    aligned = stats.align_modes(context, tested=min(tested, width - 1), modes_from=extra,
                                earlier_from=0 if extra else None)
    before = context[:, :extra]
    if extra:
        # The previous segment's spread on the same footing as the nights tested: within its own modes where both
        # are compared within theirs (a change may have moved the modes), as measured where neither is and it holds
        # no two far-apart modes (a mixture's spread would hide a step of the nights tested), else none.
        own = stats.align_modes(before)
        within, tested_within = np.atleast_1d(own.aligned), np.atleast_1d(aligned.aligned)
        raw = ~within & ~tested_within & ~np.atleast_1d(own.found)
        before = np.where((within & tested_within)[:, None], own.values, np.where(raw[:, None], before, np.nan))
    return aligned.values[:, extra:], before, np.atleast_1d(aligned.factor)


def _shift_test(candidates: Sequence[Series], members: list[int], means: np.ndarray, factors: np.ndarray, test
                ) -> dict:
    """The columns of `test` (:func:`results.stats.recent_shift` or :func:`results.stats.shift_since`) on the
    night means of `members` and their modes' factors (:func:`_night_means`), with the verdict and the own-spread
    Welch p-value added."""
    levels = np.array([candidates[i].confidence_level for i in members])
    found = test(means, levels)
    columns = {name: np.atleast_1d(getattr(found, name)) for name in (
        "start", "nights", "history_size", "ratio", "low", "high", "bounded", "statistic", "pvalue",
        "unadjusted_pvalue", "mean_after", "mean_before", "pooled_variance", "starts_tried", "newest_alone")}
    tested = columns["start"] >= 0
    columns["verdict"] = np.full(len(members), INSUFFICIENT_HISTORY, dtype=object)
    if tested.any():
        columns["verdict"][tested] = stats.verdict(
            columns["low"][tested], columns["high"][tested],
            threshold=np.array([candidates[i].threshold for i in members])[tested],
            direction=np.array([candidates[i].direction for i in members], dtype=object)[tested])
    columns["welch_pvalue"] = _own_spread_pvalues(means, columns, tested)
    columns["mode_factor"] = factors
    return {name: column.tolist() for name, column in columns.items()}


def _own_spread_pvalues(means: np.ndarray, columns: dict, tested: np.ndarray) -> np.ndarray:
    """Welch's p-value of the nights since each shift against the nights before it, each with its own spread
    (NaN with one night since): the means are right-aligned, tonight last, so the nights since are the last
    ``nights`` columns and the ``history_size`` before them their history."""
    pvalues = np.full(len(means), np.nan)
    after, before = columns["nights"].astype(int), columns["history_size"].astype(int)
    usable = tested & (after >= 2) & (before >= 2)
    if not usable.any():
        return pvalues
    width = means.shape[1]
    column = np.arange(width)
    since = column >= width - after[usable, None]
    earlier = (column >= (width - after - before)[usable, None]) & ~since
    chosen = means[usable]
    # Every usable row holds at least 2 nights on each side, so nanvar never warns.
    since_variance = np.nanvar(np.where(since, chosen, np.nan), axis=1, ddof=1)
    earlier_variance = np.nanvar(np.where(earlier, chosen, np.nan), axis=1, ddof=1)
    pvalues[usable] = stats.welch_test(columns["mean_after"][usable], since_variance, after[usable],
                                       columns["mean_before"][usable], earlier_variance, before[usable]).pvalue
    return pvalues


def _shift_row(series: Series, earlier: Sequence[StoredNight], values: dict, *, starts: int,
               pooled_since: bool) -> ComparisonRow:
    if values["start"] < 0:
        return _untested_shift(series, len(earlier), starts)
    m, k = int(values["nights"]), int(values["history_size"])
    first = len(earlier) + 1 - m  # index in earlier (+ tonight) of the shift's first night
    after = [s.run_id for s in earlier[first:]] + [series.run_id]
    before = [s.run_id for s in reversed(earlier[first - k:first])]  # newest first, as a history row's
    pooled = float(values["pooled_variance"])
    baseline = [float(values["mean_before"]), pooled, k, 1, True]
    # The nights since with their own spread (Welch): a one-night spike is significant against the history's
    # spread but not against its own, so it never confirms a new level (results.alerts).
    welch = float(values["welch_pvalue"])
    modes = {"mode_factor": float(values["mode_factor"])} if values["mode_factor"] != 1.0 else {}
    alone = {"newest_weight": NEWEST_NIGHT_WEIGHT} if values["newest_alone"] else {}
    return pairwise_rows.comparison_row(
        series, method=METHOD_SHIFT, alpha=ALPHA, numbers={**values, "df": k + m - 2},
        verdict=str(values["verdict"]), baseline=Side(mean=baseline[0], variance=pooled, n=k),
        candidate=Side(mean=float(values["mean_after"]), variance=pooled, n=m),
        note=shift_note(m, k, int(values["starts_tried"]), modes.get("mode_factor", 1.0), alone.get("newest_weight")),
        inputs={"first_run": after[0], "pooled_runs": after, "history_runs": before,
                "starts_tried": int(values["starts_tried"]),
                "nights_since": m, "carried": pooled_since,
                "unadjusted_pvalue": float(values["unadjusted_pvalue"]), "baseline": baseline,
                "welch_pvalue": None if math.isnan(welch) else welch, **modes, **alone})


def shift_note(nights: int, history: int, starts: int = 1, mode_factor: float = 1.0,
               newest_weight: float | None = None) -> str:
    """A shift row's note: what it pooled, that its p-value (not its interval) is adjusted for the first nights
    tried (or, where tonight alone was judged at its share of the level, divided by that share), and where its
    nights alternate between two far-apart modes, that its means are on the fast mode's scale
    (:func:`results.stats.align_modes`)."""
    adjusted = f"; p adjusted for {starts} first nights tried, the interval not" if starts > 1 else ""
    if newest_weight:
        adjusted = f"; tonight alone, tested at {newest_weight:g} of the series' level: p ×{1 / newest_weight:g}"
    modes = (f"; compared within its two modes, the slow mode's nights ×{mode_factor:.3g} (on the fast mode's "
             f"scale)" if mode_factor != 1.0 else "")
    return f"{nights} night{'s' if nights != 1 else ''} pooled against {history} before{adjusted}{modes}"


def _untested_shift(series: Series, found: int, starts: int) -> ComparisonRow:
    why = (f"{found} earlier night{'s' if found != 1 else ''} since its last change, {SHIFT_MIN_HISTORY} needed"
           if starts >= 1
           else "no night since the last change judged on")
    return ComparisonRow(
        **pairwise_rows.identity(series), method=METHOD_SHIFT, baseline=Side(mean=None),
        candidate=pairwise_rows.side_of(series, None), ratio=None, low=None, high=None, bounded=False, statistic=None,
        df=None, pvalue=None, qvalue=None, verdict=INSUFFICIENT_HISTORY, threshold=series.threshold,
        confidence_level=series.confidence_level, note=why, inputs={"starts_tried": 0})


def _history_inputs(history: Sequence[StoredNight], columns: dict, row: int) -> dict:
    return {"history_runs": [night.run_id for night in history],
            "history": [[night.mean, night.variance, night.n] for night in history],
            "between_variance": float(columns["between_variance"][row]), "baseline": float(columns["baseline"][row]),
            "band": [float(columns["prediction_low"][row]), float(columns["prediction_high"][row])]}


def night_series(candidate: Series, night: StoredNight) -> Series:
    """An earlier night of a candidate's series as a series (names, threshold and level are the candidate's)."""
    return Series(
        benchmark=candidate.benchmark, metric=candidate.metric, unit=candidate.unit, direction=candidate.direction,
        threshold=candidate.threshold, confidence_level=candidate.confidence_level, display_unit=candidate.display_unit,
        summary=stats.SampleSummary(mean=night.mean, subsession_size=night.subsession_size, variance=night.variance,
                                    n=night.n, sample_count=night.n * night.subsession_size, autocorrelation=math.nan,
                                    independent=night.independent),
        samples=None, metric_id=candidate.metric_id, result_id=night.result_id, run_id=night.run_id)
