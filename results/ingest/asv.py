"""asv (airspeed velocity) results: one results file per commit and environment, or a whole results directory.

An asv results directory holds ``benchmarks.json`` (the suite: each benchmark's ``type``, ``unit``,
``params``, ``param_names``) and one folder per machine with ``machine.json`` and the results files
``<commit hash prefix>-<environment name>.json``. A results file, format version 2 as asv 0.6.6 writes it
(``asv/results.py``), is ``{"commit_hash", "env_name", "date", "params": {machine, os, arch, cpu, num_cpu,
ram, python}, "python", "requirements", "env_vars", "result_columns": [...], "results": {name: [value per
column]}, "durations", "version": 2}``. A benchmark's row lists its values in ``result_columns`` order
(``result``, ``params``, ``version``, ``started_at``, ``duration``, ``stats_ci_99_a``, ``stats_ci_99_b``,
``stats_q_25``, ``stats_q_75``, ``stats_number``, ``stats_repeat``, ``samples``, ``profile``), trailing
empty columns left out. Each per-value column holds one entry per parameter combination, in the order of
``itertools.product(*params)``; a column that is empty for every combination is a single ``null``.

Each results file is one run. Its revision is the file's commit, dated by ``date``, the commit's date; the
run's ``started_at`` is that date too, because asv orders and plots a history by commit date and benchmarks
a range of commits newest first: the times its benchmarks actually ran (``started_at`` plus ``duration``)
are kept in ``environment["benchmarked_from"]`` and ``["benchmarked_until"]``. The machine is the file's
``params``, asv's copy of ``machine.json`` at run time. The file names neither the project nor asv's version.

A parameterized benchmark becomes one result per combination, named as asv names it:
``module.Class.time_sort(100, 'quick')``, the parameter values as asv wrote them (their ``repr``).

Values: a time benchmark's samples are the seconds per call, each the mean of ``stats_number`` calls;
asv keeps them only under ``asv run --record-samples``, and then they are the result's samples. Otherwise
asv kept statistics of them, and the result is a ``summary`` that approximates what was measured:

- ``mean`` is asv's ``result``, the *median* of the samples (asv keeps no mean);
- ``variance`` is ``((stats_q_75 - stats_q_25) / 1.349)²``, the variance of a normal distribution with the
  samples' interquartile range (asv's quartiles are rounded to 5 significant digits, and 0 when all
  samples agree);
- ``n`` is ``stats_repeat``, the number of samples (not ``stats_number × stats_repeat``: the calls in one
  sample are timed together, so they are no independent readings).

asv's 99% interval of the median and the quartiles stay in the result's metadata. A time benchmark with
neither samples nor statistics, and every ``track_``, ``mem_`` and ``peakmem_`` benchmark (asv keeps one
value of those), is a single reading: samples ``[result]``.

Kinds and units: ``time`` benchmarks are seconds; ``mem_`` (``memory``, an object's size) and ``peakmem_``
(``peak_memory``, the process's peak resident size) are bytes; ``track_`` benchmarks (metric ``value``) take
their unit from ``benchmarks.json``. Every result is lower-is-better, as asv compares them. Without
``benchmarks.json`` (a single uploaded file) the kind comes from the benchmark's name prefix, as asv finds
benchmarks, and a ``track_`` benchmark's unit is asv's default, ``unit``.

asv writes ``null`` for a benchmark or parameter combination that failed: a failed result, with no error
text (asv prints the error but does not keep it in its files). ``NaN`` is asv's "n/a", a combination not
run: skipped by the suite (its ``setup`` raised ``NotImplementedError``) or left out of a partial run. It is
no result, so it is neither compared nor counted as failed, and is listed in
``environment["skipped_benchmarks"]``.
"""

import itertools
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import json_input
from .base import ImportFormatError, is_number, json_safe, load_json

FORMAT_NAME = "asv"
RESULTS_VERSION = 2
BENCHMARKS_FILE = "benchmarks.json"
MACHINE_FILE = "machine.json"

