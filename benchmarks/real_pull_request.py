"""A pull request of unchanged code, measured with real pyperf runs made here, through the product (issue 30).

    .venv/bin/python benchmarks/real_pull_request.py                  # 8 nights, a base, a head under load
    .venv/bin/python benchmarks/real_pull_request.py --nights 10 --busy 2

pyperf (``python -m pyperf timeit --fast``) times the same statements every "night" and stores its JSON; the
files are imported with the product's pyperf importer and compared as the worker does (SQLite in a temporary
directory). The head is the same code as its base, measured while ``--busy`` processes spin beside it (the
issue's case: the machine's load 3.3 for the base, 4.7 for the head). Printed per benchmark, the head against its
base: the product's verdict (the run-to-run noise the nightly history measured carried in) beside the rule before
it (the two runs' within-run variance alone), and, for the same files in a project without nightly history,
the product's verdict there; then what the pull request page says of the machine's state.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.databases import measure_in_child  # noqa: E402

STATEMENTS = {
    "json_dumps": ("-s", "import json; data = {'a': list(range(100)), 'b': 'x' * 100}", "json.dumps(data)"),
    "sort_list": ("-s", "import random; r = random.Random(1); xs = [r.random() for _ in range(2000)]",
                  "sorted(xs)"),
}
START = datetime(2026, 11, 1, 2, tzinfo=timezone.utc)


def pyperf_run(directory: Path, name: str, *, busy: int, spin_up: float = 0.0) -> Path:
    """One pyperf file of every statement, with `busy` CPU spinners beside it, started `spin_up` seconds
    before (a 1-minute load average takes about that long to show them)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    time.sleep(spin_up if busy else 0.0)
    try:
        suite = []
        for benchmark, (flag, setup, statement) in STATEMENTS.items():
            out = directory / f"{name}-{benchmark}.json"
            subprocess.run([sys.executable, "-m", "pyperf", "timeit", "--fast", "--quiet", "--name", benchmark,
                            flag, setup, statement, "-o", str(out)], check=True, capture_output=True)
            suite.append(out)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    merged = directory / f"{name}.json"
    documents = [json.loads(path.read_text()) for path in suite]
    # A file of one benchmark keeps its name (and other per-benchmark metadata) at the top: move it down.
    for document in documents:
        own = {key: document["metadata"].pop(key) for key in ("name", "timeit_setup", "timeit_stmt")
               if key in document.get("metadata", {})}
        for bench in document["benchmarks"]:
            bench["metadata"] = {**bench.get("metadata", {}), **own}
    combined = {**documents[0], "benchmarks": [bench for document in documents for bench in document["benchmarks"]]}
    merged.write_text(json.dumps(combined))
    return merged


def measure(files: list[str]) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command

    from results import comparisons, pairwise_rows, reports, selectors, services
    from results.access import SYSTEM
    from results.ingest import import_document, stated_overrides
    from results.models import Comparison, ComparisonMethod
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    *nights, head = files

    def post(path: str, project: str, night: int, **revision) -> int:
        overrides = stated_overrides(project=project, machine="here", commit=revision.pop("commit"),
                                     branch=revision.pop("branch", "main"), kind=revision.pop("kind", "nightly"),
                                     **revision)
        document = import_document(format_name="pyperf", content=Path(path).read_bytes(), overrides=overrides)
        document["started_at"] = (START + timedelta(days=night)).isoformat()
        run = services.ingest_run(document=RunIn.model_validate(document), user=None).run
        comparisons.compare_run(run_id=run.pk)
        return run.pk

    found = {}
    for project, history in (("with history", nights), ("alone", nights[-1:])):
        first = len(nights) - len(history)
        for night, path in enumerate(history, start=first):
            post(path, project, night, commit=f"{night:040x}")
        pull = post(head, project, len(nights), commit="c" * 40, branch="feature", kind="pr", pull_request=1,
                    base_commit=f"{len(nights) - 1:040x}")
        stored = Comparison.objects.filter(candidate__run_id=pull, method=ComparisonMethod.PAIRWISE)
        found[project] = {c.candidate.metric.benchmark.name: [c.verdict, c.ratio, c.ci_low, c.ci_high]
                          for c in stored.select_related("candidate__metric__benchmark")}
        found[f"{project} noise"] = {
            c.candidate.metric.benchmark.name: (c.inputs.get("run_variance") or 0.0) ** 0.5 / c.baseline.mean
            for c in stored.select_related("candidate__metric__benchmark", "baseline")}
        if project == "with history":
            pairs = [(base, cand) for cand, base in zip(*(comparisons.series_from_results(
                [c.candidate if side else c.baseline for c in stored.select_related(
                    "candidate__metric__benchmark", "baseline__metric__benchmark").order_by("pk")],
                with_samples=False) for side in (True, False)))]
            rows = pairwise_rows.with_suspected(pairwise_rows.with_qvalues(pairwise_rows.pairwise_rows(pairs, method="pairwise")))
            found["within-run"] = {row.benchmark: [row.verdict, row.ratio, row.low, row.high] for row in rows}
            found["state"] = selectors.pr_review(run_id=pull, viewer=SYSTEM).state_differences
            found["markdown"] = reports.pr_markdown(selectors.pr_review(run_id=pull, viewer=SYSTEM))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nights", type=int, default=8)
    parser.add_argument("--busy", type=int, default=2, help="CPU spinners beside the head's run")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.child)))
        return
    print(f"pyperf timeit --fast of {', '.join(STATEMENTS)}: {arguments.nights} nights and a base, then the same "
          f"code as the head beside {arguments.busy} CPU spinners; load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as directory:
        files = [str(pyperf_run(Path(directory), f"night{night}", busy=0)) for night in range(arguments.nights)]
        files.append(str(pyperf_run(Path(directory), "head", busy=arguments.busy, spin_up=60.0)))
        found = measure_in_child(__file__, files, database="sqlite")

    def said(entry) -> str:
        verdict, ratio, low, high = entry
        interval = "" if low is None or high is None else f" [{low - 1:+.1%}, {high - 1:+.1%}]"
        return f"{verdict} {ratio - 1:+.1%}{interval}" if ratio is not None else verdict

    print(f"{'benchmark':>12} | {'within-run rule':>38} | {'product, with history':>38} | {'product, no history':>30}")
    for name in STATEMENTS:
        print(f"{name:>12} | {said(found['within-run'][name]):>38} | {said(found['with history'][name]):>38} | "
              f"{said(found['alone'][name]):>30}")
    print("run-to-run sd the nightly history measured: " + ", ".join(
        f"{name} {noise:.1%}" for name, noise in found["with history noise"].items()))
    print("machine state said on the pull request:", found["state"] or "nothing")


if __name__ == "__main__":
    main()
