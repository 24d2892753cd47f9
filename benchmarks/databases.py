"""Shared by the benchmarks: repeated timings with the machine's load beside them, and running a benchmark's
measuring half in a child process on a fresh SQLite file or PostgreSQL cluster.

Every figure is a ratio against a baseline that does the same work the obvious way, measured in the same run:
:func:`interleaved` times both, turn about, so a change of load on the shared machine touches both alike.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.processes import real_redis

ROOT = Path(__file__).resolve().parents[1]
DATABASES = ("sqlite", "postgres")
REPEATS = 5


def interleaved(functions: dict[str, Callable[[], object]], *, repeats: int = REPEATS,
                prepare: Callable[[], object] | None = None) -> dict[str, list[float]]:
    """Wall-clock seconds of `repeats` calls of each function, called in turn (a, b, a, b, ...);
    ``prepare`` runs, untimed, before every call."""
    seconds: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            if prepare is not None:
                prepare()
            started = time.perf_counter()
            function()
            seconds[name].append(time.perf_counter() - started)
    return seconds


def spread(seconds: list[float]) -> tuple[float, float]:
    """(min, median) of repeated timings."""
    return min(seconds), statistics.median(seconds)


def load() -> float:
    """The 1-minute load average (the machine is shared: note it beside every figure)."""
    return os.getloadavg()[0]


def chosen(database: str) -> tuple[str, ...]:
    """The databases a ``--database sqlite|postgres|both`` option names."""
    return DATABASES if database == "both" else (database,)


def print_verdicts(target: str, verdicts: list[str], legend: str) -> None:
    """The end of a database benchmark's table: its target, each database's verdict against it, how to read it."""
    print(target)
    for line in verdicts:
        print("  " + line)
    print(legend)


def measure_in_child(script: str, arguments: list[str], *, database: str, debug: bool = True) -> dict:
    """Run ``script --child ARGUMENTS`` against `database` and return the JSON its last line prints.

    SQLite gets a file in a temporary directory, PostgreSQL a throwaway cluster
    (``tests.pgcluster``); either way nothing of the developer's own database is touched. A
    real Redis runs beside it, as in production, so enqueueing the follow-up tasks (the
    comparison of a stored run, notifications) costs what it costs there. With ``debug`` false
    the child runs as ``./pilot up`` does (``PILOTWEB_LOCAL``: DEBUG off, the static files collected first), so
    Django does not log every query as it is made, as in production.
    """
    command = [sys.executable, script, "--child", *arguments]
    if database == "postgres":
        command = [sys.executable, "-m", "tests.pgcluster", "--", *command]
    with tempfile.TemporaryDirectory() as directory, real_redis() as redis:
        environment = {**os.environ, "PILOTWEB_VAR_DIR": directory, "REDIS_URL": redis.url}
        environment.pop("DATABASE_URL", None)
        if not debug:
            environment.pop("DEBUG", None)
            environment["PILOTWEB_LOCAL"] = "1"
            # Without debug the pages name the static files by their collected, content-hashed copies.
            environment["STATIC_ROOT"] = str(Path(directory) / "static")
            subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"], cwd=ROOT,
                           env=environment, check=True)
        finished = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)
    if finished.returncode != 0:
        raise SystemExit(f"{database} run failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])
