"""Two sets of results compared series by series, and the comparison as a table (text, JSON, Markdown).

The series come from stored runs (:func:`series_from_results`) or from result files in any importer
format (:func:`read_series`); :func:`compare` matches them by (benchmark, metric) and computes every
number with :mod:`results.stats` (spec §5–§7). Nothing here queries the database or does I/O, so the
``compare`` command, the views and the pull-request review share it.
"""

import json
import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from . import stats
from .ingest import FORMATS
from .ingest.base import ImportFormatError, json_safe
from .models import Metric, Result
from .schemas import ResultIn, describe_errors, samples_array
from .services import Summary, summarize_samples

PLAIN = "numbers"
"""The format name of a plain-number file: one value per line, no unit, lower is better."""
AUTO = "auto"
INPUT_FORMATS = (AUTO, *sorted(FORMATS), PLAIN)
DEFAULT_THRESHOLD: float = Metric._meta.get_field("threshold").default
DEFAULT_RESAMPLES = 10_000
_RESULTS = TypeAdapter(list[ResultIn])
# Markdown lists the decided series worst first.
_SEVERITY = {stats.Verdict.REGRESSION: 0, stats.Verdict.IMPROVEMENT: 1, stats.Verdict.NO_CHANGE: 2,
             stats.Verdict.INCONCLUSIVE: 3}
_TIME_PREFIXES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


class NothingToCompare(ValueError):
    """The two sides share no series that can be compared."""


@dataclass(frozen=True)
class Series:
    """One (benchmark, metric) of one side, summarised as stored, with its raw samples where kept."""

    benchmark: str
    metric: str
    unit: str
    direction: str
    threshold: float
    confidence_level: float
    summary: Summary
    samples: np.ndarray | None

    @property
    def key(self) -> tuple[str, str]:
        return self.benchmark, self.metric

    @property
    def label(self) -> str:
        return f"{self.benchmark} ({self.metric})"


@dataclass(frozen=True)
class Side:
    """One side of a row: the subsession statistics and the half-width of the mean's interval (spec §3)."""

    mean: float
    variance: float
    n: int
    subsession_size: int
    half_width: float
    independent: bool


@dataclass(frozen=True)
class Row:
    """Candidate against baseline for one series.

    ``fieller`` is the ratio interval from the subsession statistics; ``bootstrap`` the hierarchical
    bootstrap interval on the raw samples, when asked for and both sides kept them. The verdict is
    taken from the bootstrap interval where there is one (it makes no normality assumption), else
    from Fieller's. ``statistic`` is Welch's t of candidate minus baseline.
    """

    benchmark: str
    metric: str
    unit: str
    direction: str
    threshold: float
    confidence_level: float
    alpha: float
    baseline: Side
    candidate: Side
    fieller: stats.RatioResult
    bootstrap: stats.RatioResult | None
    statistic: float
    df: float
    pvalue: float
    verdict: stats.Verdict

    @property
    def interval(self) -> stats.RatioResult:
        """The ratio interval the verdict was drawn from."""
        return self.fieller if self.bootstrap is None else self.bootstrap

    @property
    def high_pvalue(self) -> bool:
        """p ≥ α: the difference is not statistically significant (spec §7)."""
        return self.pvalue >= self.alpha


@dataclass(frozen=True)
class Report:
    """The rows, sorted by name, and the series that could not be compared."""

    rows: list[Row]
    only_baseline: list[str]
    only_candidate: list[str]
    not_compared: list[str]


