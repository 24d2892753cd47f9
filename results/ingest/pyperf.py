"""pyperf JSON files (``pyperf.Runner`` ``-o FILE``, ``python -m pyperf``), file format version 1.0.

A file is a suite: ``{"version": "1.0", "metadata": {...}, "benchmarks": [{"metadata": {...},
"runs": [{"metadata": {...}, "warmups": [[loops, value], ...], "values": [...]}, ...]}]}``.
Metadata is stored once at the highest level it is common to (suite, then benchmark, then
run); a run's effective metadata is the three merged, lower levels winning. Values and
warm-ups are already per inner-loop iteration (pyperf divides by ``loops * inner_loops``),
so they are imported as they are; ``loops`` and ``inner_loops`` become metadata.

A run with warm-ups but no values is a calibration run (of loops or warm-ups) and is
skipped. Each remaining run is one process: the samples are ``[[values of process 1], ...]``
with the warm-ups left out. If processes hold different numbers of values, only the
processes with the most common count (the larger on a tie) are kept, so that the nesting
stays balanced; ``metadata["dropped_runs"]`` says how many were left out.

pyperf writes run dates as local time without a zone, so no ``started_at`` is given; the
earliest run date is kept as ``environment["date"]``. A gzip-compressed file
(``-o FILE.json.gz``) is accepted as well.

A benchmark whose worker failed is not in pyperf's file (the run stops or leaves it out), so the file
holds no failed result: such a benchmark is missing from the run, not failed.
"""

import statistics
from collections import Counter
from typing import Any

from .base import GZIP_MAGIC, ImportFormatError, gunzip, is_number, json_safe, load_json

FORMAT_NAME = "pyperf"

# pyperf's "unit" metadata -> (metric, unit) in the native document.
_UNITS = {"second": ("time", "s"), "byte": ("memory", "B"), "integer": ("value", "count")}

# Metadata describing the machine and the interpreter: copied into ``environment`` when the
# whole suite shares it. Large blobs (python_cflags, python_config_args) are left out.
_ENVIRONMENT_KEYS = (
    "hostname",
    "platform",
    "cpu_model_name",
    "cpu_count",
    "cpu_freq",
    "cpu_config",
    "cpu_affinity",
    "aslr",
    "boot_time",
    "python_implementation",
    "python_version",
    "python_compiler",
    "python_executable",
    "python_hash_seed",
    "timer",
)
# Metadata describing one benchmark, copied into its result's metadata when present.
_BENCHMARK_KEYS = ("inner_loops", "timeit_stmt", "timeit_setup", "command", "tags")


def parse(content: bytes | str) -> dict[str, Any]:
    """Turn a pyperf JSON file into a partial native document (one result per benchmark)."""
    if isinstance(content, bytes) and content[:2] == GZIP_MAGIC:
        content = gunzip(content, format_name=FORMAT_NAME)
    suite = load_json(content, format_name=FORMAT_NAME)
    if not isinstance(suite, dict) or not isinstance(suite.get("benchmarks"), list):
        raise ImportFormatError(f"{FORMAT_NAME}: the file must be a JSON object with a 'benchmarks' list.")
    version = suite.get("version")
    if version != "1.0":
        raise ImportFormatError(
            f"{FORMAT_NAME}: file format version {version!r} is not supported; expected '1.0' "
            "(pyperf 1.0 or later; 'python -m pyperf convert' rewrites older files)."
        )
    if not suite["benchmarks"]:
        raise ImportFormatError(f"{FORMAT_NAME}: the file holds no benchmark.")
    suite_metadata = _metadata(suite, "the suite")

    results = []
    dates, loads = [], []
    for index, benchmark in enumerate(suite["benchmarks"]):
        result, run_dates, run_loads = _benchmark_result(benchmark, index, suite_metadata)
        results.append(result)
        dates.extend(run_dates)
        loads.extend(run_loads)
    _reject_duplicates(results)

    first_metadata = {**suite_metadata, **_metadata(suite["benchmarks"][0], "benchmark #0")}
    version_of_pyperf = first_metadata.get("perf_version")
    environment = {key: suite_metadata[key] for key in _ENVIRONMENT_KEYS if key in suite_metadata}
    if dates:
        environment["date"] = min(dates)
    if loads:
        # The machine's load while the suite ran, compared with the other run's on a pull request
        # (results.machine_state): the median of its runs' 1-minute load averages.
        environment["load_avg_1min"] = round(statistics.median(loads), 2)
    document: dict[str, Any] = {
        "source": f"{FORMAT_NAME} {version_of_pyperf}" if version_of_pyperf else FORMAT_NAME,
        "environment": environment,
        "results": results,
    }
    machine = _machine(suite_metadata)
    if machine:
        document["machine"] = machine
    return json_safe(document)


