"""``manage.py compare --files`` against ``pyperf compare_to`` on the same two pyperf files (issue 17, item 5).

    .venv/bin/python benchmarks/cli_compare.py                      # 1 and 2,000 benchmarks, 7 rounds
    .venv/bin/python benchmarks/cli_compare.py --benchmarks 1 --rounds 15

Writes a baseline and a candidate pyperf suite with pyperf's own API (each benchmark 20 process runs of 3
values and a warm-up, the candidate 3% slower), then runs both commands on them as child processes, one after
the other in each round, their tables read from a pipe and dropped. Both run with a bytecode cache (in a
temporary directory, as an installed tree has its ``__pycache__``), whatever PYTHONDONTWRITEBYTECODE says here;
the first run of each fills it. Prints each command's wall-clock seconds (min and median over the rounds), the
ratio of ours to pyperf's, the minimum of a child that only imports what ours cannot do without (:data:`FLOOR`),
and the load average before and after: the machine's other work slows both, so read the minimum of a quiet moment.
Targets: at most 1.1x ``pyperf compare_to`` on 2,000 benchmarks, at most 0.3 s for one benchmark.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyperf

ROOT = Path(__file__).resolve().parents[1]
RUNS, VALUES, SLOWER = 20, 3, 1.03
TARGETS = {1: ("seconds", 0.3), 2000: ("ratio", 1.1)}
FLOOR = "import gc; gc.disable(); import argparse, scipy.special, pydantic.main; gc.freeze()"
"""What ``compare --files`` cannot do without: its command line, scipy's special functions (which import numpy,
and numpy.testing and numpy.f2py through scipy's array-API layer) and pydantic, which validates the files; with
the garbage collector treated as ``manage.py`` treats it on that path."""


def write_suite(path: Path, benchmarks: int, *, factor: float, seed: int) -> None:
    """A pyperf suite of `benchmarks` benchmarks of about 1 ms (times `factor`), 1% noise, seeded."""
    rng = random.Random(seed)
    suite = []
    for index in range(benchmarks):
        mean = (1.0 + index / max(benchmarks, 1)) * 1e-3 * factor
        runs = []
        for _ in range(RUNS):
            values = [mean * (1.0 + rng.gauss(0.0, 0.01)) for _ in range(VALUES)]
            runs.append(pyperf.Run(values, warmups=[(1, values[0])], collect_metadata=False,
                                   metadata={"name": f"bench_{index}", "loops": 1}))
        suite.append(pyperf.Benchmark(runs))
    pyperf.BenchmarkSuite(suite).dump(str(path), replace=True)


def seconds(command: list[str], environment: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=environment)
    return time.perf_counter() - started


def with_bytecode_cache(directory: Path) -> dict[str, str]:
    """This process's environment with Python's bytecode cache written to and read from `directory`."""
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**environment, "PYTHONPYCACHEPREFIX": str(directory)}


def measure(benchmarks: int, rounds: int, directory: Path) -> dict[str, list[float]]:
    baseline, candidate = directory / f"baseline-{benchmarks}.json", directory / f"candidate-{benchmarks}.json"
    write_suite(baseline, benchmarks, factor=1.0, seed=1)
    write_suite(candidate, benchmarks, factor=SLOWER, seed=2)
    commands = {
        "ours": [sys.executable, str(ROOT / "manage.py"), "compare", "--files", str(baseline), str(candidate)],
        "pyperf": [sys.executable, "-m", "pyperf", "compare_to", str(baseline), str(candidate)],
        "floor": [sys.executable, "-c", FLOOR],
    }
    environment = with_bytecode_cache(directory / "pycache")
    table = subprocess.run(commands["ours"], cwd=ROOT, check=True, capture_output=True, text=True,
                           env=environment).stdout
    assert table.count("\nbench_") == benchmarks, "manage.py compare --files did not print every benchmark"
    # Warms the page cache and fills the bytecode cache.
    subprocess.run(commands["pyperf"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=environment)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            times[name].append(seconds(command, environment))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", type=int, nargs="+", default=[1, 2000], help="benchmarks per file")
    parser.add_argument("--rounds", type=int, default=7, help="runs of each command (at least 5)")
    arguments = parser.parse_args()
    if arguments.rounds < 5:
        parser.error("--rounds must be at least 5: the machine's other work makes single runs meaningless.")
    load_before = os.getloadavg()
    print(f"manage.py compare --files against pyperf {pyperf.__version__} compare_to, two pyperf files of "
          f"{RUNS} runs x {VALUES} values per benchmark; {arguments.rounds} rounds; {os.cpu_count()} CPUs, load "
          f"average {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f} at start")
    print(f"{'benchmarks':>10}{'ours min s':>12}{'median s':>10}{'pyperf min s':>14}{'median s':>10}"
          f"{'ratio min':>11}{'median':>8}{'floor min s':>13}  target")
    with tempfile.TemporaryDirectory() as directory:
        for benchmarks in arguments.benchmarks:
            times = measure(benchmarks, arguments.rounds, Path(directory))
            ours, theirs = times["ours"], times["pyperf"]
            ratio_min, ratio_median = min(ours) / min(theirs), statistics.median(ours) / statistics.median(theirs)
            kind, limit = TARGETS.get(benchmarks, (None, None))
            if kind == "seconds":
                target = f"min <= {limit} s: {'met' if min(ours) <= limit else 'MISSED'}"
            elif kind == "ratio":
                target = f"min ratio <= {limit}x: {'met' if ratio_min <= limit else 'MISSED'}"
            else:
                target = "none"
            print(f"{benchmarks:>10,}{min(ours):>12.3f}{statistics.median(ours):>10.3f}{min(theirs):>14.3f}"
                  f"{statistics.median(theirs):>10.3f}{ratio_min:>10.2f}x{ratio_median:>7.2f}x"
                  f"{min(times['floor']):>13.3f}  {target}")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the end")


if __name__ == "__main__":
    main()
