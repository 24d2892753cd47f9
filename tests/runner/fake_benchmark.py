"""A stand-in benchmark for the command-workload tests; the first argument picks its behaviour.

echo PATH ...        write {"argv", "env"} as JSON to PATH and exit (wall-time mode)
units N              print N unit readings, a reading and some free text (json_lines mode)
noise N SEED         print N i.i.d. unit readings (mean 1 ms, 5% noise) and their mean as the reading
malformed            print a valid protocol line, then a broken one
fail CODE            write to stderr and exit with CODE
hang PATH [--ignore-term]
                     start a sleeping child, write {"pid", "pgid", "child"} to PATH, then sleep;
                     with --ignore-term it ignores SIGTERM so only SIGKILL ends it
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def main(mode: str, *args: str) -> None:
    if mode == "echo":
        Path(args[0]).write_text(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}))
    elif mode == "units":
        count = int(args[0])
        print("warming up")
        for index in range(count):
            print(json.dumps({"unit": {"time": 0.001 * (index + 1)}}))
        print(json.dumps({"reading": {"time": 0.001 * count, "items": count}}))
        print("done")
    elif mode == "noise":
        import random

        rng = random.Random(f"{args[1]}-{time.monotonic_ns()}")
        units = [rng.gauss(0.001, 0.00005) for _ in range(int(float(args[0])))]
        for value in units:
            print(json.dumps({"unit": {"time": value}}))
        print(json.dumps({"reading": {"time": sum(units) / len(units)}}))
    elif mode == "malformed":
        print(json.dumps({"reading": {"time": 1.0}}))
        print('{"unit": {"time": 0.5}')
    elif mode == "fail":
        print("something broke", file=sys.stderr)
        sys.exit(int(args[0]))
    elif mode == "hang":
        if "--ignore-term" in args:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        pids = {"pid": os.getpid(), "pgid": os.getpgrp(), "child": child.pid}
        Path(args[0]).write_text(json.dumps(pids))
        time.sleep(60)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
