"""Google Benchmark JSON files (``--benchmark_format=json`` or ``--benchmark_out=FILE``).

A file is ``{"context": {...}, "benchmarks": [row, ...]}``. Each row is one repetition
(``"run_type": "iteration"``) or one aggregate over the repetitions (``"run_type":
"aggregate"``: ``_mean``, ``_median``, ``_stddev``, ``_cv``, complexity ``_BigO``/``_RMS``,
user-defined statistics). An iteration row's ``real_time`` and ``cpu_time`` are per
iteration, in ``time_unit``.

Every benchmark (keyed by ``run_name``, the name without the aggregate suffix) gives two
results, ``real_time`` and ``cpu_time``, in seconds, with one sample per repetition. The
aggregate rows are not imported since they are functions of the repetitions — except when
the file holds no iteration rows for a benchmark (``--benchmark_report_aggregates_only``
or ``--benchmark_display_aggregates_only`` with JSON on stdout): then ``_mean`` and
``_stddev`` give a ``summary`` with n = ``repetitions``.

A benchmark with a row that reports an error (``error_occurred``, or ``skipped`` = 1, "skipped
with error", from version 1.8) failed: its ``real_time`` and ``cpu_time`` are failed results with
the error message, whatever its other repetitions measured. A benchmark skipped on purpose
(``skipped`` = 2, "skipped with message") is no result: it is listed in
``environment["skipped_benchmarks"]`` with its message. The library writes ``NaN`` and
``Infinity`` for non-finite doubles (e.g. a rate counter over zero time); such a time is an
error, such a counter or context value becomes ``null``.
"""

import copy
from datetime import datetime
from typing import Any

from .base import ImportFormatError, is_number, json_safe, load_benchmarks_report

FORMAT_NAME = "google-benchmark"
# benchmark::internal::Skipped: 1 is SkipWithError, 2 SkipWithMessage (an intended skip).
_SKIPPED_WITH_ERROR = 1

_SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_METRICS = ("real_time", "cpu_time")
# Row keys that are not user counters.
_ROW_KEYS = frozenset(
    {
        "name",
        "family_index",
        "per_family_instance_index",
        "run_name",
        "run_type",
        "repetitions",
        "repetition_index",
        "threads",
        "aggregate_name",
        "aggregate_unit",
        "error_occurred",
        "error_message",
        "skipped",
        "skip_message",
        "iterations",
        "real_time",
        "cpu_time",
        "time_unit",
        "label",
    }
)


def parse(content: bytes | str) -> dict[str, Any]:
    """Turn a Google Benchmark JSON file into a partial native document (two results per benchmark)."""
    report = load_benchmarks_report(content, format_name=FORMAT_NAME)
    context = report.get("context", {})
    if not isinstance(context, dict):
        raise ImportFormatError(f"{FORMAT_NAME}: 'context' must be an object.")

    groups: dict[str, dict[str, Any]] = {}  # run_name -> {"rows": [...], "aggregates": {...}, "skipped": msg}
    for index, row in enumerate(report["benchmarks"]):
        if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not row["name"]:
            raise ImportFormatError(f"{FORMAT_NAME}: row #{index} of 'benchmarks' must be an object with a 'name'.")
        run_name = row.get("run_name", row["name"])
        if not isinstance(run_name, str) or not run_name:
            raise ImportFormatError(f"{FORMAT_NAME}: row {row['name']!r} has an empty 'run_name'.")
        group = groups.setdefault(run_name, {"rows": [], "aggregates": {}, "skipped": None, "error": None})
        if row.get("error_occurred") or row.get("skipped") == _SKIPPED_WITH_ERROR:
            group["error"] = str(row.get("error_message") or row.get("skip_message") or "")
        elif row.get("skipped"):
            group["skipped"] = str(row.get("skip_message") or row.get("error_message") or "skipped")
        elif row.get("run_type", "iteration") == "aggregate" or "aggregate_name" in row:
            group["aggregates"][str(row.get("aggregate_name"))] = row
        else:
            group["rows"].append(row)

    results = []
    skipped = {}
    for run_name, group in groups.items():
        if group["error"] is not None:
            results.extend({"benchmark": run_name, "metric": metric, "failed": True, "error": group["error"]}
                           for metric in _METRICS)
        elif group["rows"]:
            results.extend(_from_iterations(run_name, group["rows"]))
        elif "mean" in group["aggregates"] and "stddev" in group["aggregates"]:
            results.extend(_from_aggregates(run_name, group["aggregates"]))
        elif group["skipped"] is not None:
            skipped[run_name] = group["skipped"]
        else:
            raise ImportFormatError(
                f"{FORMAT_NAME}: benchmark {run_name!r} has no values "
                "(neither iteration rows nor '_mean' and '_stddev' aggregates)."
            )
    if not results:
        reasons = "; ".join(f"{name}: {message}" for name, message in skipped.items())
        raise ImportFormatError(f"{FORMAT_NAME}: no benchmark has values (all were skipped: {reasons}).")

    environment = {key: value for key, value in context.items() if _is_json_scalar(value) or key == "load_avg"}
    if isinstance(context.get("caches"), list):
        environment["caches"] = context["caches"]
    if skipped:
        environment["skipped_benchmarks"] = skipped
    version = context.get("library_version")
    document: dict[str, Any] = {
        "source": f"{FORMAT_NAME} {version.lstrip('v')}" if isinstance(version, str) and version else FORMAT_NAME,
        "environment": environment,
        "results": results,
    }
    started_at = _timestamp(context.get("date"))
    if started_at:
        document["started_at"] = started_at
    machine = {}
    if isinstance(context.get("host_name"), str) and context["host_name"]:
        machine["hostname"] = context["host_name"]
    if type(context.get("num_cpus")) is int and context["num_cpus"] > 0:
        machine["cores"] = context["num_cpus"]
    if machine:
        document["machine"] = machine
    return json_safe(document)


