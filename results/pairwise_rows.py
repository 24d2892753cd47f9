"""Two sides compared series by series: Welch's test, Fieller's interval, the q-values and the verdict, as
:class:`results.rows.ComparisonRow` rows, computed through :mod:`results.stats`.

The pure part of the one comparison service (:mod:`results.comparisons`): it takes :class:`results.series.Series`
and needs no database and no Django, so ``manage.py compare --files`` compares two files without starting
Django. :mod:`results.comparisons` builds on it for stored runs: the history, the shifts, what is stored.
"""

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from . import stats
from .decisions import ALPHA, RUN_NOISE_UNKNOWN_KEY, qvalues_by_method, suspected_verdict
from .rows import ComparisonRow, Interval, Side
from .series import Series

DEFAULT_RESAMPLES = 10_000
METHOD_HISTORY = "history"
"""``results.models.ComparisonMethod.HISTORY``: tonight against the last K nights of its series."""
METHOD_SHIFT = "shift"
"""``results.models.ComparisonMethod.SHIFT``: the nights since a recent shift against the nights before it."""
METHOD_PAIRWISE = "pairwise"
"""``results.models.ComparisonMethod.PAIRWISE``: a run's series against one other run's, by Welch and Fieller."""
METHOD_FILES = "files"
"""The method of rows compared from two result files: no run, so no q-value (spec §7)."""


class NothingToCompare(ValueError):
    """The two sides share no series that can be compared; ``comparison`` says which series each side has."""

    def __init__(self, message: str, comparison: "SeriesComparison") -> None:
        super().__init__(message)
        self.comparison = comparison


@dataclass(frozen=True)
class Bootstrap:
    """How to run the hierarchical bootstrap (spec §6): replicates and seed (None: fresh entropy)."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int | None = None


@dataclass(frozen=True)
class SeriesComparison:
    """Two sides compared: the rows, worst first, and the series that could not be compared."""

    rows: list[ComparisonRow]
    only_baseline: list[str]
    only_candidate: list[str]
    not_compared: list[str]


def compare_series(baseline: Sequence[Series], candidate: Sequence[Series], *, alpha: float = ALPHA,
                   threshold: float | None = None, bootstrap: Bootstrap | None = None, qvalues: bool = True,
                   method: str = METHOD_PAIRWISE) -> SeriesComparison:
    """Compare every series present on both sides: Welch, Fieller and the verdict (spec §5–§7).

    Series are matched by (benchmark, metric); the candidate's threshold, direction and confidence level
    apply. ``qvalues`` adds Benjamini–Hochberg q-values across the rows (the comparisons of a run);
    without them the p-value decides significance. ``bootstrap`` adds the hierarchical bootstrap interval
    where both sides kept samples, and the verdict is then drawn from it.

    Raises
    ------
    NothingToCompare
        If no series is on both sides with at least 2 subsessions each.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1; got {alpha}.")
    if threshold is not None and not threshold >= 0.0:
        raise ValueError(f"the threshold must be at least 0; got {threshold}.")
    old = {series.key: series for series in baseline}
    new = {series.key: series for series in candidate}
    common = sorted(old.keys() & new.keys())
    comparable = [key for key in common if old[key].summary.n >= 2 and new[key].summary.n >= 2]
    unmatched = {
        "only_baseline": [old[key].label for key in sorted(old.keys() - new.keys())],
        "only_candidate": [new[key].label for key in sorted(new.keys() - old.keys())],
        "not_compared": [old[key].label for key in sorted(set(common) - set(comparable))],
    }
    if not comparable:
        raise NothingToCompare(_nothing_to_compare(old, new, common), SeriesComparison(rows=[], **unmatched))
    pairs = [(old[key], new[key]) for key in comparable]
    if threshold is not None:
        pairs = [(base, replace(cand, threshold=threshold)) for base, cand in pairs]
    rows = pairwise_rows(pairs, method=method, alpha=alpha, bootstrap=bootstrap)
    rows = with_suspected(with_qvalues(rows) if qvalues else rows)
    return SeriesComparison(rows=sorted(rows, key=lambda row: row.sort_key), **unmatched)


