"""Which known format a parsed file looks like, from the marks each tool's output always carries.

Used only to explain a refusal: when a file does not parse as the format it was declared in, the
sender is told the format it looks like. Nothing is ever imported under a guessed format.
"""

from typing import Any

from .. import json_input
from . import asv


def looks_like(data: Any) -> str | None:
    """The name of the known format whose marks the parsed JSON ``data`` carries, or None.

    The native format comes first: a run document's results name their ``benchmark``, which no tool's
    file does, so a valid run document is never taken for another format.
    """
    if not isinstance(data, dict):
        return None
    result = _first_object(data.get("results"))
    benchmark = _first_object(data.get("benchmarks"))
    if result is not None and "benchmark" in result:
        return "native"
    if result is not None and "command" in result and ("times" in result or "mean" in result):
        return "hyperfine"
    if "result_columns" in data or {"commit_hash", "env_name"} <= data.keys() or asv.describes_suite(data):
        return "asv"
    if benchmark is None:
        return None
    if "machine_info" in data or "commit_info" in data or isinstance(benchmark.get("stats"), dict):
        return "pytest-benchmark"
    if isinstance(data.get("context"), dict) or {"run_type", "real_time", "time_unit"} & benchmark.keys():
        return "google-benchmark"
    if isinstance(benchmark.get("runs"), list) or data.get("version") == "1.0":
        return "pyperf"
    return None


def sniff(content: bytes | str) -> str | None:
    """:func:`looks_like` of ``content`` (uncompressed); None when it is not JSON."""
    try:
        return looks_like(json_input.loads(content))
    except ValueError:  # json_input's refusals, bad JSON and bad UTF-8 alike
        return None


def _first_object(items: Any) -> dict[str, Any] | None:
    if isinstance(items, list) and items and isinstance(items[0], dict):
        return items[0]
    return None
