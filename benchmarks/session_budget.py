"""A session's machine time against its budget (issue 30: "the budget is the machine time the session takes,
analysis included, within 10%").

    .venv/bin/python benchmarks/session_budget.py                 # 30 s budgets, 2 repetitions
    .venv/bin/python benchmarks/session_budget.py --budget 60 --repetitions 3

Each workload's session runs through ``runner.execution.execute_session`` as a bench worker runs it (SQLite in a
temporary directory, no broker), with a target no session reaches, so that the budget ends it. Printed per
workload: the budget, the machine time from claiming the session to its stored runs (min and median of the
repetitions), the share over budget, and the same session stored the obvious way: the stable phase of every
round found again after the last round (EDM on each, as the stored samples and the run page's analysis did
before they took the session's own phases), measured in the same run. The machine's load is printed.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import measure_in_child  # noqa: E402

FAKE = str(ROOT / "tests" / "runner" / "fake_benchmark.py")
WORKLOADS = {
    # A command printing 200-4,000 unit readings a round as JSON lines (EDM on each round).
    "command, unit readings": {"workload_kind": "command", "builtin": "", "reading_mode": "json_lines",
                               "command": [sys.executable, FAKE, "noise", "{work_amount}", "7"],
                               "metrics": [{"name": "time", "unit": "s"}], "work_min": 200, "work_max": 4000},
    "built-in sort": {"workload_kind": "builtin", "builtin": "sort", "work_min": 1, "work_max": 1000},
}


def measure(*, workload: str, budget: float, obvious: bool) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from results.models import Machine, Project
    from runner import execution, services
    from runner.models import Session

    call_command("migrate", verbosity=0)
    if obvious:
        # Before: the session's phases were not kept, so storing it found every round's stable phase again.
        finish = execution._finish

        def without_phases(session, outcome):
            outcome.phases.clear()
            return finish(session, outcome)

        execution._finish = without_phases
    staff = get_user_model().objects.create(username="staff", is_staff=True, is_superuser=True)
    job = services.create_job(user=staff, project=Project.objects.create(name="Budget", slug="budget"),
                              name="budget", benchmark="budget", machine=Machine.objects.create(
                                  name="bench", queue="bench.budget"),
                              min_round_duration=0.0, budget_seconds=budget, target_width=0.0001,
                              **WORKLOADS[workload])
    session = Session.objects.create(job=job)
    began = time.perf_counter()
    execution.execute_session(session_id=session.pk, attempt=0)
    machine_time = time.perf_counter() - began
    session.refresh_from_db()
    return {"machine_time": machine_time, "status": session.status, "rounds": session.rounds.count(),
            "runs": session.runs.count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--workload", choices=list(WORKLOADS), help=argparse.SUPPRESS)
    parser.add_argument("--obvious", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(workload=arguments.workload, budget=arguments.budget, obvious=arguments.obvious)))
        return
    print(f"session machine time against a {arguments.budget:g} s budget, {arguments.repetitions} repetitions; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'workload':>24} {'stored':>8} | {'min s':>7} {'median s':>8} {'over budget':>11} | rounds")
    for workload in WORKLOADS:
        for obvious in (False, True):
            found = [measure_in_child(__file__, ["--workload", workload, "--budget", str(arguments.budget)]
                                      + (["--obvious"] if obvious else []), database="sqlite")
                     for _ in range(arguments.repetitions)]
            times = [item["machine_time"] for item in found]
            median = statistics.median(times)
            print(f"{workload:>24} {'obvious' if obvious else 'product':>8} | {min(times):>7.1f} {median:>8.1f} "
                  f"{median / arguments.budget - 1:>+11.0%} | {', '.join(str(item['rounds']) for item in found)}")
    print(f"load at the end {os.getloadavg()[0]:.1f}. product: the session's own stable phases stored; obvious: "
          "found again after the last round. Target: within 10% of the budget.")


if __name__ == "__main__":
    main()