# asv's benchmark type -> (metric, unit) in the native document; a track benchmark's unit is its own.
_KINDS = {"time": ("time", "s"), "memory": ("memory", "B"), "peakmemory": ("peak_memory", "B")}
_UNITS = {"seconds": "s", "bytes": "B"}
TRACK_METRIC = "value"
DEFAULT_TRACK_UNIT = "unit"
# How asv_runner recognises a benchmark by its function's (or class's) name.
_NAME_PREFIXES = (
    (re.compile(r"^(Timeraw[A-Z_].+|timeraw_.+)$"), "time"),
    (re.compile(r"^(Time[A-Z_].+|time_.+)$"), "time"),
    (re.compile(r"^(PeakMem[A-Z_].+|peakmem_.+)$"), "peakmemory"),
    (re.compile(r"^(Mem[A-Z_].+|mem_.+)$"), "memory"),
    (re.compile(r"^(Track[A-Z_].+|track_.+)$"), "track"),
)
# The normal distribution's interquartile range in standard deviations: 2 Φ⁻¹(0.75).
IQR_PER_SIGMA = 1.3489795003921634
_STATS_COLUMNS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")


def parse(content: bytes | str, *, benchmarks: dict[str, Any] | None = None) -> dict[str, Any]:
    """Turn one asv results file into a partial native document (one result per benchmark and combination).

    Parameters
    ----------
    content : bytes or str
        The results file.
    benchmarks : dict, optional
        The suite's ``benchmarks.json`` as :func:`load_benchmarks` returns it: each benchmark's type and unit.
        Without it, they follow from the benchmark names.
    """
    data = load_json(content, format_name=FORMAT_NAME)
    if isinstance(data, dict) and "result_columns" not in data and describes_suite(data):
        raise ImportFormatError(f"{FORMAT_NAME}: this is asv's {BENCHMARKS_FILE} (the suite's description), "
                                "not a results file; import a results file or the whole results directory.")
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ImportFormatError(f"{FORMAT_NAME}: the file must be a JSON object with a 'results' object.")
    version = data.get("version")
    if version != RESULTS_VERSION:
        hint = " ('asv update' rewrites older files)" if isinstance(version, int) and version < RESULTS_VERSION else ""
        raise ImportFormatError(f"{FORMAT_NAME}: results format version {version!r} is not supported; expected "
                                f"{RESULTS_VERSION}, the format current asv writes{hint}.")
    commit = data.get("commit_hash")
    if not isinstance(commit, str) or not commit:
        raise ImportFormatError(f"{FORMAT_NAME}: the file has no 'commit_hash'.")
    columns = data.get("result_columns")
    if not isinstance(columns, list) or not all(isinstance(column, str) for column in columns) \
            or "result" not in columns or "params" not in columns:
        raise ImportFormatError(f"{FORMAT_NAME}: 'result_columns' must be a list of column names holding "
                                "'result' and 'params'.")
    machine = data.get("params", {})
    if not isinstance(machine, dict):
        raise ImportFormatError(f"{FORMAT_NAME}: 'params' (the machine's description) must be an object.")
    date = data.get("date")
    if date is not None and not is_number(date):
        raise ImportFormatError(f"{FORMAT_NAME}: 'date' must be a timestamp in milliseconds, not {date!r}.")
    if not data["results"]:
        raise ImportFormatError(f"{FORMAT_NAME}: the file holds no benchmark.")

    results: list[dict[str, Any]] = []
    skipped: list[str] = []
    times: list[tuple[float, float]] = []  # (started at, duration) of each benchmark, in milliseconds
    for name, row in data["results"].items():
        benchmark = _row(name, row, columns)
        measured, not_run = _benchmark_results(name, benchmark, (benchmarks or {}).get(name))
        results.extend(measured)
        skipped.extend(not_run)
        if is_number(benchmark.get("started_at")):
            duration = benchmark.get("duration")
            times.append((benchmark["started_at"], 1000 * duration if is_number(duration) else 0.0))
    _reject_duplicates([*(result["benchmark"] for result in results), *skipped])
    if not results:
        raise ImportFormatError(f"{FORMAT_NAME}: no benchmark has a value (all were skipped: "
                                f"{', '.join(skipped)}).")

    environment = {key: data[key] for key in ("env_name", "python", "requirements", "env_vars")
                   if data.get(key) not in (None, "", {})}
    if times:
        environment["benchmarked_from"] = _timestamp(min(start for start, _ in times))
        environment["benchmarked_until"] = _timestamp(max(start + duration for start, duration in times))
    durations = data.get("durations")
    if isinstance(durations, dict) and is_number(durations.get("<build>")):
        environment["build_duration"] = durations["<build>"]
    if skipped:
        environment["skipped_benchmarks"] = skipped
    revision: dict[str, Any] = {"commit": commit}
    document: dict[str, Any] = {"source": FORMAT_NAME, "environment": environment, "revision": revision,
                                "results": results}
    if date is not None:
        revision["timestamp"] = document["started_at"] = _timestamp(date)
    described = _machine(machine)
    if described:
        document["machine"] = described
    return json_safe(document)


