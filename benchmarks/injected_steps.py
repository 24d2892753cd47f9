"""Steps of known size and night injected into public histories: how soon the product alerts, beside E-Divisive
means and Apache Otava re-run on the nights so far, every night (issue 29, item 6; spec §8, revised 2026-11-26).

    .venv/bin/python benchmarks/fetch_histories.py --mirrors DIR      # once: var/histories/ (see that script)
    nice -n 10 .venv/bin/python benchmarks/injected_steps.py           # both sources: about 20 min on 2 shared
                                                                       # cores (30 the first time: the peers)
    nice -n 10 .venv/bin/python benchmarks/injected_steps.py --quick   # fewer series, a few minutes
    .venv/bin/python benchmarks/injected_steps.py --sources asv --steps 10 20 --seed 1

Sources (benchmarks/histories.md says where each came from):

- ``asv``: ``asv_django_samples.json``, 200 asv runs of django on hosted CI runners, 10 samples a run. 60
  series: 30 stepped, 30 untouched. Steps +10% and +20%.
- ``browser``: ``perfherder_graphs.json``, Firefox Talos histories, one value a push: the 24 windows of 200
  pushes (starts every 100 pushes) whose noise (robust sd of push-to-push differences / √2, relative) is
  0.6-1.2%; windows of one history overlap by up to 100 pushes. 12 stepped, 12 untouched. Steps +3% and +5%.

Seeded (``--seed``): which series are stepped, and the night of each step, uniform in [60, 160] of the 200 (at
least 40 nights follow). A step multiplies every sample (or the value) from its night on; the untouched series
are left as they are. Each step size is its own project and machine holding that source's stepped and untouched
series, so the untouched series are run once per step size.

The product (:func:`benchmarks.product.product_night`, the one place that calls it) runs night by night in child processes
(``--processes``, 2 by default; the projects are shared among them), each on a fresh SQLite file: each night
one run of the project holding all its series as results (the samples where the source has them, one value
with n = 1 otherwise), posted through ``results.services.ingest_run`` with the analysis
tasks run in the process as the analysis worker would run them (``results.queue.analysis_in_process``: the
comparison of the run, the change points of the series it flagged), and the daily ``scan_change_points`` once a
night. After every night the alerts (``results.models.Alert``) are read (and at the end the change points shown, with
what each is read as, a step or a drift: a true step must not be read as a drift): a stepped series is *alerted* on the
first night ≥ its step night at which an alert exists whose first night (``Alert.first_run``) is within ±3
nights of the step; alerts naming other first nights are counted apart ("alerts w/ other first night"), and a
step never alerted is counted as *held* when an alert naming an earlier first night was still suspected on its
night (its nights kept out of the baseline), else as *misdated* when an alert opened within 20 nights after it
names a first night 4 to 20 nights away from it. Nights that 5 or more alerts of one project name as their first
are listed (machine-wide shifts). ``--driver module:function`` replaces the night's call (it gets the ``RunIn``
document), for a redesigned pipeline.

The peers (benchmarks/peer_change_points.py, their defaults) run in their own virtual environment on the
series' values so far (a run's mean of its samples for asv), every night: a stepped series from 5 nights before
its step until each peer has reported a change point within ±3 of it, an untouched series from night 4 on.
On the untouched series a change point counts once, on the night it first appears, per distinct index ±3.
Their results are cached in ``var/injected_steps/`` by the values they were given.

Printed per source and step size: the share of steps alerted within 1, 3 and 7 nights (the step's night is
night 1), the median nights to the alert of those alerted, the steps never alerted in the 200 nights; and the
alerts (us) and change points (peers) per untouched series-night. Target (issue 29): ours ≥ the better peer on
every share, ≤ on the median and on never alerted, at an untouched rate ≤ the better peer's.
"""

