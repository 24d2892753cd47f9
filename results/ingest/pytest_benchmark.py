"""pytest-benchmark JSON files (``--benchmark-json=FILE``, or a saved run under ``.benchmarks/``).

A file is ``{"machine_info": {...}, "commit_info": {...}, "benchmarks": [{"fullname": ...,
"group": ..., "params": ..., "stats": {"mean": ..., "stddev": ..., "rounds": ...,
"iterations": ..., "data": [...]}}], "datetime": ..., "version": ...}``.

``stats.data`` holds one time per round, already divided by the round's iterations; it is
imported as the samples. ``--benchmark-json`` always writes it, but ``--benchmark-save`` /
``--benchmark-autosave`` leave it out unless ``--benchmark-save-data`` is given: then only
the summary exists and the result carries ``summary`` (mean, subsession size 1, variance =
stddev², n = rounds) instead of samples.

``datetime`` is written when the session ends, so it becomes ``finished_at`` (older
versions wrote ``datetime.utcnow()`` without a zone, so a zone-less value is read as UTC).

A benchmark that raised is not in the file (pytest-benchmark writes only those without an error), so
the file holds no failed result: such a benchmark is missing from the run, not failed.
"""

from collections import Counter
from datetime import datetime, timezone
from typing import Any

from .base import ImportFormatError, is_number, json_safe, load_benchmarks_report

FORMAT_NAME = "pytest-benchmark"

_MACHINE_INFO_KEYS = (
    "node",
    "machine",
    "system",
    "release",
    "python_implementation",
    "python_implementation_version",
    "python_version",
    "python_compiler",
)
_CPU_KEYS = ("brand_raw", "arch", "count", "hz_actual_friendly", "hz_advertised_friendly")
_COMMIT_KEYS = ("id", "time", "author_time", "dirty", "project", "branch")


def parse(content: bytes | str) -> dict[str, Any]:
    """Turn a pytest-benchmark JSON file into a partial native document (one result per test)."""
    report = load_benchmarks_report(content, format_name=FORMAT_NAME)
    results = [_result(benchmark, index) for index, benchmark in enumerate(report["benchmarks"])]
    names = Counter(result["benchmark"] for result in results)
    duplicated = sorted(name for name, count in names.items() if count > 1)
    if duplicated:
        raise ImportFormatError(f"{FORMAT_NAME}: benchmark {duplicated[0]!r} appears more than once.")

    version = report.get("version")
    machine_info = _object(report, "machine_info")
    cpu = _object(machine_info, "cpu")
    commit_info = _object(report, "commit_info")
    environment: dict[str, Any] = {key: machine_info[key] for key in _MACHINE_INFO_KEYS if key in machine_info}
    environment.update({f"cpu_{key}": cpu[key] for key in _CPU_KEYS if key in cpu})
    commit = {key: commit_info[key] for key in _COMMIT_KEYS if key in commit_info}
    if commit:
        environment["commit"] = commit
    document: dict[str, Any] = {
        "source": f"{FORMAT_NAME} {version}" if isinstance(version, str) else FORMAT_NAME,
        "environment": environment,
        "results": results,
    }
    if "datetime" in report:
        document["finished_at"] = _timestamp(report["datetime"])
    machine = _machine(machine_info, cpu)
    if machine:
        document["machine"] = machine
    return json_safe(document)


def _result(benchmark: Any, index: int) -> dict[str, Any]:
    if not isinstance(benchmark, dict):
        raise ImportFormatError(f"{FORMAT_NAME}: benchmark #{index} must be an object.")
    name = benchmark.get("fullname", benchmark.get("name"))
    if not isinstance(name, str) or not name:
        raise ImportFormatError(f"{FORMAT_NAME}: benchmark #{index} has no 'fullname'.")
    where = f"benchmark {name!r}"
    stats = benchmark.get("stats")
    if not isinstance(stats, dict):
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has no 'stats' object.")

    metadata: dict[str, Any] = {
        key: benchmark[key] for key in ("name", "group", "param", "params") if benchmark.get(key) is not None
    }
    if benchmark.get("extra_info"):
        metadata["extra_info"] = benchmark["extra_info"]
    if isinstance(benchmark.get("options"), dict):
        metadata["options"] = benchmark["options"]
    for key in ("iterations", "rounds"):
        if key in stats:
            metadata[key] = stats[key]
    result: dict[str, Any] = {
        "benchmark": name,
        "metric": "time",
        "unit": "s",
        "direction": "lower_is_better",
    }

    data = stats.get("data")
    if data is not None:
        if not isinstance(data, list) or not all(is_number(value) for value in data):
            raise ImportFormatError(f"{FORMAT_NAME}: {where} 'stats.data' must be a list of finite numbers.")
        if not data:
            raise ImportFormatError(f"{FORMAT_NAME}: {where} has no values ('stats.data' is empty).")
        result["samples"] = [float(value) for value in data]
    else:
        missing = [key for key in ("mean", "stddev", "rounds") if key not in stats]
        if missing:
            raise ImportFormatError(
                f"{FORMAT_NAME}: {where} has neither 'stats.data' nor the summary key 'stats.{missing[0]}'."
            )
        mean, stddev, rounds = stats["mean"], stats["stddev"], stats["rounds"]
        if not (is_number(mean) and is_number(stddev) and stddev >= 0):
            raise ImportFormatError(f"{FORMAT_NAME}: {where} 'stats.mean' and 'stats.stddev' must be finite numbers.")
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise ImportFormatError(f"{FORMAT_NAME}: {where} has no values ('stats.rounds' is {rounds!r}).")
        result["summary"] = {"mean": float(mean), "subsession_size": 1, "variance": float(stddev) ** 2, "n": rounds}
    result["metadata"] = metadata
    return result


def _object(holder: dict[str, Any], key: str) -> dict[str, Any]:
    value = holder.get(key)
    return value if isinstance(value, dict) else {}



def _timestamp(value: Any) -> str:
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ImportFormatError(f"{FORMAT_NAME}: 'datetime' must be an ISO-8601 timestamp, not {value!r}.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.isoformat()


def _machine(machine_info: dict[str, Any], cpu: dict[str, Any]) -> dict[str, Any]:
    machine: dict[str, Any] = {}
    if isinstance(machine_info.get("node"), str) and machine_info["node"]:
        machine["hostname"] = machine_info["node"]
    if isinstance(cpu.get("brand_raw"), str) and cpu["brand_raw"]:
        machine["cpu_model"] = cpu["brand_raw"]
    if type(cpu.get("count")) is int and cpu["count"] > 0:
        machine["cores"] = cpu["count"]
    system = " ".join(str(machine_info[key]) for key in ("system", "release") if machine_info.get(key))
    if system:
        machine["os"] = system
    return machine