def pairwise_rows(pairs: Sequence[tuple[Series, Series]], *, method: str, alpha: float = ALPHA,
                  bootstrap: Bootstrap | None = None,
                  context: Callable[[Series, Series], dict] | None = None,
                  run_noise: Sequence[tuple[float, float] | None] | None = None) -> list[ComparisonRow]:
    """One row per (baseline, candidate) pair, in their order, from one vectorized call (each pair at its
    candidate's level, threshold and direction). Every side needs at least 2 subsessions.

    ``context`` adds fields to each row (identity, inputs) from its pair. ``run_noise``, where each pair is
    two runs (a pull request's head and its base): per pair, the run-to-run variance component and its
    degrees of freedom that the series' nightly history measured, carried into the test and the interval
    (spec §8, revision 2026-11-26); None where nothing measured it. Such a pair's difference may be the two
    runs' and not the code's, so its row claims no change either way (:func:`without_run_noise`).
    """
    if not pairs:
        return []
    old = [pair[0].summary for pair in pairs]
    new = [pair[1].summary for pair in pairs]
    levels = np.array([pair[1].confidence_level for pair in pairs])
    thresholds = np.array([pair[1].threshold for pair in pairs])
    directions = np.array([pair[1].direction for pair in pairs], dtype=object)
    carried = {}
    if run_noise is not None:
        # A pair without a measured component is computed on its subsessions (a zero component) and then
        # claims nothing.
        carried = {"run_variance": np.array([0.0 if noise is None else noise[0] for noise in run_noise]),
                   "run_df": np.array([1.0 if noise is None else noise[1] for noise in run_noise])}
    result = stats.compare_summaries(*summary_arrays(new), *summary_arrays(old), threshold=thresholds,
                                     direction=directions, confidence=levels, **carried)
    old_widths = half_widths(old, levels)
    new_widths = half_widths(new, levels)
    columns = {name: values.tolist() for name, values in result_columns(result, (
        "ratio", "low", "high", "bounded", "statistic", "pvalue", "df", "conservative", "verdict")).items()}
    rows = []
    for i, (base, cand) in enumerate(pairs):
        extra = context(base, cand) if context else {}
        if columns["conservative"][i]:
            extra = {**extra, "note": SMALL_SIDES, "inputs": {**extra.get("inputs", {}), "df_rule": "hsu"}}
        resampled = bootstrap_ratio(base, cand, confidence=float(levels[i]), options=bootstrap)
        verdict = columns["verdict"][i] if resampled is None else stats.verdict(
            resampled.low, resampled.high, threshold=thresholds[i], direction=cand.direction)
        row = comparison_row(
            cand, method=method, alpha=alpha, numbers={name: values[i] for name, values in columns.items()},
            verdict=str(verdict), baseline=side_of(base, old_widths[i]), candidate=side_of(cand, new_widths[i]),
            bootstrap=None if resampled is None else interval_of(resampled),
            verdict_from="fieller" if resampled is None else "bootstrap", **extra)
        if run_noise is not None:
            noise = run_noise[i]
            row = without_run_noise(row) if noise is None else replace(row, inputs={
                **row.inputs, "run_variance": noise[0], "run_df": noise[1]})
        rows.append(row)
    return rows


RUN_NOISE_UNKNOWN = ("one run each: run-to-run noise unknown (no nightly history of this series on this machine), "
                     "so no change is claimed; an interleaved A/B session or repeated runs would tell")


def without_run_noise(row: ComparisonRow) -> ComparisonRow:
    """A comparison of two runs whose run-to-run noise nothing measured: its interval and p-value see only the
    variation inside each run, which misses the runs' own levels (two runs of unchanged code differed by +19.8%
    at p = 0.001, spec §8), so it is *inconclusive*, with no p-value to call it significant by (the within-run
    one is kept in its inputs)."""
    return replace(row, verdict=str(stats.Verdict.INCONCLUSIVE), pvalue=None, note=RUN_NOISE_UNKNOWN,
                   inputs={**row.inputs, RUN_NOISE_UNKNOWN_KEY: row.pvalue})


SMALL_SIDES = ("a side has fewer than 5 subsessions: ν = min(n) − 1 (Hsu), for the test and the interval, "
               "since Welch's ν would overstate the certainty")


BOOTSTRAP_WITHIN_RUNS = ("the two runs' readings resampled: run-to-run noise is not in this interval, so it decides "
                         "nothing; the pairwise row is the verdict")


def with_qvalues(rows: Sequence[ComparisonRow]) -> list[ComparisonRow]:
    """The rows with their q-values (:func:`qvalues_by_method`)."""
    return [row if qvalue is None else replace(row, qvalue=qvalue)
            for row, qvalue in zip(rows, qvalues_by_method([row.method for row in rows], [row.pvalue for row in rows]))]


def with_suspected(rows: Sequence[ComparisonRow]) -> list[ComparisonRow]:
    """The rows with *inconclusive* split (:func:`suspected_verdict`)."""
    return [replace(row, verdict=verdict) if (verdict := suspected_verdict(
        row.verdict, ratio=row.ratio, threshold=row.threshold, direction=row.direction,
        significant=row.significant)) != row.verdict else row for row in rows]


def comparison_row(series: Series, *, method: str, alpha: float, numbers: dict, verdict: str, baseline: Side,
                   candidate: Side, **extra) -> ComparisonRow:
    """A computed row of `series` (the candidate): ``numbers`` are one entry of :func:`result_columns`' columns;
    a non-finite ratio or statistic becomes None, the limits of an unbounded interval too."""
    bounded = bool(numbers["bounded"])
    ratio, statistic = float(numbers["ratio"]), float(numbers["statistic"])
    return ComparisonRow(
        **identity(series), method=method, baseline=baseline, candidate=candidate,
        ratio=ratio if math.isfinite(ratio) else None,
        low=float(numbers["low"]) if bounded else None, high=float(numbers["high"]) if bounded else None,
        bounded=bounded, statistic=statistic if math.isfinite(statistic) else None, df=float(numbers["df"]),
        pvalue=float(numbers["pvalue"]), qvalue=None, verdict=verdict, threshold=float(series.threshold),
        confidence_level=float(series.confidence_level), alpha=alpha, **extra)