import argparse
import hashlib
import importlib
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.databases import measure_in_child  # noqa: E402
from benchmarks.histories import DIRECTORY  # noqa: E402
from benchmarks.product import daily_scan, product_night  # noqa: E402
from benchmarks.real_histories import PEERS, peers_python  # noqa: E402
from results.decisions import DRIFT_KIND, STEP_KIND  # noqa: E402

START = datetime(2020, 1, 1, 2, tzinfo=timezone.utc)
NIGHTS = 200
STEP_NIGHTS = (60, 160)
TOLERANCE = 3
MISDATED = 20
WITHIN = (1, 3, 7)
PEER_NAMES = ("edivisive", "otava")
METHODS = ("us", *PEER_NAMES)
CACHE = ROOT / "var" / "injected_steps"
BROWSER_NOISE = (0.006, 0.012)
BROWSER_STRIDE = 100


# --- The sources --------------------------------------------------------------------------------------------


def relative_noise(values: np.ndarray) -> float:
    """Robust run-to-run sd, relative: 1.4826 · MAD of consecutive differences / √2 / median."""
    differences = np.diff(values)
    return float(1.4826 * np.median(np.abs(differences - np.median(differences))) / np.sqrt(2) / np.median(values))


def load_source(source: str) -> dict:
    """{"file", "source", "commit", "paths", "series": {name: {"values": [...], "samples": [[...], ...] | None}}}."""
    if source == "asv":
        file = "asv_django_samples.json"
    else:
        file = "perfherder_graphs.json"
    path = DIRECTORY / file
    if not path.exists():
        raise SystemExit(f"{path} is missing: rebuild it with benchmarks/fetch_histories.py (see its docstring)")
    document = json.loads(path.read_text(encoding="utf-8"))
    series = {}
    if source == "asv":
        for name, values in document["series"].items():
            if len(values) >= NIGHTS:
                series[name] = {"values": values[-NIGHTS:], "samples": document["samples"][name][-NIGHTS:]}
    else:
        for name, values in document["series"].items():
            values = np.asarray(values, dtype=float)
            for start in range(0, values.size - NIGHTS + 1, BROWSER_STRIDE):
                window = values[start:start + NIGHTS]
                if BROWSER_NOISE[0] <= relative_noise(window) <= BROWSER_NOISE[1]:
                    series[f"{name}[{start}:{start + NIGHTS}]"] = {"values": window.tolist(), "samples": None}
    return {"file": file, "source": document["source"], "commit": document["commit"], "paths": document["paths"],
            "series": series}


def plan(source: dict, *, stepped: int, untouched: int, seed: int) -> dict:
    """Which series are stepped (and on which night) and which are left untouched, drawn with the seed."""
    rng = np.random.default_rng(seed)
    names = sorted(source["series"])
    if stepped + untouched > len(names):
        raise SystemExit(f"{source['file']}: {len(names)} series, {stepped} + {untouched} asked for")
    order = [names[i] for i in rng.permutation(len(names))]
    chosen = order[:stepped]
    nights = rng.integers(STEP_NIGHTS[0], STEP_NIGHTS[1] + 1, size=stepped)
    return {"stepped": {name: int(night) for name, night in zip(sorted(chosen), nights)},
            "untouched": sorted(order[stepped:stepped + untouched])}


def injected(entry: dict, night: int | None, step: float) -> dict:
    """The series with every sample (or value) from `night` on multiplied by 1 + step."""
    factor = np.ones(NIGHTS)
    if night is not None:
        factor[night:] += step
    values = (np.asarray(entry["values"], dtype=float) * factor).tolist()
    samples = None
    if entry["samples"] is not None:
        samples = [(np.asarray(drawn, dtype=float) * f).tolist() for drawn, f in zip(entry["samples"], factor)]
    return {"values": values, "samples": samples}


# --- The product, in a child process -----------------------------------------------------------------------


