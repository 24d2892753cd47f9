"""A finished session replayed for its run's page: each round's readings split into the stable phases the
session analysed and what it removed, and the confidence interval narrowing round by round.

The same rules as :mod:`runner.session`'s own analysis (it is called, never re-implemented). The replay
costs seconds (EDM on every round), so it runs once, when the session finishes, and is stored
(:class:`MetricAnalysis`, in :class:`runner.models.SessionAnalysis`); the run page reads it back
(:mod:`runner.run_page`, through :mod:`results.extensions`).
"""

import dataclasses
from collections.abc import Sequence

import numpy as np

from results.charts import NarrowingPoint

from . import session as session_loop
from .session.estimates import MSER_BATCH_SIZE

MAX_PREFIXES = 200
MIN_PREFIXES = 12
SAMPLE_BUDGET = 500_000
REMOVED_BECAUSE = ("warm-up", "cool-down", "no stable phase", "short round")


@dataclasses.dataclass(frozen=True)
class SessionSamples:
    """One metric's readings over a session, split as the session's analysis split them.

    Attributes
    ----------
    values : ndarray
        Every reading in time order: a round's unit readings, or its one reading when it has none.
    rounds : ndarray of int
        The round index of each value.
    kept : ndarray of bool
        True for the values subsession analysis used (the stable phase of each round).
    spans : list of tuple
        ``(start, stop, round index, why removed)`` of every stretch of removed values; why is
        ``"warm-up"`` (before the stable phase), ``"cool-down"`` (after it), ``"no stable phase"`` or
        ``"short round"`` (not analysed).
    records : list of RoundRecord
        The rounds with their unit readings cut to the stable phase (and rounds without one left
        out): with ``warmup="none"`` :func:`runner.session.analyse` sees exactly the samples the EDM
        analysis saw, without running EDM again for every prefix.
    """

    values: np.ndarray
    rounds: np.ndarray
    kept: np.ndarray
    spans: list
    records: list


def session_samples(records: Sequence[session_loop.RoundRecord], metric: str,
                    targets: session_loop.SessionTargets, *, stored: np.ndarray | None = None,
                    found: dict | None = None) -> SessionSamples:
    """Split one metric's readings into the stable phases and what the session removed.

    The same rules as :func:`runner.session.analyse` (and ``analysed_samples``): rounds shorter than
    ``min_round_duration`` are not analysed; with ``warmup="edm"``, each round's unit readings
    (when there are at least ``edm_min_size``) keep only their dominant stable phase
    (:func:`results.stats.stable_phase`), and a round without one is left out; with ``"none"`` and
    ``"wps"`` every reading is kept (WPS removes rounds, not readings).

    EDM costs a third of a second on a round of 1,000 readings, so when the session's result kept
    its samples (`stored`: exactly these stable phases, concatenated), each round's phase is read
    back from them instead (:func:`stored_phases`); EDM runs only when they do not fit. At the session's end
    its own phases are given (`found`: ``SessionOutcome.phases``), and EDM runs for none of its rounds.
    """
    edm = targets.warmup is session_loop.WarmupMethod.EDM
    phases = None
    if edm and found:
        known = [found.get((record.index, record.workload, metric)) for record in records]
        if all(phase is not None for phase, record in zip(known, records)
               if record.analysed and len(record.outcome.unit_readings.get(metric) or ()) >= targets.edm_min_size):
            phases = {record.index: (phase.start, phase.stop) if phase.dominant else None
                      for phase, record in zip(known, records) if phase is not None}
    if edm and phases is None and stored is not None:
        phases = stored_phases(records, metric, targets, stored)
    chunks, owners, masks, spans, trimmed = [], [], [], [], []
    offset = 0
    for record in records:
        units = record.outcome.unit_readings.get(metric)
        values = _round_readings(record, metric)
        kept = np.ones(values.size, dtype=bool)
        cut = record
        if not record.analysed:
            kept[:] = False
            spans.append((offset, offset + values.size, record.index, "short round"))
            cut = None
        elif edm and units is not None and len(units) >= targets.edm_min_size:
            if phases is not None:
                bounds = phases[record.index]
            else:
                phase = session_loop.round_stable_phase(values, targets)
                bounds = (phase.start, phase.stop) if phase.dominant else None
            kept[:] = False
            if bounds is not None:
                first, stop = bounds
                kept[first:stop] = True
                if first > 0:
                    spans.append((offset, offset + first, record.index, "warm-up"))
                if stop < values.size:
                    spans.append((offset + stop, offset + values.size, record.index, "cool-down"))
                cut = dataclasses.replace(record, outcome=dataclasses.replace(
                    record.outcome, unit_readings={**record.outcome.unit_readings, metric: values[first:stop]}))
            else:
                spans.append((offset, offset + values.size, record.index, "no stable phase"))
                cut = None
        if cut is not None:
            trimmed.append(cut)
        chunks.append(values)
        owners.append(np.full(values.size, record.index))
        masks.append(kept)
        offset += values.size
    if not chunks:
        return SessionSamples(np.empty(0), np.empty(0, dtype=int), np.empty(0, dtype=bool), [], [])
    return SessionSamples(np.concatenate(chunks), np.concatenate(owners), np.concatenate(masks), spans, trimmed)