@dataclass(frozen=True)
class Bootstrap:
    """How to run the hierarchical bootstrap (spec §6): replicates and seed (None: fresh entropy)."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int | None = None


# Series from stored results and from files.

def series_from_results(results: Iterable[Result], *, with_samples: bool) -> list[Series]:
    """Stored results as series, with their metric's threshold, direction and confidence level.

    ``with_samples=False`` leaves the raw samples untouched, so a queryset may defer them.
    """
    return [
        Series(
            benchmark=result.metric.benchmark.name, metric=result.metric.name, unit=result.metric.unit,
            direction=result.metric.direction, threshold=result.metric.threshold,
            confidence_level=result.metric.confidence_level,
            summary=Summary(mean=result.mean, subsession_size=result.subsession_size, variance=result.variance,
                            n=result.n, sample_count=result.sample_count, ci_low=result.ci_low,
                            ci_high=result.ci_high, autocorrelation=result.autocorrelation,
                            independent=result.independent),
            samples=result.samples_array() if with_samples else None,
        )
        for result in results
    ]


def read_series(content: bytes, *, format_name: str, name: str) -> tuple[str, list[Series]]:
    """Parse a results file into series; returns the format it was read as and the series.

    Parameters
    ----------
    content : bytes
        The file's content.
    format_name : str
        One of :data:`INPUT_FORMATS`; ``"auto"`` tells the format by :func:`detect_format`.
    name : str
        The series name of a plain-number file (the file's stem).

    Raises
    ------
    ImportFormatError
        If the format cannot be told, or the content is not valid in it; the message names the format.
    """
    if format_name == AUTO:
        format_name = detect_format(content)
    if format_name == PLAIN:
        return format_name, [_plain_series(content, name=name)]
    if format_name not in FORMATS:
        raise ImportFormatError(f"unknown format {format_name!r}; choose one of {', '.join(INPUT_FORMATS)}.")
    return format_name, _document_series(FORMATS[format_name](content), format_name=format_name)


def detect_format(content: bytes) -> str:
    """Tell a results file's format by its top-level keys (plain numbers when it is not JSON)."""
    # Only pyperf writes gzip-compressed result files.
    if content[:2] == b"\x1f\x8b":
        return "pyperf"
    try:
        document = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return PLAIN
    # A file holding one number is valid JSON, and still a plain-number file.
    if isinstance(document, int | float):
        return PLAIN
    if isinstance(document, dict):
        results = document.get("results")
        if isinstance(results, list):
            return "hyperfine" if _first_has(results, "command") else "native"
        benchmarks = document.get("benchmarks")
        if isinstance(benchmarks, list):
            if "context" in document:
                return "google-benchmark"
            if "machine_info" in document or _first_has(benchmarks, "stats"):
                return "pytest-benchmark"
            if _first_has(benchmarks, "runs"):
                return "pyperf"
    raise ImportFormatError(
        "cannot tell the format from the file's keys; name it (one of "
        f"{', '.join(format_name for format_name in INPUT_FORMATS if format_name != AUTO)})."
    )


def pair_plain_files(baseline: list[Series], candidate: list[Series]) -> tuple[list[Series], list[Series]]:
    """Give the series of two plain-number files one name, so they are compared with each other.

    Each file holds one series named after the file, and ``old.txt`` against ``new.txt`` means
    "compare these two"; the row is named ``old vs new``.
    """
    (old,), (new,) = baseline, candidate
    if old.benchmark == new.benchmark:
        return baseline, candidate
    name = f"{old.benchmark} vs {new.benchmark}"
    return [replace(old, benchmark=name)], [replace(new, benchmark=name)]


def _first_has(entries: list, key: str) -> bool:
    return bool(entries) and isinstance(entries[0], dict) and key in entries[0]


def _plain_series(content: bytes, *, name: str) -> Series:
    try:
        text = content.decode()
    except UnicodeDecodeError:
        raise ImportFormatError(f"{PLAIN}: the file is neither JSON nor UTF-8 text.") from None
    values = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            values.append(float(line))
        except ValueError:
            raise ImportFormatError(f"{PLAIN}: line {number}: {line[:40]!r} is not a number.") from None
    try:
        samples = samples_array(values)
    except ValueError as error:
        raise ImportFormatError(f"{PLAIN}: the values {error}.") from None
    return Series(benchmark=name, metric="value", unit="", direction=stats.Direction.LOWER_IS_BETTER.value,
                  threshold=DEFAULT_THRESHOLD, confidence_level=0.95, summary=summarize_samples(samples),
                  samples=samples)


def _document_series(document: dict[str, Any], *, format_name: str) -> list[Series]:
    """The results of a (partial) native document as series; a given summary is used as given."""
    if not isinstance(document.get("results"), list) or not document["results"]:
        raise ImportFormatError(f"{format_name}: the document has no 'results' list.")
    try:
        results = _RESULTS.validate_python(document["results"])
    except ValidationError as error:
        errors = [{**item, "loc": ("results", *item["loc"])} for item in error.errors()]
        raise ImportFormatError(f"{format_name}: {describe_errors(errors)['detail']}") from None
    series = [
        Series(benchmark=result.benchmark, metric=result.metric, unit=result.unit, direction=result.direction.value,
               threshold=DEFAULT_THRESHOLD, confidence_level=result.confidence_level, summary=_summary(result),
               samples=result.samples)
        for result in results
    ]
    keys = [item.key for item in series]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise ImportFormatError(f"{format_name}: benchmark {duplicated[0][0]!r} metric {duplicated[0][1]!r} "
                                "appears more than once.")
    return series


def _summary(result: ResultIn) -> Summary:
    if result.summary is None:
        return summarize_samples(result.samples)
    given = result.summary
    return Summary(mean=given.mean, subsession_size=given.subsession_size, variance=given.variance, n=given.n,
                   sample_count=given.n * given.subsession_size, ci_low=None, ci_high=None, autocorrelation=None,
                   independent=True)


# The comparison.

def compare(baseline: Sequence[Series], candidate: Sequence[Series], *, alpha: float = 0.05,
            threshold: float | None = None, bootstrap: Bootstrap | None = None) -> Report:
    """Compare every series present on both sides: Welch, Fieller and the verdict (spec §5–§7).

    Parameters
    ----------
    baseline, candidate : sequence of Series
        Matched by (benchmark, metric); the candidate's threshold, direction and confidence level apply
        (for stored runs both are the metric's).
    alpha : float, optional
        Significance level: a p-value at or above it is flagged as high.
    threshold : float, optional
        θ for every series, overriding each series' own.
    bootstrap : Bootstrap, optional
        Also compute the hierarchical bootstrap interval where both sides kept raw samples.

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
    # Welch's test and the intervals need a variance on each side.
    comparable = [key for key in common if old[key].summary.n >= 2 and new[key].summary.n >= 2]
    skipped = sorted(set(common) - set(comparable))
    if not comparable:
        raise NothingToCompare(_nothing_to_compare(old, new, common))
    pairs = [(old[key], new[key]) for key in comparable]
    thresholds = np.array([threshold if threshold is not None else pair[1].threshold for pair in pairs])
    levels = np.array([pair[1].confidence_level for pair in pairs])
    return Report(
        rows=_rows(pairs, thresholds, levels, alpha=alpha, bootstrap=bootstrap),
        only_baseline=[old[key].label for key in sorted(old.keys() - new.keys())],
        only_candidate=[new[key].label for key in sorted(new.keys() - old.keys())],
        not_compared=[old[key].label for key in skipped],
    )


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


def _rows(pairs: list[tuple[Series, Series]], thresholds: np.ndarray, levels: np.ndarray, *, alpha: float,
          bootstrap: Bootstrap | None) -> list[Row]:
    """One row per pair, each at its candidate's confidence level: one vectorized call for all of them."""
    old = [pair[0].summary for pair in pairs]
    new = [pair[1].summary for pair in pairs]
    directions = np.array([pair[1].direction for pair in pairs], dtype=object)
    result = stats.compare_summaries(
        *_statistics(new), *_statistics(old), threshold=thresholds, direction=directions, confidence=levels)
    old_widths = np.atleast_1d(stats.mean_interval(*_statistics(old), confidence=levels).half_width)
    new_widths = np.atleast_1d(stats.mean_interval(*_statistics(new), confidence=levels).half_width)
    fields = {name: np.atleast_1d(getattr(result, name))
              for name in ("ratio", "low", "high", "bounded", "statistic", "pvalue", "df", "verdict")}
    rows = []
    for i, (baseline, candidate) in enumerate(pairs):
        confidence = float(levels[i])
        fieller = stats.RatioResult(ratio=float(fields["ratio"][i]), low=float(fields["low"][i]),
                                    high=float(fields["high"][i]), bounded=bool(fields["bounded"][i]),
                                    confidence_level=confidence)
        resampled = _bootstrap(baseline, candidate, confidence=confidence, options=bootstrap)
        decided = fields["verdict"][i] if resampled is None else stats.verdict(
            resampled.low, resampled.high, threshold=thresholds[i], direction=candidate.direction)
        rows.append(Row(
            benchmark=candidate.benchmark, metric=candidate.metric, unit=candidate.unit,
            direction=candidate.direction, threshold=float(thresholds[i]), confidence_level=confidence, alpha=alpha,
            baseline=_side(baseline.summary, old_widths[i]), candidate=_side(candidate.summary, new_widths[i]),
            fieller=fieller, bootstrap=resampled, statistic=float(fields["statistic"][i]),
            df=float(fields["df"][i]), pvalue=float(fields["pvalue"][i]), verdict=stats.Verdict(decided),
        ))
    return rows


def _statistics(summaries: list[Summary]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([s.mean for s in summaries]), np.array([s.variance for s in summaries]),
            np.array([s.n for s in summaries]))


def _side(summary: Summary, half_width: float) -> Side:
    return Side(mean=summary.mean, variance=summary.variance, n=summary.n, subsession_size=summary.subsession_size,
                half_width=float(half_width), independent=summary.independent)


def _bootstrap(baseline: Series, candidate: Series, *, confidence: float,
               options: Bootstrap | None) -> stats.RatioResult | None:
    if options is None or baseline.samples is None or candidate.samples is None:
        return None
    # One stream per series, keyed by its name, so a series' interval does not depend on the others.
    seed = None if options.seed is None else [options.seed, zlib.crc32(repr(candidate.key).encode())]
    return stats.ratio_bootstrap(
        _hierarchy(candidate), _hierarchy(baseline), confidence=confidence, n_resamples=options.resamples,
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


# Formatting.

def text_table(rows: Sequence[Row], *, only_baseline: Sequence[str] = (), only_candidate: Sequence[str] = (),
               not_compared: Sequence[str] = ()) -> str:
    """A benchstat-like aligned table, the unmatched series and a legend."""
    bootstrapped = any(row.bootstrap is not None for row in rows)
    level = _level(rows)
    header = ["benchmark", "metric", "baseline", "candidate", f"change [{level} CI]"]
    header += [f"bootstrap [{level} CI]"] if bootstrapped else []
    header += ["p", "n", "verdict"]
    lines = [header]
    for row in rows:
        scale, unit = _scaled_unit(row.baseline.mean, row.unit)
        cells = [row.benchmark, row.metric, _quantity(row.baseline, scale, unit),
                 _quantity(row.candidate, scale, unit), _change(row.fieller)]
        cells += [_change(row.bootstrap) if row.bootstrap is not None else "-"] if bootstrapped else []
        cells += [_pvalue(row), _counts(row), str(row.verdict)]
        lines.append(cells)
    text = _aligned(lines, right={2, 3, len(header) - 3, len(header) - 2})
    extras = [f"{title}: {', '.join(labels)}" for title, labels in (
        ("only in baseline", only_baseline), ("only in candidate", only_candidate),
        ("not compared (fewer than 2 subsessions)", not_compared)) if labels]
    return "\n".join([text, "", *extras, *([""] if extras else []), _legend(rows, bootstrapped)]) + "\n"


def json_rows(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Every number of every row; unbounded limits and infinite statistics become null (strict JSON)."""
    return [json_safe({
        "benchmark": row.benchmark, "metric": row.metric, "unit": row.unit, "direction": row.direction,
        "threshold": row.threshold, "confidence_level": row.confidence_level, "alpha": row.alpha,
        "ratio": row.fieller.ratio, "low": row.fieller.low, "high": row.fieller.high, "bounded": row.fieller.bounded,
        "bootstrap": None if row.bootstrap is None else {
            "ratio": row.bootstrap.ratio, "low": row.bootstrap.low, "high": row.bootstrap.high,
            "bounded": row.bootstrap.bounded},
        "statistic": row.statistic, "df": row.df, "pvalue": row.pvalue, "high_pvalue": row.high_pvalue,
        "verdict": str(row.verdict), "verdict_from": "fieller" if row.bootstrap is None else "bootstrap",
        "baseline": vars(row.baseline), "candidate": vars(row.candidate),
    }) for row in rows]


def markdown_table(rows: Sequence[Row], *, only_baseline: Sequence[str] = (), only_candidate: Sequence[str] = (),
                   not_compared: Sequence[str] = ()) -> str:
    """GitHub-flavoured Markdown: the decided series worst first, then the inconclusive ones apart."""
    decided = sorted((row for row in rows if row.verdict != stats.Verdict.INCONCLUSIVE),
                     key=lambda row: _SEVERITY[row.verdict])
    inconclusive = [row for row in rows if row.verdict == stats.Verdict.INCONCLUSIVE]
    parts = [_markdown_rows(decided) if decided else "No series was decided."]
    if inconclusive:
        parts += ["**Inconclusive** (the interval straddles the threshold; more data would decide):",
                  _markdown_rows(inconclusive)]
    parts += [f"{title}: {', '.join(_markdown_cell(label) for label in labels)}" for title, labels in (
        ("Only in the baseline", only_baseline), ("Only in the candidate", only_candidate),
        ("Not compared (fewer than 2 subsessions)", not_compared)) if labels]
    if any(row.high_pvalue for row in rows):
        parts.append(f"~ p ≥ α = {rows[0].alpha:g}: not statistically significant.")
    return "\n\n".join(parts) + "\n"


def _markdown_rows(rows: Sequence[Row]) -> str:
    lines = [f"| Benchmark | Change [{_level(rows)} CI] | p-value | Verdict |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {_markdown_cell(f'{row.benchmark} ({row.metric})')} | {_change(row.interval)} | {_pvalue(row)} "
              f"| {row.verdict} |" for row in rows]
    return "\n".join(lines)


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _level(rows: Sequence[Row]) -> str:
    """The confidence level shared by all rows, as a percentage (the metrics may differ)."""
    levels = {row.confidence_level for row in rows}
    return f"{levels.pop() * 100:g}%" if len(levels) == 1 else "per-metric"


def _change(interval: stats.RatioResult) -> str:
    if not math.isfinite(interval.ratio):
        return "undefined (baseline mean 0)"
    return stats.format_change(interval.ratio, interval.low, interval.high)


def _pvalue(row: Row) -> str:
    shown = "<0.001" if row.pvalue < 0.001 else f"{row.pvalue:.3f}"
    return f"{shown} ~" if row.high_pvalue else shown


def _counts(row: Row) -> str:
    flag = "" if row.baseline.independent and row.candidate.independent else " !"
    return f"{row.baseline.n}+{row.candidate.n}{flag}"


def _scaled_unit(value: float, unit: str) -> tuple[float, str]:
    """Seconds get the prefix that suits ``value``, as benchstat does; other units are shown as they are."""
    if unit != "s":
        return 1.0, unit
    return next(((factor, prefix) for factor, prefix in _TIME_PREFIXES if abs(value) >= factor), _TIME_PREFIXES[-1])


def _quantity(side: Side, scale: float, unit: str) -> str:
    return f"{side.mean / scale:.4g} ± {side.half_width / scale:.2g} {unit}".rstrip()


def _aligned(lines: list[list[str]], *, right: set[int]) -> str:
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.rjust(width) if column in right else cell.ljust(width)
                  for column, (cell, width) in enumerate(zip(line, widths))).rstrip()
        for line in lines
    )


def _legend(rows: Sequence[Row], bootstrapped: bool) -> str:
    parts = [(f"change: candidate/baseline − 1 with Fieller's interval; baseline, candidate: mean ± "
              f"half-width of its {_level(rows)} interval; p: Welch's t-test; n: subsessions")]
    if bootstrapped:
        parts.append("the verdict follows the bootstrap interval where there is one")
    if any(row.high_pvalue for row in rows):
        parts.append(f"~ p ≥ {rows[0].alpha:g}: not significant")
    if any(not (row.baseline.independent and row.candidate.independent) for row in rows):
        parts.append("! independence not established (too few samples, or autocorrelated at every subsession "
                     "size): the interval may be too narrow")
    return "; ".join(parts) + "."