def load_benchmarks(content: bytes | str) -> dict[str, Any]:
    """The suite's ``benchmarks.json``: benchmark name -> its description (``type``, ``unit``, ``params``…)."""
    data = load_json(content, format_name=FORMAT_NAME)
    if not isinstance(data, dict) or data.get("version") != RESULTS_VERSION:
        raise ImportFormatError(f"{FORMAT_NAME}: {BENCHMARKS_FILE} must be a JSON object of format version "
                                f"{RESULTS_VERSION}, the format current asv writes.")
    suite = {name: description for name, description in data.items() if name != "version"}
    for name, description in suite.items():
        if not isinstance(description, dict) or not isinstance(description.get("type"), str):
            raise ImportFormatError(f"{FORMAT_NAME}: {BENCHMARKS_FILE} describes benchmark {name!r} without "
                                    "a 'type'.")
    return suite


@dataclass(frozen=True)
class ResultFile:
    """One results file of a results directory: its machine's folder name, path and content."""

    machine: str
    path: Path
    content: bytes


@dataclass(frozen=True)
class ResultsDirectory:
    """An asv results directory read from disk: the suite's description and each machine's results files
    in commit date order."""

    benchmarks: dict[str, Any] | None
    machines: dict[str, list[ResultFile]]


def read_directory(path: Path) -> ResultsDirectory:
    """Read an asv results directory (or one machine's folder of it).

    The machines are the folders holding ``machine.json``, as asv finds them; their results files are
    ordered by the commit date they name (then commit and file name), a file whose date cannot be read
    last. ``benchmarks.json`` is read from the directory (or, for a machine's folder, its parent) when
    it is there. Nothing is parsed beyond the dates: :func:`parse` checks each file.
    """
    folders = [path] if (path / MACHINE_FILE).is_file() else \
        sorted(folder for folder in path.iterdir() if (folder / MACHINE_FILE).is_file())
    if not folders:
        raise ImportFormatError(f"{FORMAT_NAME}: {path} holds no machine folder (a folder with {MACHINE_FILE}); "
                                "give asv's results directory.")
    root = path.parent if folders == [path] else path
    benchmarks = None
    if (root / BENCHMARKS_FILE).is_file():
        benchmarks = load_benchmarks((root / BENCHMARKS_FILE).read_bytes())
    machines: dict[str, list[ResultFile]] = {}
    for folder in folders:
        files = [ResultFile(machine=folder.name, path=file, content=file.read_bytes())
                 for file in folder.glob("*.json") if file.name not in (MACHINE_FILE, BENCHMARKS_FILE)]
        machines[folder.name] = sorted(files, key=_order)
    if not any(machines.values()):
        raise ImportFormatError(f"{FORMAT_NAME}: {path} holds no results file.")
    return ResultsDirectory(benchmarks=benchmarks, machines=machines)


