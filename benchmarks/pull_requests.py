"""Pull requests of unchanged and of slower code, through the product: how often each rule calls them a
regression (spec §8, revision 2026-11-26: a pull request is one run against one run).

    .venv/bin/python benchmarks/pull_requests.py                      # 40 projects × 20 series, 3% run-to-run
    .venv/bin/python benchmarks/pull_requests.py --levels 0.01 0.03 --projects 20

Each project posts ``--nights`` nightly runs of ``--series`` series on main through
``results.services.ingest_run`` and compares each (``results.comparisons.compare_run``, as the worker
does), then one pull-request run whose base commit is the newest night: half of its series unchanged, half
15% slower. Every run draws its own level per series (the run-to-run sd, the ``--levels``), and its readings
around it (within-run sd 1%, 30 readings, stored as a summary). Printed per level, for the unchanged series
and for the slower ones, the share the pull request's stored verdict calls *regression*, and *regression or
suspected regression*:

- ``product``: the stored comparison, the run-to-run component of the series' nightly history carried in;
- ``within-run``: the rule before it, on the same stored results (Welch and Fieller on the two runs'
  subsessions, q-values and the suspected rule across the run), the obvious way;
- ``no history``: the same pull request in a project without nightly history (only its base run), where the
  product says "one run each: run-to-run noise unknown" and claims nothing.

Targets (issue 30): at 3% run-to-run noise, ≤ 3% of unchanged series called regression, while ≥ 75% of
15% slowdowns are still called regression or suspected regression.
"""

import argparse
import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.databases import measure_in_child  # noqa: E402

WITHIN_SD = 0.01
READINGS = 30
SLOWDOWN = 0.15
START = datetime(2026, 1, 1, 2, tzinfo=timezone.utc)


def measure(*, projects: int, series: int, nights: int, level: float, seed: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command

    from results import comparisons, decisions, pairwise_rows, services
    from results.models import Comparison, ComparisonMethod
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(seed)
    slower = np.arange(series) >= series // 2

    def post(project: str, night: int, factors: np.ndarray, **revision) -> int:
        levels = (1.0 + rng.normal(0.0, level, series)) * factors
        readings = levels[:, None] * (1.0 + rng.normal(0.0, WITHIN_SD, (series, READINGS)))
        document = RunIn.model_validate({
            "project": {"name": project}, "machine": {"name": "bench-1"},
            "kind": "pr" if "base_commit" in revision else "nightly",
            "revision": {"commit": f"{night:040x}", "branch": "main", **revision},
            "started_at": START + timedelta(days=night),
            "results": [{"benchmark": f"series {i:02d}", "summary": {
                "mean": float(readings[i].mean()), "subsession_size": 1,
                "variance": float(readings[i].var(ddof=1)), "n": READINGS}} for i in range(series)]})
        run = services.ingest_run(document=document, user=None).run
        comparisons.compare_run(run_id=run.pk)
        return run.pk

    counts = {rule: {"unchanged": [0, 0], "slower": [0, 0]} for rule in ("product", "within-run", "no history")}

    def count(rule: str, verdicts: dict[str, str]) -> None:
        for name, verdict in verdicts.items():
            side = counts[rule]["slower" if slower[int(name.split()[-1])] else "unchanged"]
            side[0] += verdict == "regression"
            side[1] += verdict in ("regression", decisions.SUSPECTED_REGRESSION)

    pull_request = np.where(slower, 1.0 + SLOWDOWN, 1.0)
    for p in range(projects):
        for night in range(nights):
            post(f"project {p}", night, np.ones(series))
        head = post(f"project {p}", nights, pull_request, branch="feature", pull_request=p + 1,
                    base_commit=f"{nights - 1:040x}")
        stored = Comparison.objects.filter(candidate__run_id=head, method=ComparisonMethod.PAIRWISE)
        count("product", dict(stored.values_list("candidate__metric__benchmark__name", "verdict")))
        # The rule before: the same two stored results, within-run variance alone.
        pairs = [(base, cand) for cand, base in zip(*(comparisons.series_from_results(
            [c.candidate if side else c.baseline for c in stored.select_related(
                "candidate__metric__benchmark", "baseline__metric__benchmark").order_by("pk")], with_samples=False)
            for side in (True, False)))]
        rows = pairwise_rows.with_suspected(pairwise_rows.with_qvalues(pairwise_rows.pairwise_rows(
            pairs, method=ComparisonMethod.PAIRWISE)))
        count("within-run", {row.benchmark: row.verdict for row in rows})
        # No nightly history: the base run alone, then the same pull request.
        post(f"alone {p}", nights - 1, np.ones(series))
        alone = post(f"alone {p}", nights, pull_request, branch="feature", pull_request=p + 1,
                     base_commit=f"{nights - 1:040x}")
        count("no history", dict(Comparison.objects.filter(candidate__run_id=alone, method=ComparisonMethod.PAIRWISE)
                                 .values_list("candidate__metric__benchmark__name", "verdict")))
    total = {"unchanged": projects * int((~slower).sum()), "slower": projects * int(slower.sum())}
    return {"level": level, "total": total,
            "shares": {rule: {side: [value / total[side] for value in found] for side, found in sides.items()}
                       for rule, sides in counts.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--series", type=int, default=20)
    parser.add_argument("--nights", type=int, default=14)
    parser.add_argument("--levels", type=float, nargs="+", default=[0.01, 0.03],
                        help="Run-to-run sd, relative (default 1%% and 3%%).")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--level", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(projects=arguments.projects, series=arguments.series, nights=arguments.nights,
                                 level=arguments.level, seed=arguments.seed)))
        return
    print(f"{arguments.projects} pull requests × {arguments.series} series (half {SLOWDOWN:.0%} slower), "
          f"{arguments.nights} nights of history; within-run sd {WITHIN_SD:.0%} over {READINGS} readings; "
          f"SQLite, tasks in-process; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'run-to-run':>10} {'rule':>11} | {'unchanged: regression':>21} {'or suspected':>12} | "
          f"{'slower: regression':>18} {'or suspected':>12}")
    for level in arguments.levels:
        figures = measure_in_child(__file__, ["--projects", str(arguments.projects), "--series",
                                              str(arguments.series), "--nights", str(arguments.nights),
                                              "--level", str(level), "--seed", str(arguments.seed)],
                                   database="sqlite")
        for rule, shares in figures["shares"].items():
            (same, same_any), (slow, slow_any) = shares["unchanged"], shares["slower"]
            print(f"{f'{level:.1%}':>10} {rule:>11} | {same:>21.1%} {same_any:>12.1%} | {slow:>18.1%} "
                  f"{slow_any:>12.1%}")
    print(f"series: {figures['total']['unchanged']} unchanged, {figures['total']['slower']} slower per level. "
          "Targets at 3%: unchanged called regression ≤ 3%; slower called regression or suspected ≥ 75%.")


if __name__ == "__main__":
    main()
