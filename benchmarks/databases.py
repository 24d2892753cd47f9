"""Run a benchmark's measuring half in a child process on a fresh SQLite file or PostgreSQL cluster."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.processes import real_redis

ROOT = Path(__file__).resolve().parents[1]
DATABASES = ("sqlite", "postgres")


def chosen(database: str) -> tuple[str, ...]:
    """The databases a ``--database sqlite|postgres|both`` option names."""
    return DATABASES if database == "both" else (database,)


def measure_in_child(script: str, arguments: list[str], *, database: str) -> dict:
    """Run ``script --child ARGUMENTS`` against `database` and return the JSON its last line prints.

    SQLite gets a file in a temporary directory, PostgreSQL a throwaway cluster
    (``tests.pgcluster``); either way nothing of the developer's own database is touched. A
    real Redis runs beside it, as in production, so enqueueing the follow-up tasks (the
    comparison of a stored run, notifications) costs what it costs there.
    """
    command = [sys.executable, script, "--child", *arguments]
    if database == "postgres":
        command = [sys.executable, "-m", "tests.pgcluster", "--", *command]
    with tempfile.TemporaryDirectory() as directory, real_redis() as redis:
        environment = {**os.environ, "PILOTWEB_VAR_DIR": directory, "REDIS_URL": redis.url}
        environment.pop("DATABASE_URL", None)
        finished = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)
    if finished.returncode != 0:
        raise SystemExit(f"{database} run failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])