def benchmarks_beside(file: Path) -> dict[str, Any] | None:
    """The ``benchmarks.json`` of the results directory a results file is in (``results/<machine>/file``),
    or None when there is none."""
    candidate = file.parent.parent / BENCHMARKS_FILE
    return load_benchmarks(candidate.read_bytes()) if candidate.is_file() else None


def _order(file: ResultFile) -> tuple[bool, float, str, str]:
    """Where a results file goes in its machine's history: by commit date, then commit, then name; a file
    without a readable date last (:func:`parse` says what is wrong with it)."""
    try:
        data = json_input.loads(file.content)
    except ValueError:  # json_input's refusals, bad JSON and bad UTF-8 alike
        data = None
    date = data.get("date") if isinstance(data, dict) else None
    commit = data.get("commit_hash") if isinstance(data, dict) else None
    dated = is_number(date)
    return (not dated, float(date) if dated else 0.0, commit if isinstance(commit, str) else "", file.path.name)


def _row(name: Any, row: Any, columns: list[str]) -> dict[str, Any]:
    """A benchmark's row as a column -> value mapping, the columns it leaves out empty."""
    if not isinstance(name, str) or not name:
        raise ImportFormatError(f"{FORMAT_NAME}: a benchmark has an empty name.")
    if not isinstance(row, list) or len(row) > len(columns):
        raise ImportFormatError(f"{FORMAT_NAME}: benchmark {name!r} must be a list of at most {len(columns)} "
                                "values, one per result column.")
    return dict(itertools.zip_longest(columns, row))


def _benchmark_results(name: str, row: dict[str, Any], described: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """A benchmark's results, one per parameter combination, and the combinations asv skipped."""
    where = f"benchmark {name!r}"
    params = row.get("params") or []
    if not isinstance(params, list) or not all(
            isinstance(values, list) and values and all(isinstance(value, str) for value in values)
            for values in params):
        raise ImportFormatError(f"{FORMAT_NAME}: {where} 'params' must be a list of lists of parameter values.")
    combinations = list(itertools.product(*params))
    names = [f"{name}({', '.join(values)})" if values else name for values in combinations]
    param_names = described.get("param_names") if isinstance(described, dict) else None
    if not (isinstance(param_names, list) and len(param_names) == len(params)):
        param_names = [f"param{index + 1}" for index in range(len(params))]

    values = _column(row, "result", len(names), where)
    samples = _column(row, "samples", len(names), where)
    stats = {key: _column(row, f"stats_{key}", len(names), where) for key in _STATS_COLUMNS}
    kind, metric, unit = _kind(name, described)
    common: dict[str, Any] = {}
    if isinstance(row.get("version"), str):
        common["benchmark_version"] = row["version"]
    if is_number(row.get("started_at")):
        common["benchmarked_at"] = _timestamp(row["started_at"])

    results, skipped = [], []
    for index, benchmark in enumerate(names):
        value = values[index]
        if isinstance(value, float) and math.isnan(value):
            skipped.append(benchmark)
            continue
        result: dict[str, Any] = {"benchmark": benchmark, "metric": metric, "unit": unit,
                                  "direction": "lower_is_better"}
        if value is None:
            results.append({**result, "failed": True})
            continue
        value_where = f"{FORMAT_NAME}: {where}" + (f" at {benchmark!r}" if params else "")
        if not is_number(value):
            raise ImportFormatError(f"{value_where}: the result must be a finite number, NaN or null, not {value!r}.")
        metadata = dict(common)
        if params:
            metadata["params"] = dict(zip(param_names, combinations[index], strict=True))
        measured = {key: stats[key][index] for key in _STATS_COLUMNS if stats[key][index] is not None}
        for key, number in measured.items():
            if not is_number(number):
                raise ImportFormatError(f"{value_where}: 'stats_{key}' must be a finite number, not {number!r}.")
        if "ci_99_a" in measured and "ci_99_b" in measured:
            metadata["ci_99"] = [measured.pop("ci_99_a"), measured.pop("ci_99_b")]
        metadata.update(measured)
        kept = samples[index]
        if kept is not None:
            if not isinstance(kept, list) or not kept or not all(is_number(sample) for sample in kept):
                raise ImportFormatError(f"{value_where}: 'samples' must be a non-empty list of finite numbers.")
            result["samples"] = [float(sample) for sample in kept]
        elif kind == "time" and {"q_25", "q_75", "repeat"} <= measured.keys():
            repeat = measured["repeat"]
            if not isinstance(repeat, int) or repeat < 1 or measured["q_75"] < measured["q_25"]:
                raise ImportFormatError(f"{value_where}: 'stats_repeat' must be a positive integer and "
                                        "'stats_q_75' at least 'stats_q_25'.")
            spread = (measured["q_75"] - measured["q_25"]) / IQR_PER_SIGMA
            result["summary"] = {"mean": float(value), "subsession_size": 1, "variance": spread**2, "n": repeat}
            metadata["summary_from"] = "asv's median, interquartile range and number of samples"
        else:
            result["samples"] = [float(value)]
        if kind == "time":
            metadata["median"] = value
        results.append({**result, "metadata": metadata})
    return results, skipped


def _column(row: dict[str, Any], column: str, size: int, where: str) -> list[Any]:
    """A per-combination column: ``size`` entries, None for each when the column is empty."""
    values = row.get(column)
    if values is None:
        return [None] * size
    if not isinstance(values, list) or len(values) != size:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} '{column}' must be null or a list of {size} "
                                f"value{'s' if size != 1 else ''}, one per parameter combination.")
    return values