def measure(path: str) -> dict:
    """The child: every project night by night; the alerts seen, per project and series."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import reset_queries

    from results.models import Alert, ChangePoint, Run
    from results.schemas import RunIn

    call_command("migrate", verbosity=0)
    # A task run in the process logs its failure instead of raising it: count what was logged.
    problems = ProblemLog()
    logging.getLogger().addHandler(problems)
    payload = json.loads(Path(path).read_text())
    night_call = product_night
    if payload.get("driver"):
        module, function = payload["driver"].split(":")
        night_call = getattr(importlib.import_module(module), function)
    # alert id -> [project, series, night first seen, night last seen, [[night, first night, state], ...], state]:
    # the alert's first night and state as from each night they changed.
    seen: dict[int, list] = {}
    seconds = 0.0
    for project in payload["projects"]:
        for night in range(payload["nights"]):
            results = []
            for name, entry in project["series"].items():
                result = {"benchmark": name, "unit": project["unit"], "direction": project["direction"]}
                if entry["samples"] is not None:
                    result["samples"] = entry["samples"][night]
                else:
                    result["summary"] = {"mean": entry["values"][night], "subsession_size": 1, "variance": 0.0,
                                         "n": 1}
                results.append(result)
            document = RunIn.model_validate({
                "project": {"name": project["name"]}, "machine": {"name": project["machine"]}, "kind": "nightly",
                "revision": {"commit": f"{night:040x}", "branch": "main"},
                "started_at": START + timedelta(days=night), "results": results})
            started = time.perf_counter()
            night_call(document)
            if payload["daily_scan"]:
                daily_scan()
            seconds += time.perf_counter() - started
            run = Run.objects.filter(project__name=project["name"], started_at=START + timedelta(days=night)).first()
            if run is None or run.compared_at is None:
                raise SystemExit(f"{project['name']} night {night}: the run was not stored and compared")
            for pk, name, opened, first, state in Alert.objects.filter(
                    comparison__candidate__run__project__name=project["name"]).values_list(
                    "pk", "comparison__candidate__metric__benchmark__name", "comparison__candidate__run__started_at",
                    "first_run__started_at", "state"):
                first_night = (first - START).days if first is not None else (opened - START).days
                if pk not in seen:
                    seen[pk] = [project["name"], name, night, night, [[night, first_night, state]], state]
                entry = seen[pk]
                entry[3], entry[5] = night, state
                if entry[4][-1][1:] != [first_night, state]:
                    entry[4].append([night, first_night, state])
            reset_queries()
    logging.getLogger().removeHandler(problems)
    # The change points shown at the end, each with what it is read as (a step or a drift).
    shown = [[project, name, (started - START).days, kind]
             for project, name, started, kind in ChangePoint.objects.filter(retracted_at__isnull=True).values_list(
                 "metric__benchmark__project__name", "metric__benchmark__name", "run__started_at", "kind")]
    return {"alerts": list(seen.values()), "change_points": shown, "seconds": seconds, "problems": problems.count,
            "problem_examples": problems.examples}


class ProblemLog(logging.Handler):
    """Counts the warnings and errors logged, and keeps the first few."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.count, self.examples = 0, []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(f"{record.name}: {record.getMessage()[:300]}")


def project_weight(project: dict) -> int:
    """The cost of a project's nights, roughly: its series, samples counting double."""
    return sum(2 if entry["samples"] is not None else 1 for entry in project["series"].values())


# --- The peers, online -------------------------------------------------------------------------------------


class PeerCache:
    """Each peer's change points of a series' values so far, by a digest of those values."""

    def __init__(self, path: Path):
        self.path = path
        self.entries: dict[str, list[int]] = json.loads(path.read_text()) if path.exists() else {}

    @staticmethod
    def key(peer: str, values: list[float]) -> str:
        digest = hashlib.sha1(np.asarray(values, dtype=np.float64).tobytes()).hexdigest()
        return f"{peer}:{'/'.join(PEERS)}:{digest}"

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.entries, separators=(",", ":")))


