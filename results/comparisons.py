"""The one comparison service. Every comparison the dashboard shows is computed here or in its pure part,
:mod:`results.comparing`, through :mod:`results.stats`, as :class:`results.rows.ComparisonRow` rows:

* a nightly against the last K runs of its branch, run-to-run variance included (spec §8), and beside
  it, naively, against the previous run alone;
* a pull request against its base run, with the hierarchical bootstrap where both kept samples;
* any two stored runs, on the fly (the compare page and ``manage.py compare RUN RUN``);
* two result files (``manage.py compare --files``: :func:`results.comparing.compare_series` alone, without Django).

:func:`compare_run` stores a run's rows as :class:`results.models.Comparison` rows (and opens its alerts);
:func:`stored_rows` reads stored comparisons back as rows, so stored and computed comparisons are shown
the same way. One confidence level per comparison, decided when it is computed (the candidate metric's),
is the level of its interval and of both sides' half-widths.
"""

import gc
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from datetime import timedelta
from operator import attrgetter
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from . import alerts, comparing, environment, machine_state, presentation, queue, stats
from .baselines import (
    SHIFT_CLIP,
    SHIFT_HISTORY,
    SHIFT_MIN_HISTORY,
    RunNoise,
    SeriesBaseline,
    pull_request_bases,
    run_to_run_noise,
    series_baselines,
)
from .comparing import SMALL_SIDES, Bootstrap, NothingToCompare, compare_series, pairwise_rows
from .models import Alert, Comparison, ComparisonChunk, ComparisonMethod, Result, Run, RunKind, RunStatus, Verdict
from .decisions import ALPHA, NIGHTLY_ALERTS, SERIES_LEVEL, final_verdicts, suspected_verdict
from .rows import ComparisonRow, Interval, Side
from .series import Series
from .bulk import bulk_inserter, bulk_update_values

MIN_HISTORY = 3
STORED_RESAMPLES = 2_000
"""Replicates of a stored pull-request bootstrap: computed for every series of a pull request."""
BOOTSTRAP_MAX_SERIES = 200