def readings(records: Sequence[session_loop.RoundRecord], metric: str) -> np.ndarray:
    """Every reading of one metric in time order, laid out as :func:`session_samples` lays them out (a round's
    unit readings, or its one reading when it has none): what a :class:`MetricAnalysis` counts and masks."""
    if not records:
        return np.empty(0)
    return np.concatenate([_round_readings(record, metric) for record in records])


def _round_readings(record: session_loop.RoundRecord, metric: str) -> np.ndarray:
    units = record.outcome.unit_readings.get(metric)
    if units is None or len(units) == 0:
        return np.array([record.outcome.readings[metric]], dtype=float)
    return np.asarray(units, dtype=float)


def stored_phases(records: Sequence[session_loop.RoundRecord], metric: str, targets: session_loop.SessionTargets,
                  stored: np.ndarray) -> dict[int, tuple[int, int] | None] | None:
    """Each EDM round's stable phase ``(start, stop)`` (None: no dominant phase), read back from the
    samples the session stored, or None when they do not fit the rounds.

    The stored samples are the rounds' stable phases in order (``runner.session.analysed_samples``).
    A round's phase is where its readings continue the stored samples, found by exact equality, and
    must look like one :func:`runner.session.round_stable_phase` can give: more than a quarter of the
    round (EDM's segment holds more than half, and MSER keeps more than half of that), a warm-up of
    at least ``edm_min_size`` readings or a whole number of MSER batches, a cool-down of at least
    ``edm_min_size``. A round with repeated values cannot be read back unambiguously, and any
    misfit (or samples left over) gives None, so that the caller runs EDM instead.
    """
    stored = np.asarray(stored, dtype=float).ravel()
    size = targets.edm_min_size
    position = 0
    phases: dict[int, tuple[int, int] | None] = {}
    for record in records:
        if not record.analysed:
            continue
        units = record.outcome.unit_readings.get(metric)
        if units is None or len(units) == 0:
            units = [record.outcome.readings[metric]]
        units = np.asarray(units, dtype=float)
        if units.size < size:
            if not np.array_equal(stored[position:position + units.size], units):
                return None
            position += units.size
            continue
        if np.unique(units).size < units.size:
            return None
        hits = np.flatnonzero(units == stored[position]) if position < stored.size else ()
        if len(hits) == 0:
            phases[record.index] = None
            continue
        start = int(hits[0])
        length = min(units.size - start, stored.size - position)
        same = units[start:start + length] == stored[position:position + length]
        stop = start + (length if same.all() else int(np.argmin(same)))
        if (stop - start <= units.size // 4 or (0 < start < size and start % MSER_BATCH_SIZE)
                or 0 < units.size - stop < size):
            return None
        phases[record.index] = (start, stop)
        position += stop - start
    return phases if position == stored.size else None