def _benchmark_result(benchmark: Any, index: int,
                      suite_metadata: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[float]]:
    where = f"benchmark #{index}"
    if not isinstance(benchmark, dict) or not isinstance(benchmark.get("runs"), list):
        raise ImportFormatError(f"{FORMAT_NAME}: {where} must be an object with a 'runs' list.")
    metadata = {**suite_metadata, **_metadata(benchmark, where)}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has no 'name' metadata.")
    where = f"benchmark {name!r}"
    unit = metadata.get("unit", "second")
    if not isinstance(unit, str) or unit not in _UNITS:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has unknown unit {unit!r}; expected one of {sorted(_UNITS)}.")
    if not benchmark["runs"]:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has no runs.")

    measured = []  # (values, number of warm-ups, run metadata)
    calibration_runs = 0
    dates, loads = [], []
    for run_index, run in enumerate(benchmark["runs"]):
        run_where = f"{where}, run #{run_index}"
        if not isinstance(run, dict):
            raise ImportFormatError(f"{FORMAT_NAME}: {run_where} must be an object.")
        run_metadata = {**metadata, **_metadata(run, run_where)}
        if isinstance(run_metadata.get("date"), str):
            dates.append(run_metadata["date"])
        if is_number(run_metadata.get("load_avg_1min")):
            loads.append(float(run_metadata["load_avg_1min"]))
        values = _numbers(run.get("values", []), f"{run_where} 'values'")
        warmups = run.get("warmups", [])
        if not isinstance(warmups, list) or not all(
            isinstance(item, list) and len(item) == 2 and is_number(item[1]) for item in warmups
        ):
            raise ImportFormatError(f"{FORMAT_NAME}: {run_where} 'warmups' must be a list of [loops, value] pairs.")
        loops = run_metadata.get("loops", 1)
        if not isinstance(loops, int) or isinstance(loops, bool) or loops < 1:
            raise ImportFormatError(f"{FORMAT_NAME}: {run_where} 'loops' must be a positive integer, not {loops!r}.")
        if values:
            measured.append((values, len(warmups), run_metadata))
        elif warmups:
            calibration_runs += 1
        else:
            raise ImportFormatError(f"{FORMAT_NAME}: {run_where} has neither values nor warm-ups.")
    if not measured:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has no values (only calibration runs).")

    counts = Counter(len(values) for values, _, _ in measured)
    modal_count = max(counts, key=lambda count: (counts[count], count))
    kept = [run for run in measured if len(run[0]) == modal_count]

    metric, native_unit = _UNITS[unit]
    result_metadata: dict[str, Any] = {
        "loops": _one_or_all(run_metadata.get("loops", 1) for _, _, run_metadata in kept),
        "runs": len(kept),
        "values_per_run": modal_count,
        "warmups_per_run": _one_or_all(warmups for _, warmups, _ in kept),
        "calibration_runs": calibration_runs,
        "dropped_runs": len(measured) - len(kept),
    }
    result_metadata.update({key: metadata[key] for key in _BENCHMARK_KEYS if key in metadata})
    result: dict[str, Any] = {
        "benchmark": name,
        "metric": metric,
        "unit": native_unit,
        "direction": "lower_is_better",
        "samples": [values for values, _, _ in kept],
        "warmup_removed": sum(warmups for _, warmups, _ in kept),
        "metadata": result_metadata,
    }
    if isinstance(metadata.get("description"), str):
        result["description"] = metadata["description"]
    return result, dates, loads


def _metadata(holder: dict[str, Any], where: str) -> dict[str, Any]:
    metadata = holder.get("metadata", {})
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ImportFormatError(f"{FORMAT_NAME}: {where} 'metadata' must be an object.")
    return metadata


def _numbers(values: Any, where: str) -> list[float]:
    if not isinstance(values, list) or not all(is_number(value) for value in values):
        raise ImportFormatError(f"{FORMAT_NAME}: {where} must be a list of finite numbers.")
    return [float(value) for value in values]



def _one_or_all(items: Any) -> Any:
    """The value when every run agrees on it, else the sorted distinct values."""
    distinct = sorted(set(items))
    return distinct[0] if len(distinct) == 1 else distinct


def _reject_duplicates(results: list[dict[str, Any]]) -> None:
    names = Counter(result["benchmark"] for result in results)
    duplicated = sorted(name for name, count in names.items() if count > 1)
    if duplicated:
        raise ImportFormatError(f"{FORMAT_NAME}: benchmark {duplicated[0]!r} appears more than once.")


def _machine(metadata: dict[str, Any]) -> dict[str, Any]:
    machine: dict[str, Any] = {}
    if isinstance(metadata.get("hostname"), str):
        machine["hostname"] = metadata["hostname"]
    if isinstance(metadata.get("cpu_model_name"), str):
        machine["cpu_model"] = metadata["cpu_model_name"]
    if type(metadata.get("cpu_count")) is int and metadata["cpu_count"] > 0:
        machine["cores"] = metadata["cpu_count"]
    if isinstance(metadata.get("platform"), str):
        machine["os"] = metadata["platform"]
    return machine