# --- Computing -------------------------------------------------------------------------------------------


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
        factor = environment.without_environment(self.environment_offset)
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
            **comparing.identity(candidates[i]), method=ComparisonMethod.HISTORY, baseline=Side(mean=None),
            candidate=comparing.side_of(candidates[i], None), ratio=None, low=None, high=None, bounded=False,
            statistic=None, df=None, pvalue=None, qvalue=None, verdict=Verdict.INSUFFICIENT_HISTORY,
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
            *comparing.summary_arrays([series.summary for series in chosen]), *padded,
            threshold=np.array([series.threshold for series in chosen]),
            direction=np.array([series.direction for series in chosen], dtype=object), confidence=levels)
        columns = comparing.result_columns(result, (
            "ratio", "low", "high", "bounded", "statistic", "pvalue", "df", "verdict", "baseline", "history_variance",
            "history_size", "between_variance", "prediction_low", "prediction_high"))
        candidate_widths = comparing.half_widths([series.summary for series in chosen], levels)
        baseline_widths = comparing.half_width(columns["history_variance"], columns["history_size"], levels)
        listed = {name: values.tolist() for name, values in columns.items()}
        for row, i in enumerate(usable):
            size = int(listed["history_size"][row])
            baseline = Side(mean=float(listed["baseline"][row]), variance=float(listed["history_variance"][row]),
                            n=size, half_width=baseline_widths[row])
            rows[i] = comparing.comparison_row(
                candidates[i], method=ComparisonMethod.HISTORY, alpha=ALPHA,
                numbers={name: values[row] for name, values in listed.items()}, verdict=str(listed["verdict"][row]),
                baseline=baseline, candidate=comparing.side_of(candidates[i], candidate_widths[row]),
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
    verdict = suspected_verdict(row.verdict, ratio=row.ratio, threshold=row.threshold, direction=row.direction,
                                significant=row.pvalue < SERIES_LEVEL)
    return verdict in NIGHTLY_ALERTS


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
        prior = None
        if least < SHIFT_MIN_HISTORY:
            width = max(len(previous[i]) for i in members)
            before = np.full((len(members), width), np.nan)
            for row, i in enumerate(members):
                before[row, width - len(previous[i]):] = [night.mean for night in previous[i]]
            prior = stats.prior_spread(before, clip=SHIFT_CLIP)
        found, means = _shift_test(candidates, segments, members, lambda means, levels: stats.recent_shift(
            means, history=SHIFT_HISTORY, recent=count, min_history=least, confidence=levels,
            clip=SHIFT_CLIP, prior=prior))
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
    to name the night its shift began, never a shift the other way beside it. A closed change's (`tonight` False) keeps its first night."""
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
        found, _ = _shift_test(candidates, nights, members,
                               lambda means, levels, test=test: test(means, confidence=levels), tonight=tonight)
        for row, i in enumerate(members):
            values = {name: column[row] for name, column in found.items()}
            earlier = nights[i] if tonight else nights[i][:-1]
            series = candidates[i] if tonight else _night_series(candidates[i], nights[i][-1])
            rows[i] = _shift_row(series, earlier, values, starts=1 + before + after, pooled_since=True)
    return rows


REFINE_BEFORE = 3
REFINE_AFTER = 5
"""How far a carried change's first night may move, each night, from where it is: its evidence tries the nights
from REFINE_BEFORE before it to REFINE_AFTER after it as the first (spec §8, revised 2026-11-26: "re-scans
refine, never absorb")."""


def _shift_test(candidates: Sequence[Series], nights: Sequence[Sequence[StoredNight]], members: list[int], test,
                *, tonight: bool = True) -> tuple[dict, np.ndarray]:
    """The columns of `test` (:func:`results.stats.recent_shift` or :func:`results.stats.shift_since`) on the
    night means of `members` (right-aligned, newest last: tonight's unless `tonight` is False, then the last of
    their nights), with the verdict and the own-spread Welch p-value added."""
    width = max(len(nights[i]) for i in members) + (1 if tonight else 0)
    means = np.full((len(members), width), np.nan)
    for row, i in enumerate(members):
        values = [night.mean for night in nights[i]] + ([candidates[i].summary.mean] if tonight else [])
        means[row, width - len(values):] = values
    levels = np.array([candidates[i].confidence_level for i in members])
    found = test(means, levels)
    columns = {name: np.atleast_1d(getattr(found, name)) for name in (
        "start", "nights", "history_size", "ratio", "low", "high", "bounded", "statistic", "pvalue",
        "unadjusted_pvalue", "mean_after", "mean_before", "pooled_variance", "starts_tried")}
    tested = columns["start"] >= 0
    columns["verdict"] = np.full(len(members), Verdict.INSUFFICIENT_HISTORY, dtype=object)
    if tested.any():
        columns["verdict"][tested] = stats.verdict(
            columns["low"][tested], columns["high"][tested],
            threshold=np.array([candidates[i].threshold for i in members])[tested],
            direction=np.array([candidates[i].direction for i in members], dtype=object)[tested])
    columns["welch_pvalue"] = _own_spread_pvalues(means, columns, tested)
    return {name: column.tolist() for name, column in columns.items()}, means


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
    return comparing.comparison_row(
        series, method=ComparisonMethod.SHIFT, alpha=ALPHA, numbers={**values, "df": k + m - 2},
        verdict=str(values["verdict"]), baseline=Side(mean=baseline[0], variance=pooled, n=k),
        candidate=Side(mean=float(values["mean_after"]), variance=pooled, n=m),
        note=shift_note(m, k, int(values["starts_tried"])),
        inputs={"first_run": after[0], "pooled_runs": after, "history_runs": before,
                "starts_tried": int(values["starts_tried"]),
                "nights_since": m, "carried": pooled_since,
                "unadjusted_pvalue": float(values["unadjusted_pvalue"]), "baseline": baseline,
                "welch_pvalue": None if math.isnan(welch) else welch})


def shift_note(nights: int, history: int, starts: int = 1) -> str:
    """A shift row's note: what it pooled, and that its p-value (not its interval) is adjusted for the first
    nights tried."""
    adjusted = f"; p adjusted for {starts} first nights tried, the interval not" if starts > 1 else ""
    return f"{nights} night{'s' if nights != 1 else ''} pooled against {history} before{adjusted}"


def _untested_shift(series: Series, found: int, starts: int) -> ComparisonRow:
    why = (f"{found} earlier night{'s' if found != 1 else ''} since its last change, {SHIFT_MIN_HISTORY} needed"
           if starts >= 1
           else "no night since the last change judged on")
    return ComparisonRow(
        **comparing.identity(series), method=ComparisonMethod.SHIFT, baseline=Side(mean=None),
        candidate=comparing.side_of(series, None), ratio=None, low=None, high=None, bounded=False, statistic=None,
        df=None, pvalue=None, qvalue=None, verdict=Verdict.INSUFFICIENT_HISTORY, threshold=series.threshold,
        confidence_level=series.confidence_level, note=why, inputs={"starts_tried": 0})


def _history_inputs(history: Sequence[StoredNight], columns: dict, row: int) -> dict:
    return {"history_runs": [night.run_id for night in history],
            "history": [[night.mean, night.variance, night.n] for night in history],
            "between_variance": float(columns["between_variance"][row]), "baseline": float(columns["baseline"][row]),
            "band": [float(columns["prediction_low"][row]), float(columns["prediction_high"][row])]}


# --- Stored comparisons read back as rows ----------------------------------------------------------------


def stored_rows(items: Sequence[tuple[Result, Comparison | None]], *, machines: dict[int, str] | None = None,
                alerts_by_comparison: dict[int, tuple[int, str]] | None = None) -> list[ComparisonRow]:
    """Results with their stored comparison (or None: not compared yet) as rows, in their order.

    The results need their metric (and its benchmark) loaded; ``machines`` gives machine names by run id,
    ``alerts_by_comparison`` (alert id, status) by comparison id. Each side's half-width is computed at the
    comparison's stored confidence level; the baseline of a history comparison is the mean of its K
    run means, with their variance (so its interval carries the night-to-night variation).
    """
    machines = machines or {}
    alerts_by_comparison = alerts_by_comparison or {}
    levels = np.array([(comparison or result.metric).confidence_level for result, comparison in items], dtype=float)
    candidates = comparing.half_width([r.variance for r, _ in items], [r.n for r, _ in items], levels) if items else []
    baselines = [_stored_baseline(comparison) for _, comparison in items]
    baseline_widths = comparing.half_width([b.variance or 0.0 for b in baselines], [b.n or 0 for b in baselines],
                                           levels) if items else []
    rows = []
    for (result, comparison), width, baseline, baseline_width in zip(items, candidates, baselines, baseline_widths):
        metric = result.metric
        common = {
            "benchmark": metric.benchmark.name, "metric": metric.name, "unit": metric.unit,
            "direction": metric.direction, "metric_id": metric.pk, "run_id": result.run_id,
            "display_unit": metric.display_unit,
            "machine": machines.get(result.run_id, ""),
            "candidate": Side(mean=result.mean, variance=result.variance, n=result.n,
                              subsession_size=result.subsession_size, half_width=width,
                              independent=result.independent),
        }
        if comparison is None:
            rows.append(ComparisonRow(
                **common, method="", baseline=Side(mean=None), ratio=None, low=None, high=None, bounded=False,
                statistic=None, df=None, pvalue=None, qvalue=None, verdict="not compared",
                threshold=metric.threshold, confidence_level=metric.confidence_level,
                note="the run has not been compared yet"))
            continue
        inputs = comparison.inputs or {}
        if comparison.verdict == Verdict.INSUFFICIENT_HISTORY:
            found = len(inputs.get("history_runs", []))
            note = f"{found} earlier night{'s' if found != 1 else ''}, {inputs.get('needed', MIN_HISTORY)} needed"
        elif comparison.method == ComparisonMethod.HISTORY:
            single = result.n == 1 and all(entry[2] == 1 for entry in inputs.get("history") or [])
            note = f"mean of {baseline.n} nights" + (SINGLE_VALUES if single else "")
        elif comparison.method == ComparisonMethod.SHIFT:
            note = shift_note(len(inputs.get("pooled_runs") or []), len(inputs.get("history_runs") or []),
                              int(inputs.get("starts_tried") or 1))
        elif presentation.RUN_NOISE_UNKNOWN_KEY in inputs:
            note = comparing.RUN_NOISE_UNKNOWN
        elif "within_runs" in inputs:
            note = BOOTSTRAP_WITHIN_RUNS
        else:
            note = SMALL_SIDES if inputs.get("df_rule") == "hsu" else ""
        alert = alerts_by_comparison.get(comparison.pk) or (None, None)
        rows.append(ComparisonRow(
            **common, method=comparison.method,
            baseline=replace(baseline, half_width=baseline_width if baseline.mean is not None else None),
            ratio=comparison.ratio, low=comparison.ci_low, high=comparison.ci_high, bounded=comparison.bounded,
            statistic=comparison.statistic, df=comparison.df, pvalue=comparison.pvalue, qvalue=comparison.qvalue,
            verdict=comparison.verdict, threshold=comparison.threshold, confidence_level=comparison.confidence_level,
            note=note, comparison_id=comparison.pk, alert_id=alert[0], alert_status=alert[1], inputs=inputs,
            verdict_from="bootstrap" if comparison.method == ComparisonMethod.BOOTSTRAP else "fieller"))
    return rows


def _stored_baseline(comparison: Comparison | None) -> Side:
    """The baseline side a stored comparison was computed from (its inputs), without a half-width."""
    if comparison is None:
        return Side(mean=None)
    inputs = comparison.inputs or {}
    if comparison.method == ComparisonMethod.HISTORY:
        history = inputs.get("history") or []
        if len(history) < 2:
            return Side(mean=None)
        means = np.array([entry[0] for entry in history], dtype=float)
        return Side(mean=float(means.mean()), variance=float(means.var(ddof=1)), n=len(history))
    baseline = inputs.get("baseline")
    if isinstance(baseline, list) and len(baseline) >= 3:
        # [mean, variance, n], and since the comparison service, [..., subsession size, independent].
        size, independent = (baseline[3], bool(baseline[4])) if len(baseline) == 5 else (None, True)
        return Side(mean=float(baseline[0]), variance=float(baseline[1]), n=int(baseline[2]),
                    subsession_size=size, independent=independent)
    return Side(mean=None)


# --- Comparing a stored run, and storing it --------------------------------------------------------------


def series_from_results(results: Iterable[Result], *, with_samples: bool) -> list[Series]:
    """Stored results as series, with their metric's threshold, direction and confidence level.

    ``with_samples=False`` leaves the raw samples untouched, so a queryset may defer them.
    """
    return [
        Series(
            benchmark=result.metric.benchmark.name, metric=result.metric.name, unit=result.metric.unit,
            direction=result.metric.direction, threshold=result.metric.threshold,
            confidence_level=result.metric.confidence_level,
            summary=stats.SampleSummary(
                mean=result.mean, subsession_size=result.subsession_size, variance=result.variance, n=result.n,
                sample_count=result.sample_count,
                autocorrelation=math.nan if result.autocorrelation is None else result.autocorrelation,
                independent=result.independent),
            samples=result.samples_array() if with_samples else None,
            metric_id=result.metric_id, result_id=result.pk, run_id=result.run_id,
            display_unit=result.metric.display_unit,
        )
        for result in results
    ]


def series_from_values(values: dict, samples: np.ndarray | None = None) -> Series:
    """A stored result read with ``values()`` (:data:`SUMMARY_FIELDS`) as a series."""
    return Series(
        benchmark=values["metric__benchmark__name"], metric=values["metric__name"], unit=values["metric__unit"],
        direction=values["metric__direction"], threshold=values["metric__threshold"],
        confidence_level=values["metric__confidence_level"],
        summary=stats.SampleSummary(
            mean=values["mean"], subsession_size=values["subsession_size"], variance=values["variance"],
            n=values["n"], sample_count=values["n"] * values["subsession_size"], autocorrelation=math.nan,
            independent=values["independent"]),
        samples=samples, metric_id=values["metric_id"], result_id=values["id"], run_id=values["run_id"],
        display_unit=values["metric__display_unit"])


def stored_series(*, run_id: int, with_samples: bool) -> list[Series]:
    """A stored run's results as series (their raw samples only when asked for)."""
    results = Result.objects.filter(run_id=run_id).select_related("metric__benchmark").order_by("id")
    if not with_samples:
        results = results.defer("samples")
    return series_from_results(results, with_samples=with_samples)


SUMMARY_FIELDS = ("id", "run_id", "metric_id", "mean", "variance", "n", "subsession_size", "independent",
                  "metric__name", "metric__unit", "metric__direction", "metric__threshold", "metric__confidence_level",
                  "metric__benchmark__name", "metric__display_unit")


def _stored_series(queryset) -> list[Series]:
    """Stored results as series (summaries only), with their ids, from one ``values()`` query."""
    return [series_from_values(values) for values in queryset.values(*SUMMARY_FIELDS).order_by("id")]


@contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector walks the live objects each time 700 more are allocated than freed; a comparison
    of 10,000 series keeps a million alive to its end, so collection took 30% of its time, and found nothing:
    its objects are freed by their reference counts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@_cycle_collection_paused()
@transaction.atomic
def compare_run(*, run_id: int) -> int:
    """Compare a stored run with its baseline, store the comparisons and open or carry its alerts.

    A nightly (or manual, imported) run is compared with the last K nights of its series' level on the
    default branch and the same machine, run-to-run variance included (spec §8); beside it, naively, with
    the previous run alone; and each series is tested for a shift at one of its recent nights, evidence
    pooled over nights (:mod:`results.baselines` says which nights count). A pull-request run is compared
    with its base revision's run. Comparing a run again replaces its earlier comparisons (and their alerts).
    Returns the number of comparisons stored.
    """
    run = Run.objects.select_related("project", "revision").get(pk=run_id)
    delete_comparisons(run)
    Run.objects.filter(pk=run.pk).update(compared_at=timezone.now())
    candidates = _stored_series(Result.objects.filter(run=run))
    # A confirmation settles its alert instead; a cancelled session's partial runs are kept, never compared.
    if not candidates or run.kind == RunKind.CONFIRMATION or run.status != RunStatus.COMPLETED:
        return 0
    carried: dict[int, int] = {}
    if run.kind == RunKind.PR:
        metric_ids = [series.metric_id for series in candidates]
        bases = pull_request_bases(run, metric_ids)
        ids = {metric: base.result_id for metric, base in bases.items()}
        batches: Iterable[list[Entry]] = [
            _against_results(candidates, {series.metric_id: series for series in _stored_series(
                Result.objects.filter(pk__in=ids.values()))}, method=ComparisonMethod.PAIRWISE,
                fallbacks={metric for metric, base in bases.items() if base.fallback},
                noise=run_to_run_noise(run, metric_ids))
            + _bootstrap_against_results(run, ids)]
    else:
        environment.match_environment(run=run)
        carried, batches = _nightly_entries(run, candidates,
                                            selected=Result.objects.filter(run=run).values("metric_id"))
    stored = 0
    with bulk_inserter(Comparison) as insert:
        # A nightly's batches hold one method each (q-values are taken across a method's comparisons, so each
        # batch has its own), and on PostgreSQL the server stores one while the next is computed; a pull
        # request is one batch.
        for entries in batches:
            rows = [row for row, _, _ in entries]
            qvalues, verdicts = final_verdicts([(row.method, row.pvalue, row.ratio, row.threshold, row.direction,
                                                 row.verdict) for row in rows])
            insert(_stored_columns(entries, qvalues=qvalues, verdicts=verdicts), rows=len(rows))
            stored += len(rows)
    alerts.open_alerts(run, carried=carried)
    transaction.on_commit(lambda: _enqueue_change_points(run.pk))
    return stored


def _nightly_entries(run: Run, candidates: list[Series], *,
                     selected: QuerySet | None = None) -> tuple[dict[int, int], Iterator[list["Entry"]]]:
    """The alerts a nightly's series carry (metric id → alert id), and its rows, computed one method at a time:
    against its history, its shifts, and against its previous night. ``selected`` is a query of the
    candidates' metric ids, for the queries to filter on (a subquery instead of ten thousand parameters).
    Every query is made before this returns; the rows are computed as they are iterated, without one."""
    metric_ids = [series.metric_id for series in candidates]
    selected = metric_ids if selected is None else selected
    found = series_baselines(run, metric_ids, history_size=run.project.history_size, selected=selected)
    offsets = dict(Result.objects.filter(run=run, metric_id__in=selected, environment_offset__isnull=False)
                   .values_list("pk", "environment_offset"))
    nights = _series_nights(candidates, found, selected, history_size=run.project.history_size, offsets=offsets)
    carried = {metric: baseline.carried for metric, baseline in found.items() if baseline.carried is not None}
    return carried, _nightly_batches(candidates, nights)


# --- A large nightly compared in chunks, by several analysis workers -------------------------------------


def begin_comparison(*, run_id: int, chunk_series: int | None = None) -> list[int]:
    """Compare a stored run whole (:func:`compare_run`) and return []; or, for a completed nightly of more
    than ``chunk_series`` series (``PILOTWEB_COMPARISON_CHUNK_SERIES``), forget its earlier comparisons, split
    its series into chunks for the analysis workers to compare at once (:func:`compare_chunk`) and return the
    chunks' ids."""
    chunk_series = chunk_series or settings.PILOTWEB_COMPARISON_CHUNK_SERIES
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        metric_ids = list(Result.objects.filter(run=run).order_by("metric_id").values_list("metric_id", flat=True))
        if (len(metric_ids) <= chunk_series or run.status != RunStatus.COMPLETED
                or run.kind in (RunKind.PR, RunKind.CONFIRMATION)):
            chunked = False
        else:
            chunked = True
            delete_comparisons(run)
            # Every chunk divides out the same environment: recognised once, for the whole run.
            environment.match_environment(run=run)
            # compared_at is set by the chunk that completes the comparison; the catch-up leaves a run alone
            # while its chunks are pending (pending_runs).
            Run.objects.filter(pk=run.pk).update(compared_at=None)
            chunks = ComparisonChunk.objects.bulk_create([
                ComparisonChunk(run=run, index=index, metric_ids=metric_ids[start:start + chunk_series])
                for index, start in enumerate(range(0, len(metric_ids), chunk_series))])
    if not chunked:
        compare_run(run_id=run_id)
        return []
    return [chunk.pk for chunk in chunks]


@_cycle_collection_paused()
def compare_chunk(*, chunk_id: int, worker: str = "") -> bool:
    """Compare one chunk's series as :func:`compare_run` does and store their rows, their q-values left for the
    end; the chunk that finds itself the last of its run to finish completes the run's comparison
    (:func:`_complete_chunked`) and returns True. A chunk already done, or replaced by a new comparison of its
    run, is skipped."""
    with transaction.atomic():
        chunk = (ComparisonChunk.objects.select_for_update().select_related("run__project")
                 .filter(pk=chunk_id, finished_at__isnull=True).first())
        if chunk is None:
            return False
        run = chunk.run
        candidates = _stored_series(Result.objects.filter(run=run, metric_id__in=chunk.metric_ids))
        carried, batches = _nightly_entries(run, candidates)
        with bulk_inserter(Comparison) as insert:
            for entries in batches:
                insert(_stored_columns(entries, qvalues=[None] * len(entries),
                                       verdicts=[row.verdict for row, _, _ in entries]), rows=len(entries))
        chunk.carried, chunk.worker, chunk.finished_at = carried, worker[:200], timezone.now()
        chunk.save(update_fields=["carried", "worker", "finished_at"])
    with transaction.atomic():
        if ComparisonChunk.objects.filter(run=run, finished_at__isnull=True).exists():
            return False
        # Two chunks finishing at once may both see none left: the run's row decides which completes it.
        if not Run.objects.filter(pk=run.pk, compared_at__isnull=True).update(compared_at=timezone.now()):
            return False
        _complete_chunked(run)
    return True


def _complete_chunked(run: Run) -> None:
    """The end of a chunked comparison: q-values across all the run's comparisons of each method, the
    suspected verdicts they decide (as :func:`compare_run` computes them), the alerts."""
    stored = list(Comparison.objects.filter(candidate__run=run, pvalue__isnull=False).values_list(
        "pk", "method", "pvalue", "ratio", "threshold", "verdict", "candidate__metric__direction"))
    qvalues, verdicts = final_verdicts([(method, pvalue, ratio, threshold, direction, verdict)
                                        for _, method, pvalue, ratio, threshold, verdict, direction in stored])
    bulk_update_values(Comparison, ["qvalue", "verdict"], [
        (entry[0], qvalue, verdict) for entry, qvalue, verdict in zip(stored, qvalues, verdicts)])
    carried = {int(metric): alert for chunk in run.comparison_chunks.all() for metric, alert in chunk.carried.items()}
    alerts.open_alerts(run, carried=carried)
    transaction.on_commit(lambda: _enqueue_change_points(run.pk))


def pending_chunks(*, older_than: timedelta = timedelta(minutes=30)) -> list[int]:
    """Chunks of a comparison not finished long after they were planned (their worker was lost)."""
    return list(ComparisonChunk.objects.filter(finished_at__isnull=True, created_at__lt=timezone.now() - older_than)
                .order_by("pk").values_list("pk", flat=True))


# A computed row with the ids of the stored results it compares (candidate, baseline or None).
Entry = tuple[ComparisonRow, int, int | None]


def delete_comparisons(run: Run) -> None:
    """Delete a run's stored comparisons: their alerts first (through the ORM, which deletes their events and
    unlinks confirmation sessions), other alerts' evidence among them unset, then the comparisons, as nothing
    else refers to them; a few queries per ``DELETE_BATCH`` comparisons. The ORM's own delete would load every
    comparison to collect what refers to it. The chunks of an earlier comparison in chunks go too."""
    ComparisonChunk.objects.filter(run=run).delete()
    # Ids read first, then used as lists: "id IN (a subquery of a join)" was planned as nested loops over whole
    # tables when their statistics were stale (minutes a run, seen on PostgreSQL, twice).
    results = list(Result.objects.filter(run=run).values_list("pk", flat=True))
    for start in range(0, len(results), DELETE_BATCH):
        stored = Comparison.objects.filter(candidate_id__in=results[start:start + DELETE_BATCH])
        ids = list(stored.values_list("pk", flat=True))
        for first in range(0, len(ids), DELETE_BATCH):
            batch = ids[first:first + DELETE_BATCH]
            Alert.objects.filter(comparison_id__in=batch).delete()
            Alert.objects.filter(evidence_id__in=batch).update(evidence=None)
        stored._raw_delete(stored.db)


DELETE_BATCH = 5_000
"""Ids per query of :func:`delete_comparisons`: within every database's limit of parameters."""


def _enqueue_change_points(run_id: int) -> None:
    queue.enqueue(queue.DETECT_CHANGE_POINTS, run_id)


def pending_runs(*, older_than: timedelta = timedelta(minutes=2)) -> list[int]:
    """Completed runs not compared yet (their enqueue was lost), oldest first; not those whose chunks are
    being compared."""
    return list(
        Run.objects.filter(status=RunStatus.COMPLETED, compared_at__isnull=True,
                           created_at__lt=timezone.now() - older_than)
        .exclude(pk__in=ComparisonChunk.objects.filter(finished_at__isnull=True).values("run_id"))
        .order_by("started_at").values_list("pk", flat=True)
    )


class SeriesNights(NamedTuple):
    """What a nightly's rows are computed from, per candidate (in their order): its history (newest first, at most
    K nights), the nights of its newest segment a new shift is tested on (oldest first), how many of the newest
    nights a shift may start at, the change whose evidence tonight adds to (or None), and its newest earlier night
    as a series (metric id → series), for the naive comparison; and each candidate as its shift is tested
    (tonight's machine environment divided out)."""

    histories: list[list[StoredNight]]
    segments: list[list[StoredNight]]
    earlier_segments: list[list[StoredNight]]
    recent: list[int]
    carried: list[Carried | None]
    previous: dict[int, Series]
    tested: list[Series]


def _series_nights(candidates: list[Series], baselines: dict[int, SeriesBaseline], selected: list[int] | QuerySet,
                   *, history_size: int, offsets: dict[int, float | None]) -> SeriesNights:
    """Each candidate's earlier nights read (one query; ``selected`` holds the candidates' metric ids, as a list
    or a query) and divided as its baseline says; ``offsets``: each candidate's environment offset by result id."""
    by_metric = _earlier_nights(baselines, selected)
    nights = SeriesNights([], [], [], [], [], {}, [])
    for series in candidates:
        baseline = baselines[series.metric_id]
        stored = by_metric.get(series.metric_id, {})

        def present(first: int, baseline=baseline, stored=stored) -> list[StoredNight]:
            # A shift is tested on the nights' means with their machine environment divided out.
            return [stored[night.run_id].without_environment() for night in baseline.nights[first:]
                    if night.run_id in stored]

        nights.segments.append(present(baseline.segment_start))
        nights.earlier_segments.append(
            present(baseline.previous_start)[:-len(nights.segments[-1]) or None] if baseline.segment_start else [])
        nights.histories.append([stored[run_id] for run_id in baseline.history_runs if run_id in stored]
                                [:history_size])
        nights.recent.append(baseline.recent())
        carried = None
        if baseline.carried is not None:
            earlier = present(baseline.carried_from)
            since = len(earlier) - len(nights.segments[-1])
            worse_is_up = series.direction == "lower_is_better"
            # The newest of this series' nights up to the one its alert was opened on.
            by_then = {night.run_id for night in baseline.nights[:(baseline.carried_opened or 0) + 1]}
            latest = max((j for j, night in enumerate(earlier) if night.run_id in by_then), default=since)
            carried = Carried(alert=baseline.carried, nights=earlier, since=since,
                              sign=1 if baseline.carried_worse == worse_is_up else -1, latest=latest)
        nights.carried.append(carried)
        nights.tested.append(_without_environment(series, offsets.get(series.result_id)))
        newest = next((stored[night.run_id] for night in reversed(baseline.nights) if night.run_id in stored), None)
        if newest is not None:
            nights.previous[series.metric_id] = _night_series(series, newest)
    return nights


def _nightly_batches(candidates: list[Series], nights: SeriesNights) -> Iterator[list[Entry]]:
    """Each candidate against the last K nights of its level, then tested for a recent shift, then against its
    previous night: three batches of rows, each computed when the one before has been taken."""
    rows = history_rows(candidates, nights.histories)
    yield [(row if row.verdict != Verdict.INSUFFICIENT_HISTORY else replace(
        row, inputs={"history_runs": [s.run_id for s in found], "needed": MIN_HISTORY}), series.result_id, None)
        for row, found, series in zip(rows, nights.histories, candidates)]
    shifts = shift_rows(nights.tested, nights.segments, recent=nights.recent, carried=nights.carried,
                        previous=nights.earlier_segments)
    yield [(row, series.result_id, None) for row, series in zip(shifts, candidates)]
    yield _against_results(candidates, nights.previous, method=ComparisonMethod.PREVIOUS)


def _earlier_nights(baselines: dict[int, SeriesBaseline],
                    selected: list[int] | QuerySet) -> dict[int, dict[int, StoredNight]]:
    """The stored results of the series' earlier nights (their metric ids ``selected``), by metric id and run
    id, from one query."""
    runs = {night.run_id for baseline in baselines.values() for night in baseline.nights}
    if not runs:
        return {}
    # Unordered: the model's default ordering would join four tables and sort 100,000 rows on disk.
    found = Result.objects.filter(run_id__in=runs, metric_id__in=selected).order_by().values_list(
        "metric_id", "run_id", "id", "mean", "variance", "n", "subsession_size", "independent", "environment_offset")
    # Read by the cursor: the ORM's per-row converters took half the time of 100,000 rows.
    by_metric: dict[int, dict[int, StoredNight]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(*found.query.sql_with_params())
        for metric, run, pk, mean, variance, n, size, independent, offset in cursor.fetchall():
            by_metric[metric][run] = StoredNight(pk, run, mean, variance, n, size, bool(independent), offset or 0.0)
    return by_metric


def _without_environment(series: Series, offset: float | None) -> Series:
    """Tonight's series with the night's machine environment divided out (:mod:`results.environment`)."""
    if not offset:
        return series
    factor = environment.without_environment(offset)
    summary = series.summary
    return replace(series, samples=None, summary=replace(summary, mean=summary.mean * factor,
                                                          variance=summary.variance * factor * factor))


def _night_series(candidate: Series, night: StoredNight) -> Series:
    """An earlier night of a candidate's series as a series (names, threshold and level are the candidate's)."""
    return Series(
        benchmark=candidate.benchmark, metric=candidate.metric, unit=candidate.unit, direction=candidate.direction,
        threshold=candidate.threshold, confidence_level=candidate.confidence_level, display_unit=candidate.display_unit,
        summary=stats.SampleSummary(mean=night.mean, subsession_size=night.subsession_size, variance=night.variance,
                                    n=night.n, sample_count=night.n * night.subsession_size, autocorrelation=math.nan,
                                    independent=night.independent),
        samples=None, metric_id=candidate.metric_id, result_id=night.result_id, run_id=night.run_id)


def _against_results(candidates: list[Series], found: dict[int, Series], *, method: str,
                     fallbacks: set[int] = frozenset(), noise: dict[int, RunNoise] | None = None) -> list[Entry]:
    """Each candidate against one stored result of its series (``found``: metric id → its series), two runs,
    with the run-to-run noise its nightly history measured where ``noise`` is given (metric id → it; a series
    without claims no change; None: the naive comparison with the previous night, shown beside the history's);
    a series in `fallbacks` is compared with a result that is not of the base commit asked for."""
    pairs = [(found[series.metric_id], series) for series in candidates
             if series.metric_id in found and found[series.metric_id].summary.n >= 2 and series.summary.n >= 2]

    def inputs(base: Series, cand: Series) -> dict:
        numbers = {"baseline_run": base.run_id, "baseline": [
            base.summary.mean, base.summary.variance, base.summary.n, base.summary.subsession_size,
            base.summary.independent]}
        if noise and cand.metric_id in noise:
            numbers["run_noise_from"] = noise[cand.metric_id].run_id
        return {"inputs": {**numbers, "base_fallback": True} if cand.metric_id in fallbacks else numbers}

    measured = None if noise is None else [noise.get(cand.metric_id) for _, cand in pairs]
    rows = pairwise_rows(pairs, method=method, context=inputs, run_noise=None if measured is None else [
        None if found is None else (found.variance, found.df) for found in measured])
    return [(row, cand.result_id, base.result_id) for row, (base, cand) in zip(rows, pairs)]


BOOTSTRAP_WITHIN_RUNS = ("the two runs' readings resampled: run-to-run noise is not in this interval, so it decides "
                         "nothing; the pairwise row is the verdict")


def _bootstrap_against_results(run: Run, baselines: dict[int, int]) -> list[Entry]:
    """The hierarchical bootstrap ratio where both sides kept raw samples (spec §6), seeded by the run id so a
    recomputation gives the same interval. Its cost grows with the samples: computed for pull requests (a
    few series, a decision to make), for at most ``BOOTSTRAP_MAX_SERIES`` series. ``baselines``: metric id →
    the result it is compared with. It resamples the two runs' readings only, so its interval has no run-to-run
    variance in it (spec §8, a pull request is one run against one run): it is shown, and decides nothing (the
    pairwise row, which carries that variance, is the pull request's verdict)."""
    with_samples = Result.objects.filter(samples__isnull=False).select_related("metric__benchmark")
    candidates = {r.metric_id: r for r in with_samples.filter(run=run, metric_id__in=list(baselines))
                  [:BOOTSTRAP_MAX_SERIES]}
    baselines = {r.metric_id: r for r in with_samples.filter(pk__in=[baselines[m] for m in candidates])}
    options = Bootstrap(resamples=STORED_RESAMPLES, seed=run.pk)
    entries = []
    for metric, result in candidates.items():
        if metric not in baselines:
            continue
        base, cand = series_from_results([baselines[metric], result], with_samples=True)
        shapes = [list(cand.samples.shape), list(base.samples.shape)]
        resampled = comparing.bootstrap_ratio(base, cand, confidence=cand.confidence_level, options=options)
        inputs: dict = {"baseline_run": baselines[metric].run_id, "shapes": shapes}
        if resampled is None:
            inputs["skipped"] = ("not resampled: a side has fewer than 2 units at a level (shapes "
                                 + " and ".join(map(str, shapes)) + "), so a bootstrap cannot vary them")
            interval = Interval(ratio=cand.summary.mean / base.summary.mean if base.summary.mean else None,
                                low=None, high=None, bounded=False)
            verdict = Verdict.INCONCLUSIVE
        else:
            inputs.update(resamples=STORED_RESAMPLES, seed=run.pk,
                          within_runs=str(stats.verdict(resampled.low, resampled.high, threshold=cand.threshold,
                                                        direction=cand.direction)))
            interval = comparing.interval_of(resampled)
            verdict = Verdict.INCONCLUSIVE
        row = ComparisonRow(
            **comparing.identity(cand), method=ComparisonMethod.BOOTSTRAP, baseline=comparing.side_of(base, None),
            candidate=comparing.side_of(cand, None), ratio=interval.ratio, low=interval.low, high=interval.high,
            bounded=interval.bounded, statistic=None, df=None, pvalue=None, qvalue=None, verdict=str(verdict),
            threshold=cand.threshold, confidence_level=cand.confidence_level, bootstrap=interval,
            verdict_from="bootstrap", inputs=inputs, note=BOOTSTRAP_WITHIN_RUNS)
        entries.append((row, result.pk, baselines[metric].pk))
    return entries


_STORED_FIELDS = {"method": "method", "ratio": "ratio", "ci_low": "low", "ci_high": "high", "bounded": "bounded",
                  "statistic": "statistic", "df": "df", "pvalue": "pvalue", "threshold": "threshold",
                  "confidence_level": "confidence_level"}
"""The stored comparison's fields that are a computed row's attributes (field → attribute)."""


def _stored_columns(entries: Sequence[Entry], *, qvalues: Sequence[float | None],
                    verdicts: Sequence[str]) -> dict[str, Sequence]:
    """Computed rows as the columns of their stored comparisons of two results, with the numbers that fed each;
    their q-values and final verdicts are decided across the run (spec §7)."""
    rows = [row for row, _, _ in entries]
    return {"candidate_id": [candidate for _, candidate, _ in entries],
            "baseline_id": [baseline for _, _, baseline in entries],
            **{field: list(map(attrgetter(name), rows)) for field, name in _STORED_FIELDS.items()},
            "qvalue": qvalues, "verdict": verdicts,
            "inputs": [{"candidate": [row.candidate.mean, row.candidate.variance, row.candidate.n], **row.inputs}
                       for row in rows]}


# --- Two stored runs, on the fly -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunComparison:
    """Two runs compared on the fly, series by series (nothing is stored)."""

    baseline: Run
    candidate: Run
    rows: list[ComparisonRow]
    counts: dict[str, int]
    only_baseline: list[str]
    only_candidate: list[str]
    not_compared: list[str]
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.rows)

    @property
    def state_differences(self) -> list[str]:
        """How the machine's state differed between the two runs, enough to move their numbers."""
        return machine_state.state_differences(self.baseline.environment, self.candidate.environment,
                                               names=("the baseline", "the candidate"))


def compare_stored_runs(*, baseline_id: int, candidate_id: int, limit: int | None = None,
                        bootstrap: Bootstrap | None = None, alpha: float = ALPHA, threshold: float | None = None,
                        empty_ok: bool = True) -> RunComparison:
    """Any two stored runs, series by series (matched by benchmark and metric name, so runs of different
    projects can be compared); q-values across the compared series. ``limit`` keeps the most notable rows
    (worst first), every series still counted; ``threshold`` replaces the metrics' own. With ``empty_ok``
    false, :class:`NothingToCompare` is raised instead of returning no rows.

    Raises Run.DoesNotExist, its ``missing`` the ids that name no run."""
    runs = {run.pk: run for run in Run.objects.select_related("project", "machine", "revision")
            .filter(pk__in=[baseline_id, candidate_id])}
    missing = [run_id for run_id in dict.fromkeys((baseline_id, candidate_id)) if run_id not in runs]
    if missing:
        error = Run.DoesNotExist(f"No run{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}.")
        error.missing = missing
        raise error
    baseline, candidate = (stored_series(run_id=run_id, with_samples=bootstrap is not None)
                           for run_id in (baseline_id, candidate_id))
    try:
        compared = compare_series(baseline, candidate, alpha=alpha, threshold=threshold, bootstrap=bootstrap)
    except NothingToCompare as error:
        if not empty_ok:
            raise
        compared = error.comparison
    machine = runs[candidate_id].machine.name
    rows = [replace(row, machine=machine, run_id=candidate_id) for row in compared.rows]
    return RunComparison(
        baseline=runs[baseline_id], candidate=runs[candidate_id], rows=rows if limit is None else rows[:limit],
        counts=presentation.verdict_counts(rows), only_baseline=compared.only_baseline,
        only_candidate=compared.only_candidate, not_compared=compared.not_compared, total=len(rows))