def ci_narrowing(records: Sequence[session_loop.RoundRecord], spec: session_loop.MetricSpec,
                 targets: session_loop.SessionTargets, *, trimmed: Sequence[session_loop.RoundRecord] | None = None,
                 max_prefixes: int = MAX_PREFIXES) -> list[NarrowingPoint]:
    """The relative CI width after each round (at most `max_prefixes` prefixes, evenly spread, fewer
    for long sessions: about ``SAMPLE_BUDGET`` samples analysed in all, never fewer than ``MIN_PREFIXES``).

    Each point is :func:`runner.session.analyse` on the rounds so far. With EDM warm-up removal,
    pass the rounds already cut to their stable phases (`trimmed`, from :func:`session_samples`):
    they are analysed with ``warmup="none"``, which sees the same samples without re-running EDM on
    every prefix.
    """
    total = len(records)
    if total == 0:
        return []
    readings = sum(max(1, len(record.outcome.unit_readings.get(spec.name, ()))) for record in records)
    # Each prefix re-runs subsession analysis on its samples: spend about SAMPLE_BUDGET samples in all.
    count = int(min(total, max_prefixes, max(MIN_PREFIXES, 2 * SAMPLE_BUDGET // readings)))
    prefixes = np.unique(np.round(np.linspace(1, total, count)).astype(int)).tolist()
    source, used = records, targets
    if trimmed is not None and targets.warmup is session_loop.WarmupMethod.EDM:
        source, used = trimmed, dataclasses.replace(targets, warmup=session_loop.WarmupMethod.NONE)
    position = {record.index: order for order, record in enumerate(records)}
    points = []
    for prefix in prefixes:
        last = records[prefix - 1].index
        rounds = [record for record in source if position.get(record.index, total) <= position[last]]
        if not rounds:
            points.append(NarrowingPoint(prefix, None, False))
            continue
        estimate = session_loop.analyse(rounds, [spec], used)[rounds[0].workload][spec.name]
        points.append(NarrowingPoint(prefix, estimate.relative_width, estimate.converged))
    return points


@dataclasses.dataclass(frozen=True)
class MetricAnalysis:
    """What a session's analysis did with one metric's readings, as its run page shows it: which readings
    it removed and how the interval narrowed round by round. Computed once by :func:`analyse_metric` when
    the session finishes and stored as JSON (:meth:`as_json`, :meth:`from_json`).

    Attributes
    ----------
    readings : int
        How many readings the metric has over the rounds (:func:`readings`).
    spans : list of tuple
        ``(start, stop, round index, why removed)`` of every stretch of removed readings, as
        :attr:`SessionSamples.spans`; every other reading was analysed.
    narrowing : list of NarrowingPoint
        :func:`ci_narrowing`.
    """

    readings: int
    spans: list
    narrowing: list

    def kept(self) -> np.ndarray:
        """True for the readings subsession analysis used (:attr:`SessionSamples.kept`)."""
        kept = np.ones(self.readings, dtype=bool)
        for start, stop, _, _ in self.spans:
            kept[start:stop] = False
        return kept

    def as_json(self) -> dict:
        """Plain JSON: lists for tuples, None for a width that is not finite (JSON has no infinity)."""
        return {"readings": self.readings, "spans": [list(span) for span in self.spans],
                "narrowing": [[int(point.rounds), _finite(point.relative_width), bool(point.converged)]
                              for point in self.narrowing]}

    @classmethod
    def from_json(cls, stored: dict) -> "MetricAnalysis":
        """The analysis :meth:`as_json` stored. Raises ValueError for anything else (e.g. an older layout)."""
        try:
            spans = [(int(start), int(stop), int(index), str(why)) for start, stop, index, why in stored["spans"]]
            narrowing = [NarrowingPoint(int(rounds), None if width is None else float(width), bool(converged))
                         for rounds, width, converged in stored["narrowing"]]
            analysis = cls(readings=int(stored["readings"]), spans=spans, narrowing=narrowing)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"Not a stored session analysis: {error}") from None
        if analysis.readings < 0 or any(not 0 <= start < stop <= analysis.readings or why not in REMOVED_BECAUSE
                                        for start, stop, _, why in spans):
            raise ValueError("Not a stored session analysis: a removed stretch lies outside the readings.")
        return analysis


def _finite(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def analyse_metric(records: Sequence[session_loop.RoundRecord], spec: session_loop.MetricSpec,
                   targets: session_loop.SessionTargets, *, stored: np.ndarray | None = None,
                   found: dict | None = None) -> MetricAnalysis:
    """One metric of one workload's rounds as the session analysed it: :func:`session_samples` (EDM on
    every round unless the session's own phases (`found`) or `stored`, the samples its result kept, give the
    phases back) and :func:`ci_narrowing` on the rounds so cut."""
    split = session_samples(records, spec.name, targets, stored=stored, found=found)
    return MetricAnalysis(readings=int(split.values.size), spans=split.spans,
                          narrowing=ci_narrowing(records, spec, targets, trimmed=split.records))