def _from_iterations(run_name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    samples: dict[str, list[float]] = {metric: [] for metric in _METRICS}
    counters: dict[str, list[Any]] = {}
    for row in rows:
        scale = _scale(row, run_name)
        for metric in _METRICS:
            samples[metric].append(_number(row, metric, run_name) * scale)
        for key, value in row.items():
            if key not in _ROW_KEYS and isinstance(value, int | float) and not isinstance(value, bool):
                counters.setdefault(key, []).append(value)
    metadata = _common_metadata(rows)
    metadata["iterations"] = _one_or_all(row.get("iterations") for row in rows)
    if any(len(values) == len(rows) for values in counters.values()):
        metadata["counters"] = {key: values for key, values in counters.items() if len(values) == len(rows)}
    return [_result(run_name, metric, {"samples": samples[metric]}, metadata) for metric in _METRICS]


def _from_aggregates(run_name: str, aggregates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    mean, stddev = aggregates["mean"], aggregates["stddev"]
    repetitions = mean.get("repetitions")
    if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
        raise ImportFormatError(f"{FORMAT_NAME}: benchmark {run_name!r} '_mean' row has no valid 'repetitions'.")
    metadata = _common_metadata([mean])
    metadata["from_aggregates"] = True
    results = []
    for metric in _METRICS:
        spread = _number(stddev, metric, run_name) * _scale(stddev, run_name)
        summary = {
            "mean": _number(mean, metric, run_name) * _scale(mean, run_name),
            "subsession_size": 1,
            "variance": spread**2,
            "n": repetitions,
        }
        results.append(_result(run_name, metric, {"summary": summary}, metadata))
    return results


def _result(run_name: str, metric: str, values: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "benchmark": run_name,
        "metric": metric,
        "unit": "s",
        "direction": "lower_is_better",
        **values,
        "metadata": copy.deepcopy(metadata),
    }


def _common_metadata(rows: list[dict[str, Any]]) -> dict[str, Any]:
    metadata = {}
    for key in ("time_unit", "threads", "repetitions", "family_index", "per_family_instance_index", "label"):
        if key in rows[0]:
            metadata[key] = rows[0][key]
    return metadata


def _scale(row: dict[str, Any], run_name: str) -> float:
    unit = row.get("time_unit")
    if not isinstance(unit, str) or unit not in _SECONDS_PER_UNIT:
        raise ImportFormatError(
            f"{FORMAT_NAME}: benchmark {run_name!r} has time_unit {unit!r}; expected one of {list(_SECONDS_PER_UNIT)}."
        )
    return _SECONDS_PER_UNIT[unit]


def _number(row: dict[str, Any], key: str, run_name: str) -> float:
    if key not in row:
        raise ImportFormatError(f"{FORMAT_NAME}: row {row['name']!r} of benchmark {run_name!r} has no {key!r}.")
    if not is_number(row[key]):
        raise ImportFormatError(f"{FORMAT_NAME}: row {row['name']!r} has a {key!r} that is not a finite number.")
    return float(row[key])



def _is_json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _one_or_all(items: Any) -> Any:
    """The value when every repetition agrees on it, else the values in order."""
    values = list(items)
    return values[0] if all(value == values[0] for value in values) else values


def _timestamp(value: Any) -> str | None:
    """The context date as ISO-8601 when it names its zone.

    Older library versions wrote local time without a zone (in other layouts too); that
    date stays in ``environment`` only.
    """
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.isoformat() if moment.tzinfo is not None else None
