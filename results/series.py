"""Series to compare: one (benchmark, metric) of one side, from stored results or from a results file.

:func:`read_series` reads any importer format (or plain numbers, one per line); :mod:`results.comparisons`
reads stored results as series. :mod:`results.pairwise_rows` compares them. Nothing here needs Django, queries the
database or writes.
"""

import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from . import stats
from .ingest import FORMATS
from .ingest.base import ImportFormatError
from .result_schema import DEFAULT_THRESHOLD, ResultIn, describe_errors, samples_array, summarize_result

PLAIN = "numbers"
"""The format name of a plain-number file: one value per line, no unit, lower is better."""
AUTO = "auto"
INPUT_FORMATS = (AUTO, *sorted(FORMATS), PLAIN)
_RESULTS = TypeAdapter(list[ResultIn])


@dataclass(frozen=True)
class Series:
    """One (benchmark, metric) of one side, summarised as stored, with its raw samples where kept."""

    benchmark: str
    metric: str
    unit: str
    direction: str
    threshold: float
    confidence_level: float
    summary: stats.SampleSummary
    samples: np.ndarray | None
    metric_id: int | None = None
    result_id: int | None = None
    run_id: int | None = None
    display_unit: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.benchmark, self.metric

    @property
    def label(self) -> str:
        return f"{self.benchmark} ({self.metric})"


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
                  threshold=DEFAULT_THRESHOLD, confidence_level=0.95, summary=stats.summarize_samples(samples),
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
               threshold=DEFAULT_THRESHOLD, confidence_level=result.confidence_level, summary=summarize_result(result),
               samples=result.samples)
        for result in results
    ]
    keys = [item.key for item in series]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise ImportFormatError(f"{format_name}: benchmark {duplicated[0][0]!r} metric {duplicated[0][1]!r} "
                                "appears more than once.")
    return series