def _kind(name: str, described: Any) -> tuple[str, str, str]:
    """(asv's type, metric, unit) of a benchmark, from its description or else its name."""
    if isinstance(described, dict) and isinstance(described.get("type"), str):
        kind = described["type"]
        unit = described.get("unit")
        unit = _UNITS.get(unit, unit) if isinstance(unit, str) and unit else None
    else:
        function = name.rsplit(".", 1)[-1]
        kind = next((kind for pattern, kind in _NAME_PREFIXES if pattern.match(function)), "track")
        unit = None
    if kind in _KINDS:
        metric, default_unit = _KINDS[kind]
        return kind, metric, unit or default_unit
    return kind, TRACK_METRIC, unit or DEFAULT_TRACK_UNIT


def _machine(params: dict[str, Any]) -> dict[str, Any]:
    """The machine as asv described it: ``name`` its asv machine name (by default the host name)."""
    machine: dict[str, Any] = {}
    if isinstance(params.get("machine"), str) and params["machine"]:
        machine["name"] = params["machine"]
    if isinstance(params.get("cpu"), str) and params["cpu"]:
        machine["cpu_model"] = params["cpu"]
    if isinstance(params.get("os"), str) and params["os"]:
        machine["os"] = params["os"]
    # asv writes the counts as text; a person answering 'asv machine' may write "16GB".
    cores, ram = str(params.get("num_cpu", "")), str(params.get("ram", ""))
    if cores.isdigit() and int(cores) > 0:
        machine["cores"] = int(cores)
    if ram.isdigit():
        machine["memory_bytes"] = int(ram)
    hardware = {key: params[key] for key in ("arch", "ram")
                if isinstance(params.get(key), str) and params[key] and not (key == "ram" and ram.isdigit())}
    if hardware:
        machine["hardware"] = hardware
    return machine


def describes_suite(data: dict[str, Any]) -> bool:
    """Whether ``data`` is asv's ``benchmarks.json``: benchmark names -> their descriptions, and a version."""
    return "version" in data and any(isinstance(value, dict) and {"name", "type", "unit"} <= value.keys()
                                     for value in data.values())


def _reject_duplicates(names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ImportFormatError(f"{FORMAT_NAME}: benchmark {name!r} appears more than once.")
        seen.add(name)


def _timestamp(milliseconds: float) -> str:
    """An asv timestamp (milliseconds since the epoch, UTC) in ISO 8601."""
    try:
        return datetime.fromtimestamp(milliseconds / 1000, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        raise ImportFormatError(f"{FORMAT_NAME}: {milliseconds!r} is no date (milliseconds since 1970).") from None