def run_peers(python: str, jobs: list[dict], cache: PeerCache, *, workers: int) -> dict:
    """{key: {night: {peer: [change points]}}} for every job (see peer_change_points.py --online), computed in
    `workers` processes, the cached results handed in."""
    for job in jobs:
        job["known"] = {}
        for night in job["nights"]:
            known = {peer: cache.entries[k] for peer in PEER_NAMES
                     if (k := cache.key(peer, job["values"][:night + 1])) in cache.entries}
            if known:
                job["known"][str(night)] = known
    costs = sorted(jobs, key=lambda job: -sum(night ** 2 for night in job["nights"]
                                                 if len(job["known"].get(str(night), {})) < len(PEER_NAMES)))
    shares: list[list[dict]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for job in costs:
        cost = sum(night ** 2 for night in job["nights"] if len(job["known"].get(str(night), {})) < len(PEER_NAMES))
        index = loads.index(min(loads))
        shares[index].append(job)
        loads[index] += cost
    script = str(ROOT / "benchmarks" / "peer_change_points.py")
    processes = [subprocess.Popen(["nice", "-n", "10", python, script, "--online"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for share in shares if share]
    outputs = []
    for process, share in zip(processes, [share for share in shares if share]):
        process.stdin.write(json.dumps(share))
        process.stdin.close()
    for process in processes:
        outputs.append(json.loads(process.stdout.read()))
        if process.wait() != 0:
            raise SystemExit("the peers failed")
    found = {key: value for output in outputs for key, value in output.items()}
    by_key = {job["key"]: job for job in jobs}
    for key, nights in found.items():
        for night, result in nights.items():
            for peer, points in result.items():
                cache.entries[cache.key(peer, by_key[key]["values"][:int(night) + 1])] = points
    cache.save()
    return found


# --- Scoring -----------------------------------------------------------------------------------------------


def first_alerted(alerts: list[list], step: int) -> int | None:
    """The first night ≥ step at which one of the series' alerts exists naming a first night within ±TOLERANCE."""
    nights = []
    for _, _, first_seen, last_seen, firsts, _ in alerts:
        for index, (since, first, _) in enumerate(firsts):
            until = firsts[index + 1][0] - 1 if index + 1 < len(firsts) else last_seen
            if abs(first - step) <= TOLERANCE and until >= step:
                nights.append(max(since, first_seen, step))
    return min(nights) if nights else None


def held_at(alert: list, night: int) -> bool:
    """Whether the alert was suspected (keeping its nights out of the series' baseline) over `night`, naming a first
    night before it."""
    _, _, first_seen, last_seen, history, _ = alert
    if not first_seen <= night <= last_seen:
        return False
    current = [entry for entry in history if entry[0] <= night][-1]
    return current[1] < night - TOLERANCE and current[2] == "suspected"


def peer_first(nights: dict, peer: str, step: int) -> int | None:
    for night in sorted(nights, key=int):
        points = nights[night].get(peer)
        if points is not None and any(abs(point - step) <= TOLERANCE for point in points):
            return max(int(night), step)
    return None


def distinct_new_points(nights: dict, peer: str) -> int:
    """Change points counted once, on the night they first appear, per distinct index ±TOLERANCE."""
    counted: list[int] = []
    for night in sorted(nights, key=int):
        for point in nights[night].get(peer, []):
            if not any(abs(point - other) <= TOLERANCE for other in counted):
                counted.append(point)
    return len(counted)


def summary(delays: list[int | None]) -> dict:
    hits = [d for d in delays if d is not None]
    return {"within": {m: sum(d <= m for d in hits) / len(delays) for m in WITHIN},
            "median": statistics.median(hits) if hits else None, "never": len(delays) - len(hits),
            "steps": len(delays)}


# --- Main --------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", nargs="+", choices=("asv", "browser"), default=["asv", "browser"])
    parser.add_argument("--steps", nargs="+", type=float, help="Step sizes in percent, for every source chosen "
                        "(default: asv 10 20, browser 3 5).")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--quick", action="store_true", help="10 + 10 asv series, 6 + 6 browser windows.")
    parser.add_argument("--peers-python", help="A Python with signal-processing-algorithms and apache-otava.")
    parser.add_argument("--processes", type=int, default=2, help="Product processes at once (the step sizes' "
                        "projects are shared among them, each process on its own database).")
    parser.add_argument("--peer-processes", type=int, default=1, help="Peer processes at once, beside them.")
    parser.add_argument("--no-daily-scan", action="store_true", help="Skip the daily scan_change_points.")
    parser.add_argument("--driver", help="module:function called with each night's RunIn instead of the product's "
                        "ingestion and analysis tasks.")
    parser.add_argument("--json", help="Also write the per-step results to this file.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(measure(arguments.child)))
        return

    began = time.perf_counter()
    loads = [os.getloadavg()[0]]
    counts = {"asv": (10, 10) if arguments.quick else (30, 30), "browser": (6, 6) if arguments.quick else (12, 12)}
    default_steps = {"asv": [10.0, 20.0], "browser": [3.0, 5.0]}
    python = peers_python(arguments.peers_python)
    cache = PeerCache(CACHE / "peers.json")
    sources, projects, jobs = {}, [], []
    for name in arguments.sources:
        source = load_source(name)
        chosen = plan(source, stepped=counts[name][0], untouched=counts[name][1], seed=arguments.seed)
        steps = arguments.steps or default_steps[name]
        sources[name] = {**source, "plan": chosen, "steps": steps}
        for step in steps:
            series = {series_name: injected(source["series"][series_name], night, step / 100)
                      for series_name, night in chosen["stepped"].items()}
            series.update({series_name: injected(source["series"][series_name], None, 0)
                           for series_name in chosen["untouched"]})
            projects.append({"name": f"{name} {step:+g}%", "machine": f"{name}-{step:g}", "unit": "s",
                             "direction": "lower_is_better", "series": series, "source": name, "step": step})
            for series_name, night in chosen["stepped"].items():
                jobs.append({"key": f"{name}|{step:g}|{series_name}", "values": series[series_name]["values"],
                             "nights": list(range(max(night - 5, 0), NIGHTS)), "center": night,
                             "tolerance": TOLERANCE})
        for series_name in chosen["untouched"]:
            jobs.append({"key": f"{name}|untouched|{series_name}", "values": source["series"][series_name]["values"],
                         "nights": list(range(4, NIGHTS)), "center": None, "tolerance": TOLERANCE})

    # The product's projects in `--processes` children (each its own fresh database), and the peers, at once.
    shares: list[list[dict]] = [[] for _ in range(max(min(arguments.processes, len(projects)), 1))]
    weights = [0] * len(shares)
    for project in sorted(projects, key=lambda p: -project_weight(p)):
        index = weights.index(min(weights))
        shares[index].append(project)
        weights[index] += project_weight(project)
    CACHE.mkdir(parents=True, exist_ok=True)
    outputs: list[dict | None] = [None] * len(shares)

    def run_product(index: int) -> None:
        scratch = CACHE / f"product-{os.getpid()}-{index}.json"
        scratch.write_text(json.dumps({"projects": shares[index], "nights": NIGHTS,
                                       "daily_scan": not arguments.no_daily_scan, "driver": arguments.driver}))
        try:
            outputs[index] = measure_in_child(__file__, [str(scratch)], database="sqlite", debug=False)
        finally:
            scratch.unlink()

    threads = [threading.Thread(target=run_product, args=(index,)) for index in range(len(shares))]
    for thread in threads:
        thread.start()
    peers = run_peers(python, jobs, cache, workers=arguments.peer_processes)
    loads.append(os.getloadavg()[0])
    for thread in threads:
        thread.join()
    if any(output is None for output in outputs):
        raise SystemExit("the product's run failed (see above)")
    loads.append(os.getloadavg()[0])
    product = {"alerts": [alert for output in outputs for alert in output["alerts"]],
               "seconds": sum(output["seconds"] for output in outputs)}
    kinds_by_series: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for project, series_name, night, kind in (point for output in outputs for point in output["change_points"]):
        kinds_by_series[project, series_name].append((night, kind))
    problems = sum(output["problems"] for output in outputs)
    if problems:
        print(f"The product logged {problems} warnings or errors, e.g.: "
              + " | ".join(example for output in outputs for example in output["problem_examples"][:2]))

    alerts_by_series: dict[tuple[str, str], list] = defaultdict(list)
    for alert in product["alerts"]:
        alerts_by_series[alert[0], alert[1]].append(alert)
    report = {}
    for name, source in sources.items():
        chosen = source["plan"]
        print(f"\n== {name}: {source['source']} @ {source['commit']} ({source['file']})\n   paths: "
              + paths_summary(source["paths"]))
        noise = [relative_noise(np.asarray(source["series"][s]["values"]))
                 for s in [*chosen["stepped"], *chosen["untouched"]]]
        print(f"   {len(chosen['stepped'])} stepped + {len(chosen['untouched'])} untouched series of {NIGHTS} nights "
              f"(run-to-run noise of the values, robust: {min(noise):.1%}-{max(noise):.1%}, "
              f"median {statistics.median(noise):.1%}); step nights {sorted(chosen['stepped'].values())}")
        rows = []
        untouched_alerts = 0
        for step in source["steps"]:
            project = f"{name} {step:+g}%"
            delays = {method: [] for method in METHODS}
            other_first, absorbed, misdated, details = 0, 0, 0, []
            for series_name, night in chosen["stepped"].items():
                alerts = alerts_by_series.get((project, series_name), [])
                ours = first_alerted(alerts, night)
                delays["us"].append(None if ours is None else ours - night + 1)
                nights = peers[f"{name}|{step:g}|{series_name}"]
                for peer in PEER_NAMES:
                    found = peer_first(nights, peer, night)
                    delays[peer].append(None if found is None else found - night + 1)
                others = [a for a in alerts if all(abs(first - night) > TOLERANCE for _, first, _ in a[4])]
                other_first += len(others)
                if ours is None:
                    if any(held_at(a, night) for a in alerts):
                        absorbed += 1
                    elif any(night <= a[2] <= night + MISDATED and TOLERANCE < abs(a[4][0][1] - night) <= MISDATED
                             for a in alerts):
                        misdated += 1
                details.append({"series": series_name, "night": night, "us": delays["us"][-1],
                                "edivisive": delays["edivisive"][-1], "otava": delays["otava"][-1],
                                "alerts": [[a[2], a[4], a[5]] for a in alerts]})
            read = [{kind for at, kind in kinds_by_series.get((project, series_name), [])
                     if abs(at - night) <= TOLERANCE} for series_name, night in chosen["stepped"].items()]
            drifts_untouched = sum(kind == DRIFT_KIND for s in chosen["untouched"]
                                   for _, kind in kinds_by_series.get((project, s), []))
            print(f"   {step:+g}%: change points shown at the end at the step's night (±{TOLERANCE}): as a step "
                  f"{sum(STEP_KIND in kinds for kinds in read)}, "
                  f"as a drift {sum(DRIFT_KIND in kinds for kinds in read)}, "
                  f"none {sum(not kinds for kinds in read)} of {len(read)}; drifts on the untouched series "
                  f"{drifts_untouched}")
            untouched = sum(len(alerts_by_series.get((project, s), [])) for s in chosen["untouched"])
            untouched_alerts += untouched
            rows.append((step, {method: summary(values) for method, values in delays.items()}, other_first, absorbed,
                         misdated))
            report[project] = {"summary": rows[-1][1], "untouched_alerts": untouched, "details": details}
        series_nights = len(chosen["untouched"]) * NIGHTS
        rates = {"us": untouched_alerts / (series_nights * len(source["steps"]))}
        for peer in PEER_NAMES:
            rates[peer] = sum(distinct_new_points(peers[f"{name}|untouched|{s}"], peer)
                              for s in chosen["untouched"]) / series_nights
        print_table(rows, rates, untouched_alerts, series_nights * len(source["steps"]))
        report[name] = {"untouched_rates": rates, "untouched": {
            s: {"us": [[a[0], a[2], a[4], a[5]] for step in source["steps"]
                       for a in alerts_by_series.get((f"{name} {step:+g}%", s), [])],
                **{peer: distinct_new_points(peers[f"{name}|untouched|{s}"], peer) for peer in PEER_NAMES}}
            for s in chosen["untouched"]}}
        machine_wide = defaultdict(int)
        for alert in product["alerts"]:
            if alert[0].startswith(f"{name} "):
                machine_wide[alert[0], alert[4][0][1]] += 1
        wide = sorted((night, project, count) for (project, night), count in machine_wide.items() if count >= 5)
        if wide:
            print("   nights named first by 5 or more alerts of one project: "
                  + ", ".join(f"{night} ({count}, {project})" for night, project, count in wide))
    elapsed = time.perf_counter() - began
    print(f"\nProduct: {product['seconds']:.0f} s in its nights ({len(shares)} processes); total "
          f"{elapsed / 60:.1f} min; load (1 min) at the start / peers done / product done: "
          + " / ".join(f"{value:.2f}" for value in loads) + f" on {os.cpu_count()} cores")
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(report, indent=1, default=str))


def paths_summary(paths: list[str]) -> str:
    """The paths, those of a directory with more than 3 named by its first and last."""
    by_directory: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        directory, _, name = path.rpartition("/")
        by_directory[directory].append(name)
    return "; ".join(f"{directory}/{{{', '.join(names)}}}" if len(names) <= 3 else
                     f"{directory}/{{{names[0]}, ..., {names[-1]}}} ({len(names)} files)"
                     for directory, names in by_directory.items())


def print_table(rows, rates, untouched_alerts: int, series_nights: int) -> None:
    def share(summaries, method, m):
        return f"{summaries[method]['within'][m]:.0%}"

    header = (f"   {'step':>5} | {'within 1 night':^20} | {'within 3 nights':^20} | {'within 7 nights':^20} | "
              f"{'median nights':^17} | {'never alerted':^20} | alerts w/ other")
    print(header)
    print(f"   {'':>5} | {'us  E-Div  Otava':^20} | {'us  E-Div  Otava':^20} | {'us  E-Div  Otava':^20} | "
          f"{'us E-Div Otava':^17} | {'us   E-Div  Otava':^20} | first night; held; misdated")
    for step, summaries, other_first, absorbed, misdated in rows:
        cells = []
        for m in WITHIN:
            cells.append(" ".join(f"{share(summaries, method, m):>6}" for method in METHODS))
        medians = " ".join(f"{summaries[method]['median']:>5g}" if summaries[method]['median'] is not None
                           else f"{'—':>5}" for method in METHODS)
        never = " ".join(f"{summaries[method]['never']:>2}/{summaries[method]['steps']:<3}" for method in METHODS)
        print(f"   {step:>+4g}% | {cells[0]:>20} | {cells[1]:>20} | {cells[2]:>20} | {medians:>17} | {never:>20} | "
              f"{other_first}; {absorbed}; {misdated}")
    print(f"   untouched series: alerts per series-night us {rates['us']:.2%} ({untouched_alerts} in {series_nights}); "
          f"change points per series-night E-Divisive {rates['edivisive']:.2%}, Otava {rates['otava']:.2%}")


if __name__ == "__main__":
    main()
