"""hyperfine JSON files (``hyperfine --export-json FILE ...``).

A file is ``{"results": [{"command": ..., "mean": ..., "stddev": ..., "median": ...,
"user": ..., "system": ..., "min": ..., "max": ..., "times": [...], "exit_codes": [...],
"parameters": {...}}]}``, times in seconds. ``command`` is the ``--command-name`` when one
was given (the command line itself is then not in the file), else the command line with
parameters substituted.

``times`` (one wall-clock time per timed run, warm-up runs not included) become the
samples. With the default shell, hyperfine subtracts the measured shell start-up time
from every run and clamps at zero, so very short commands may have times of exactly 0.0.
``user`` and ``system`` are means over the runs, not per-run values: they go into the
metadata with the exit codes and parameters. The file names neither the tool version nor
the machine.

A command whose every run exited non-zero (or was killed: a null exit code), which hyperfine times
only under ``--ignore-failure``, failed: it is a failed result with its exit codes, not a time (a
command that fails fast would otherwise become a fast baseline).
"""

from collections import Counter
from typing import Any

from .base import ImportFormatError, is_number, json_safe, load_json

FORMAT_NAME = "hyperfine"


def parse(content: bytes | str) -> dict[str, Any]:
    """Turn a hyperfine JSON export into a partial native document (one result per command)."""
    report = load_json(content, format_name=FORMAT_NAME)
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ImportFormatError(f"{FORMAT_NAME}: the file must be a JSON object with a 'results' list.")
    if not report["results"]:
        raise ImportFormatError(f"{FORMAT_NAME}: the file holds no command.")
    results = [_result(entry, index) for index, entry in enumerate(report["results"])]
    commands = Counter(result["benchmark"] for result in results)
    duplicated = sorted(command for command, count in commands.items() if count > 1)
    if duplicated:
        raise ImportFormatError(
            f"{FORMAT_NAME}: command {duplicated[0]!r} appears more than once; name each with --command-name."
        )
    return json_safe({"source": FORMAT_NAME, "environment": {}, "results": results})


def _result(entry: Any, index: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ImportFormatError(f"{FORMAT_NAME}: result #{index} must be an object.")
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ImportFormatError(f"{FORMAT_NAME}: result #{index} has no 'command'.")
    where = f"command {command!r}"
    if "times" not in entry:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has no 'times' (the per-run times).")
    times = entry["times"]
    if not isinstance(times, list) or not all(is_number(value) for value in times):
        raise ImportFormatError(f"{FORMAT_NAME}: {where} 'times' must be a list of finite numbers.")
    if not times:
        raise ImportFormatError(f"{FORMAT_NAME}: {where} has no values ('times' is empty).")

    codes = entry.get("exit_codes")
    if isinstance(codes, list) and codes and all(code != 0 for code in codes):
        shown = sorted({"killed" if code is None else str(code) for code in codes})
        return {"benchmark": command, "metric": "time", "failed": True,
                "error": f"every run exited with a failure (exit status {', '.join(shown)}) in {len(codes)} runs"}
    metadata: dict[str, Any] = {key: entry[key] for key in ("user", "system") if is_number(entry.get(key))}
    for key in ("exit_codes", "parameters"):
        if entry.get(key) is not None:
            metadata[key] = entry[key]
    return {
        "benchmark": command,
        "metric": "time",
        "unit": "s",
        "direction": "lower_is_better",
        "samples": [float(value) for value in times],
        "metadata": metadata,
    }