def identity(series: Series) -> dict:
    """The row fields that name a series."""
    return {"benchmark": series.benchmark, "metric": series.metric, "unit": series.unit,
            "direction": series.direction, "metric_id": series.metric_id, "display_unit": series.display_unit}


def result_columns(result, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The named fields of a vectorized :mod:`results.stats` result, each as an array of one entry per series."""
    shape = np.shape(np.atleast_1d(result.ratio))
    return {name: np.broadcast_to(np.asarray(getattr(result, name), dtype=object if name == "verdict" else None),
                                  shape) for name in names}


def summary_arrays(summaries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means, variances and counts of summaries, as the arrays :mod:`results.stats` takes."""
    return (np.array([s.mean for s in summaries], dtype=float), np.array([s.variance for s in summaries], dtype=float),
            np.array([s.n for s in summaries], dtype=np.int64))


def half_widths(summaries, levels: np.ndarray) -> list[float | None]:
    """Half-width of each mean's interval at its level (spec §3); None where there are fewer than 2 units."""
    return half_width(np.array([s.variance for s in summaries], dtype=float),
                      np.array([s.n for s in summaries], dtype=float), levels)


def half_width(variances, counts, levels) -> list[float | None]:
    """:func:`half_widths` of variances and counts given apart."""
    variances, counts = np.asarray(variances, dtype=float), np.asarray(counts, dtype=float)
    levels = np.broadcast_to(np.asarray(levels, dtype=float), counts.shape)
    widths = np.full(counts.shape, np.nan)
    usable = counts >= 2
    if usable.any():
        widths[usable] = np.atleast_1d(stats.mean_interval(
            0.0, variances[usable], counts[usable].astype(np.int64), confidence=levels[usable]).half_width)
    return [None if np.isnan(width) else float(width) for width in widths]


def side_of(series: Series, half_width: float | None) -> Side:
    """A series as a row's side, with the half-width of its mean's interval."""
    summary = series.summary
    return Side(mean=summary.mean, variance=summary.variance, n=summary.n, subsession_size=summary.subsession_size,
                half_width=half_width, independent=summary.independent)


def interval_of(ratio: stats.RatioResult) -> Interval:
    """A ratio result as a row's interval (no limits when unbounded)."""
    bounded = bool(ratio.bounded)
    return Interval(ratio=float(ratio.ratio) if np.isfinite(ratio.ratio) else None,
                    low=float(ratio.low) if bounded else None, high=float(ratio.high) if bounded else None,
                    bounded=bounded)


def bootstrap_ratio(baseline: Series, candidate: Series, *, confidence: float,
                    options: Bootstrap | None) -> stats.RatioResult | None:
    """The hierarchical bootstrap ratio of two series' raw samples (spec §6); None without ``options``, without
    samples on a side, or where a level has fewer than 2 units to resample."""
    if options is None or baseline.samples is None or candidate.samples is None:
        return None
    # One top-level unit (a single process run) says nothing of the variation between units.
    if baseline.samples.shape[0] < 2 or candidate.samples.shape[0] < 2:
        return None
    old, new = _hierarchy(baseline), _hierarchy(candidate)
    if old.ndim != new.ndim or min(old.shape) < 2 or min(new.shape) < 2:
        return None
    # One stream per series, keyed by its name, so a series' interval does not depend on the others.
    seed = None if options.seed is None else [options.seed, zlib.crc32(repr(candidate.key).encode())]
    return stats.ratio_bootstrap(new, old, confidence=confidence, n_resamples=options.resamples,
                                 rng=np.random.default_rng(seed))


def _hierarchy(series: Series) -> np.ndarray:
    """Raw samples with the subsessions as their top level (spec §6: for one-level data the top level
    is the subsession), so autocorrelated samples are not resampled as if independent."""
    size = series.summary.subsession_size
    # A level with one unit (e.g. pyperf runs of one value each) adds nothing, and cannot be resampled.
    samples = series.samples.squeeze()
    if samples.ndim > 1 or size < 2 or samples.size < 2 * size:
        return samples
    blocks = samples.size // size
    # Drop the oldest remainder, as subsession analysis does (spec §2).
    return samples[samples.size - blocks * size:].reshape(blocks, size)


def _nothing_to_compare(old: dict, new: dict, common: list) -> str:
    if common:
        return ("no common series has at least 2 subsessions on both sides: "
                + ", ".join(old[key].label for key in common))
    return (f"no common series: the baseline has {_listed(old)}; the candidate has {_listed(new)} "
            "(series are matched by benchmark and metric name)")


def _listed(side: dict, *, limit: int = 5) -> str:
    labels = [series.label for series in side.values()]
    more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
    return ", ".join(labels[:limit]) + more if labels else "none"
