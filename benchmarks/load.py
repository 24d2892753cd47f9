"""Load on loopback: concurrent readers and posters against the production set-up, beside the
development server under the same load, measured in the same run.

    .venv/bin/python benchmarks/load.py                   # 40 readers + 10 posters, 60 s per set-up
    .venv/bin/python benchmarks/load.py --seconds 20 --setups production
    nice -n 10 .venv/bin/python benchmarks/load.py --projects 10000   # overview, runs list, machines page
                                                                       # before and after 10,000 projects

Production is exactly what docs/deployment.md documents: ``./pilot serve`` (DEBUG off, gunicorn with a
worker count from the cores, whitenoise, the analysis worker and beat) on PostgreSQL (a throwaway
cluster from the system's binaries) and Redis. The baseline does the same work the obvious way:
``manage.py runserver`` (what ``./pilot up`` runs) on SQLite with an analysis worker. Both get the
same seeded history (30 nights of 60 benchmarks through the API) and the same load: readers loop
over the main pages and read APIs (overview, alerts, history, run, compare, runs and comparisons
APIs, a metric's series, Plotly's bundle as a browser asks for it), posters post nightly runs of 20
benchmarks × 30 samples. Clients run in several processes (threads inside), so the client side's
GIL does not queue the requests; client and server share this machine's cores, and the load
average is printed.

Prints per set-up: requests, server errors (5xx or a broken connection), any 4xx, latency
percentiles of reads and posts, and whether the rows stored match the posts accepted. Targets
(hardening issue): 0 errors, reads p95 ≤ 1 s, posts p95 ≤ 1.5 s.

``--projects N`` (issue 28: a fuzzer made 14,700 projects and machines and the overview and runs list timed
out under 50 clients): on one set-up (production unless ``--setups`` says), the overview ("/"), the runs list
("/runs/") and the machines page ("/machines/") under readers looping over them and posters posting nightly
runs, on the seeded database; then N projects and N machines are added, each with one small run as a fuzzer's
post makes it (see :func:`populate`: a few through ``ingest_run`` and the comparison, the rest cloned from
those in bulk inserts), and the same load runs again. Prints each page's p50 and p95 before and after, the
ratio (target: ≤ 1.5 for the overview and the runs list, 0 errors) and the page sizes alone (bytes, <option>s).
"""

import argparse
import http.client
import json
import multiprocessing
import os
import random
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.pgcluster import cluster  # noqa: E402
from tests.processes import free_port, real_redis, wait_for_port  # noqa: E402

PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable
NIGHTS, SEEDED_BENCHMARKS, POSTED_BENCHMARKS, SAMPLES = 30, 60, 20, 30
CLIENT_PROCESSES = 5


# --- the servers --------------------------------------------------------------------------------


@contextmanager
def production(var: Path, redis_url: str, port: int):
    """``./pilot serve`` on a throwaway PostgreSQL cluster."""
    with cluster() as database_url:
        environment = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
                       "DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
                       "PILOTWEB_VAR_DIR": str(var), "PILOTWEB_ADDRESS": f"127.0.0.1:{port}", "DEBUG": "false",
                       "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false"}
        with started([str(ROOT / "pilot"), "serve"], environment, port, var / "serve.out"):
            yield environment


@contextmanager
def development(var: Path, redis_url: str, port: int):
    """The development server (``manage.py runserver``, as ``./pilot up`` runs it) on SQLite, with an
    analysis worker, as ``./pilot up`` has it."""
    environment = {**os.environ, "REDIS_URL": redis_url, "PILOTWEB_VAR_DIR": str(var), "DEBUG": "true"}
    environment.pop("DATABASE_URL", None)
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=environment, check=True)
    worker = [PYTHON, "-m", "celery", "-A", "pilotweb", "worker", "--queues", "analysis", "--concurrency", "1",
              "--logfile", str(var / "worker.log")]
    with started(worker, environment, None, var / "worker.out"), \
            started([PYTHON, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], environment, port,
                    var / "runserver.out"):
        yield environment


@contextmanager
def started(command: list[str], environment: dict, port: int | None, log: Path):
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        if port is not None:
            wait_for_port(port, timeout=300)
        yield process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def manage(environment: dict, *arguments: str) -> str:
    return subprocess.run([PYTHON, "manage.py", *arguments], cwd=ROOT, env=environment, check=True,
                          capture_output=True, text=True).stdout


def create_token(environment: dict) -> str:
    """A token of the operator's load-test user. Staff: ``./pilot serve`` lets only staff create the project and
    machine a first post names (PILOTWEB_OPEN_CREATION is off in production)."""
    manage(environment, "shell", "-v", "0", "-c", "from django.contrib.auth import get_user_model; "
                                       "get_user_model().objects.create_user('load', password=None, is_staff=True)")
    return manage(environment, "create_api_token", "load", "load test").strip()


# --- requests -----------------------------------------------------------------------------------


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
            timeout: float = 60.0) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def run_document(night: int, benchmarks: int, rng: random.Random, *, key: str) -> bytes:
    results = [{"benchmark": f"benchmark {index:03d}", "metric": "time", "unit": "s",
                "samples": [rng.gauss(1.0 + index / 100, 0.02) for _ in range(SAMPLES)]}
               for index in range(benchmarks)]
    return json.dumps({
        "run_key": key, "project": {"name": "Load"}, "machine": {"name": "load-1"},
        "revision": {"commit": f"{night:040x}", "branch": "main"}, "kind": "nightly",
        "started_at": f"2026-{1 + night // 28:02d}-{1 + night % 28:02d}T02:00:00Z", "results": results,
    }).encode()


def seed(port: int, token: str) -> dict:
    """Post the history through the API and wait for its comparisons; the URLs readers will read."""
    rng = random.Random(1)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    run_ids = []
    for night in range(NIGHTS):
        status, body = request(port, "POST", "/api/v1/runs",
                               run_document(night, SEEDED_BENCHMARKS, rng, key=f"seed-{night}"), headers)
        assert status == 201, (status, body[:300])
        run_ids.append(json.loads(body)["id"])
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status, body = request(port, "GET", f"/api/v1/runs/{run_ids[-1]}/comparisons", headers=headers)
        if status == 200 and json.loads(body)["items"]:
            break
        time.sleep(1)
    status, overview = request(port, "GET", "/")
    metrics = sorted({int(found) for found in re.findall(rb"/history/(\d+)/", overview)})
    assert metrics, "the overview links no history page"
    status, page = request(port, "GET", f"/history/{metrics[0]}/")
    plotly = re.search(rb'src="([^"]*plotly[^"]*\.js)"', page)
    reads = ["/", "/alerts/", f"/runs/{run_ids[-1]}/", f"/compare/?baseline={run_ids[-2]}&candidate={run_ids[-1]}",
             "/api/v1/runs?limit=50", f"/api/v1/runs/{run_ids[-1]}/comparisons", "/api/v1/alerts?limit=50",
             f"/api/v1/runs/{run_ids[-1]}"]
    reads += [f"/history/{metric}/" for metric in metrics[:5]] + [f"/api/v1/metrics/{metric}/series"
                                                                   for metric in metrics[:5]]
    if plotly:
        reads.append(plotly.group(1).decode())
    return {"reads": reads, "runs": len(run_ids)}


def client_process(port: int, token: str, reads: list[str], readers: int, posters: int, seconds: float,
                   offset: int, out: multiprocessing.Queue) -> None:
    """``readers`` and ``posters`` threads until the deadline; puts (kind, status, seconds, path) rows."""
    rows: list[tuple[str, int, float, str]] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def read(index: int) -> None:
        rng = random.Random(offset * 1000 + index)
        while time.monotonic() < deadline:
            path = rng.choice(reads)
            extra = {"Accept-Encoding": "gzip, br"} if path.endswith(".js") else {}
            rows_append("read", path, {**headers, **extra} if path.startswith("/api/") else extra)

    def post(index: int) -> None:
        rng = random.Random(10_000 + offset * 1000 + index)
        night = 0
        while time.monotonic() < deadline:
            key = f"load-{offset}-{index}-{night}"
            body = run_document(NIGHTS + night, POSTED_BENCHMARKS, rng, key=key)
            rows_append("post", "/api/v1/runs", headers, body)
            night += 1

    def rows_append(kind: str, path: str, sent: dict, body: bytes | None = None) -> None:
        began = time.perf_counter()
        try:
            status, _ = request(port, "POST" if body else "GET", path, body, sent)
        except (OSError, http.client.HTTPException):
            status = 0
        with lock:
            rows.append((kind, status, time.perf_counter() - began, path))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    threads += [threading.Thread(target=post, args=(i,)) for i in range(posters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put(rows)


CPU_CLASSES = (("web", ("gunicorn", "runserver")), ("analysis worker", ("celery",)), ("database", ("postgres",)),
               ("redis", ("redis-server",)), ("clients", ("load.py", "multiprocessing")))


def cpu_seconds() -> dict[str, float]:
    """CPU seconds used so far by every running process of each class (web server, worker, database…)."""
    import psutil

    used = dict.fromkeys([name for name, _ in CPU_CLASSES], 0.0)
    for process in psutil.process_iter(["cmdline", "cpu_times"]):
        command = " ".join(process.info["cmdline"] or [])
        times = process.info["cpu_times"]
        for name, needles in CPU_CLASSES:
            if times is not None and any(needle in command for needle in needles):
                used[name] += times.user + times.system
                break
    return used


def load(port: int, token: str, reads: list[str], readers: int, posters: int, seconds: float) -> dict:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    split = [(readers // CLIENT_PROCESSES + (i < readers % CLIENT_PROCESSES),
              posters // CLIENT_PROCESSES + (i < posters % CLIENT_PROCESSES)) for i in range(CLIENT_PROCESSES)]
    processes = [multiprocessing.Process(target=client_process, args=(port, token, reads, r, p, seconds, i, queue))
                 for i, (r, p) in enumerate(split)]
    import psutil

    load_before, cpu_before, machine_before = os.getloadavg()[0], cpu_seconds(), psutil.cpu_times()
    for process in processes:
        process.start()
    time.sleep(seconds - 1)
    # Clients are counted just before they end (their CPU is gone once they exit).
    cpu_after, machine_after = cpu_seconds(), psutil.cpu_times()
    rows = [row for _ in processes for row in queue.get()]
    for process in processes:
        process.join()
    cpu = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
    idle = (machine_after.idle + machine_after.iowait) - (machine_before.idle + machine_before.iowait)
    busy = sum(machine_after) - sum(machine_before) - idle
    return {"rows": rows, "load": (load_before, os.getloadavg()[0]), "cpu": cpu, "busy": busy / (busy + idle)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def uncompared_runs(environment: dict) -> int:
    """Runs stored but not compared yet: the analysis worker's backlog."""
    return int(manage(environment, "shell", "-v", "0", "-c", "from results.models import Run; "
                                                  "print(Run.objects.filter(compared_at__isnull=True).count())"))


def stored_runs(port: int, token: str) -> int:
    status, body = request(port, "GET", "/api/v1/runs?limit=1", headers={"Authorization": f"Bearer {token}"})
    return json.loads(body)["count"]


def measure(name: str, setup, readers: int, posters: int, seconds: float, keep: Path | None) -> dict:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix=f"pilotweb-load-{name}-") as directory, real_redis() as redis, \
            ExitStack() as stack:
        if keep is not None:
            stack.callback(shutil.copytree, directory, keep / name, dirs_exist_ok=True,
                           ignore=shutil.ignore_patterns("*.sqlite3*", "static"))
        environment = stack.enter_context(setup(Path(directory), redis.url, port))
        token = create_token(environment)
        seeded = seed(port, token)
        before = stored_runs(port, token)
        outcome = load(port, token, seeded["reads"], readers, posters, seconds)
        ended = time.monotonic()
        after = stored_runs(port, token)
        backlog = uncompared_runs(environment)
        while uncompared_runs(environment) and time.monotonic() - ended < 600:
            time.sleep(0.5)
        caught_up = time.monotonic() - ended
        still_waiting = uncompared_runs(environment)
    rows = outcome["rows"]
    # Answered reads only: a 4xx (a page of an id the load picked that does not exist) does other work.
    reads = [seconds for kind, status, seconds, _ in rows if kind == "read" and 200 <= status < 400]
    posts = [seconds for kind, status, seconds, _ in rows if kind == "post" and status in (200, 201)]
    by_path: dict[str, list[float]] = {}
    for _, _, seconds_, path in rows:
        by_path.setdefault(re.sub(r"\d+", "N", path), []).append(seconds_)
    return {
        "name": name, "requests": len(rows),
        "errors": sum(1 for _, status, _, _ in rows if status == 0 or status >= 500),
        "client_errors": sum(1 for _, status, _, _ in rows if 400 <= status < 500),
        "by_path": {path: (len(values), percentile(values, 0.5), percentile(values, 0.95))
                    for path, values in sorted(by_path.items())},
        "accepted_posts": len(posts), "runs_added": after - before,
        "read_p50": percentile(reads, 0.5), "read_p95": percentile(reads, 0.95), "read_max": max(reads, default=0),
        "post_p50": percentile(posts, 0.5), "post_p95": percentile(posts, 0.95), "post_max": max(posts, default=0),
        "throughput": len(rows) / seconds, "load": outcome["load"], "cpu": outcome["cpu"], "busy": outcome["busy"],
        "backlog": backlog, "caught_up": caught_up, "still_waiting": still_waiting,
    }



# --- many projects and machines (--projects) -----------------------------------------------------------------

SCALE_PAGES = ("/", "/?project=load", "/runs/", "/machines/")
"""What a fuzzer's thousands of projects and machines slowed down (issue 28): the overview (whole, and of the
seeded project alone: 0.04 s became 2.7 s), the runs list (its filter of every project and machine) and the
machines page."""
KINDS = ("nightly", "pr", "manual", "imported")
"""The kinds a run may be posted as, which schemathesis draws alike (confirmation is refused)."""
TEMPLATES_PER_KIND = 2


def fuzzed_document(index: int, seed: int, kinds: tuple[str, ...] = KINDS) -> dict:
    """The run a fuzzer posting from the API's schema makes: a new project and a new machine, one small result,
    a kind of each (schemathesis draws from the enum), a start time now or anywhere from 1970 to 2100."""
    rng = random.Random(seed * 1_000_003 + index)
    document = {
        "project": {"name": f"fuzzed {index:05d} {rng.getrandbits(24):06x}"},
        "machine": {"name": f"fuzzed-{index:05d}-{rng.getrandbits(24):06x}"},
        "revision": {"commit": f"{rng.getrandbits(160):040x}", "branch": "main"},
        "kind": kinds[index % len(kinds)],
        "results": [{"benchmark": f"b{rng.randrange(100)}", "metric": "time", "unit": "s",
                     "samples": [rng.uniform(0.5, 2.0) for _ in range(3)]}],
    }
    if index % 2:
        document["started_at"] = f"{rng.randrange(1970, 2100)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}" \
                                 f"T{rng.randrange(24):02d}:00:00Z"
    return document


def populate(count: int, seed: int, kinds: tuple[str, ...] = KINDS) -> None:
    """Inside a set-up's environment (``load.py --populate N``): `count` projects and machines, each with one small
    run, as a fuzzer's posts would have stored them; prints what it made and how long it took.

    A few of them (two of each kind) go through the API's own path in this process: ``ingest_run`` as a staff
    token's post, then the comparison the analysis worker would make (``analysis_in_process``). The rest are
    those rows cloned in bulk, row for row (project, the creator's membership, machine, revision, benchmark,
    metric, run, result and comparisons), with their own names, commits, times and numbers: 10,000 posts
    and comparisons take 10 to 20 minutes on two cores, the bulk copy seconds.
    """
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone
    from django.utils.text import slugify

    from results import services
    from results.models import Benchmark, Comparison, Machine, Membership, Metric, Project, Result, Revision, Run
    from results.result_schema import summarize_result
    from results.schemas import RunIn
    from results.queue import analysis_in_process

    began = time.monotonic()
    user, _ = get_user_model().objects.get_or_create(username="fuzzer", defaults={"is_staff": True})
    templates: dict[str, list[dict]] = {}
    done = 0
    for index in range(count):
        kind = kinds[index % len(kinds)]
        if len(templates.get(kind, [])) >= TEMPLATES_PER_KIND:
            break
        with analysis_in_process():
            run = services.ingest_run(document=RunIn.model_validate(fuzzed_document(index, seed, kinds)),
                                      user=user).run
        run = Run.objects.select_related("project", "machine", "revision").get(pk=run.pk)
        result = Result.objects.select_related("metric__benchmark").get(run=run)
        templates.setdefault(kind, []).append({
            "run": run, "result": result, "membership": Membership.objects.get(project=run.project, user=user),
            "comparisons": list(Comparison.objects.filter(candidate=result))})
        done += 1
    through_api = done

    def clone(instance, **changes):
        values = {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields
                  if not field.primary_key}
        values.update(changes)
        return type(instance)(**values)

    now = timezone.now()
    batch = 1000
    for start in range(done, count, batch):
        indexes = range(start, min(count, start + batch))
        documents = [fuzzed_document(index, seed, kinds) for index in indexes]
        chosen = [templates[document["kind"]][index % TEMPLATES_PER_KIND] for index, document in zip(indexes, documents)]
        with transaction.atomic():
            projects = Project.objects.bulk_create([
                clone(template["run"].project, name=document["project"]["name"],
                      slug=slugify(document["project"]["name"]), created_by_id=user.pk, created_at=now)
                for document, template in zip(documents, chosen)])
            Membership.objects.bulk_create([clone(template["membership"], project_id=project.pk)
                                            for project, template in zip(projects, chosen)])
            machines = Machine.objects.bulk_create([
                clone(template["run"].machine, name=document["machine"]["name"],
                      queue=f"bench.{document['machine']['name']}", created_by_id=user.pk, last_seen_at=now)
                for document, template in zip(documents, chosen)])
            revisions = Revision.objects.bulk_create([
                clone(template["run"].revision, project_id=project.pk, commit=document["revision"]["commit"])
                for document, template, project in zip(documents, chosen, projects)])
            benchmarks = Benchmark.objects.bulk_create([
                clone(template["result"].metric.benchmark, project_id=project.pk,
                      name=document["results"][0]["benchmark"])
                for document, template, project in zip(documents, chosen, projects)])
            metrics = Metric.objects.bulk_create([clone(template["result"].metric, benchmark_id=benchmark.pk)
                                                  for template, benchmark in zip(chosen, benchmarks)])
            runs = Run.objects.bulk_create([
                clone(template["run"], project_id=project.pk, machine_id=machine.pk, revision_id=revision.pk,
                      started_at=document.get("started_at") or now - timedelta(seconds=index), run_key=None,
                      payload_digest=f"{random.Random(index).getrandbits(256):064x}", compared_at=now,
                      created_by_id=user.pk)
                for index, document, template, project, machine, revision in zip(
                    indexes, documents, chosen, projects, machines, revisions)])
            summaries = [summarize_result(RunIn.model_validate(document).results[0]) for document in documents]
            intervals = services._intervals(summaries, [0.95] * len(summaries))
            results = Result.objects.bulk_create([
                clone(template["result"], run_id=run.pk, metric_id=metric.pk, mean=summary.mean,
                      variance=summary.variance, ci_low=low, ci_high=high,
                      samples=np.asarray(document["results"][0]["samples"], dtype="<f8").tobytes())
                for document, template, run, metric, summary, (low, high) in zip(
                    documents, chosen, runs, metrics, summaries, intervals)])
            Comparison.objects.bulk_create([
                clone(comparison, candidate_id=result.pk, created_at=now)
                for template, result in zip(chosen, results) for comparison in template["comparisons"]])
        done += len(indexes)
    print(json.dumps({"projects": count, "through_api": through_api, "cloned": count - through_api,
                      "seconds": time.monotonic() - began,
                      "totals": {"projects": Project.objects.count(), "machines": Machine.objects.count(),
                                 "runs": Run.objects.count()}}))


def page_sizes(port: int, times: int = 3) -> dict[str, tuple[int, int, int, float]]:
    """Each scale page read alone, anonymously, `times` times: (status, bytes, <option>s, median seconds)."""
    sizes = {}
    for path in SCALE_PAGES:
        took = []
        for _ in range(times):
            began = time.perf_counter()
            status, body = request(port, "GET", path, timeout=300)
            took.append(time.perf_counter() - began)
        sizes[path] = (status, len(body), body.count(b"<option"), statistics.median(took))
    return sizes


def drain(environment: dict, redis_url: str, timeout: float = 900) -> float:
    """Wait until the analysis worker has compared every run and emptied its queue; the seconds it took."""
    import redis as redis_client

    broker = redis_client.Redis.from_url(redis_url)
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if not uncompared_runs(environment) and not broker.llen("analysis"):
            time.sleep(2)  # the task being run when the queue emptied
            if not broker.llen("analysis"):
                break
        time.sleep(1)
    return time.monotonic() - began


def scale(name: str, setup, readers: int, posters: int, seconds: float, projects: int, seed_: int,
          kinds: tuple[str, ...], keep: Path | None) -> dict:
    """The scale pages under load on the seeded database, then again after `projects` projects and machines
    (each with one run) were added, in one run of one set-up."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix=f"pilotweb-scale-{name}-") as directory, real_redis() as redis, \
            ExitStack() as stack:
        if keep is not None:
            stack.callback(shutil.copytree, directory, keep / f"scale-{name}", dirs_exist_ok=True,
                           ignore=shutil.ignore_patterns("*.sqlite3*", "static"))
        environment = stack.enter_context(setup(Path(directory), redis.url, port))
        token = create_token(environment)
        seed(port, token)
        drain(environment, redis.url)
        phases = {}
        for phase in ("before", "after"):
            if phase == "after":
                began = time.monotonic()
                made = json.loads(subprocess.run(
                    [PYTHON, str(Path(__file__).resolve()), "--populate", str(projects), "--seed", str(seed_),
                     "--kinds", ",".join(kinds)],
                    cwd=ROOT, env={**environment, "DJANGO_SETTINGS_MODULE": "pilotweb.settings",
                                   "PYTHONPATH": str(ROOT)}, check=True, capture_output=True, text=True,
                ).stdout.strip().splitlines()[-1])
                made["wall"] = time.monotonic() - began
                made["drained"] = drain(environment, redis.url)
                phases["made"] = made
            sizes = page_sizes(port)
            outcome = load(port, token, list(SCALE_PAGES), readers, posters, seconds)
            phases[phase] = {"sizes": sizes, **outcome, "stored": stored_runs(port, token)}
            drain(environment, redis.url)
    return {"name": name, **phases}


def report_scale(args, results: list[dict]) -> None:
    print(f"\n{args.readers} readers (looping over {', '.join(SCALE_PAGES)}) + {args.posters} posters (nightly runs of "
          f"{POSTED_BENCHMARKS} benchmarks) for {args.seconds:.0f} s per phase on loopback; {os.cpu_count()} cores "
          "shared by clients, server and another engineer's work. Target: after/before p95 ≤ 1.5 for the overview "
          "and the runs list, 0 errors (5xx, or no answer within the client's 60 s: a timed-out request counts "
          "in the percentiles at 60 s).")
    for r in results:
        made = r["made"]
        print(f"\n{r['name']}: the seeded database ({NIGHTS} nights × {SEEDED_BENCHMARKS} benchmarks), then "
              f"{made['projects']:,} projects and {made['projects']:,} machines added, each with one run "
              f"(kinds {args.kinds} in turn; {made['through_api']} through ingest_run + the analysis worker's "
              "comparison in process, "
              f"{made['cloned']:,} cloned from those row for row in bulk inserts) in {made['wall']:.0f} s; now "
              f"{made['totals']['projects']:,} projects, {made['totals']['machines']:,} machines, "
              f"{made['totals']['runs']:,} runs")
        print(f"  {'page':<15} {'requests':>15} {'errors':>9} {'p50 before':>10} {'p95 before':>10} {'p50 after':>10} "
              f"{'p95 after':>10} {'p95 ratio':>9} {'bytes before':>13} {'bytes after':>12} {'<option>s':>11} "
              f"{'alone before/after':>19}")
        for path in SCALE_PAGES:
            stats = {}
            for phase in ("before", "after"):
                rows = [row for row in r[phase]["rows"] if row[3] == path]
                # Every request counts, a timed-out one at the 60 s the client waited (a lower bound).
                took = [seconds for _, _, seconds, _ in rows]
                stats[phase] = (len(rows), sum(1 for _, status, _, _ in rows if status == 0 or status >= 500),
                                percentile(took, 0.5), percentile(took, 0.95))
            before, after = stats["before"], stats["after"]
            sizes_before, sizes_after = r["before"]["sizes"][path], r["after"]["sizes"][path]
            print(f"  {path:<15} {before[0]:>7} / {after[0]:<6} {before[1]:>3} / {after[1]:<3} {before[3 - 1]:>9.3f}s "
                  f"{before[3]:>9.3f}s {after[2]:>9.3f}s {after[3]:>9.3f}s {after[3] / before[3]:>9.2f} "
                  f"{sizes_before[1]:>13,} {sizes_after[1]:>12,} {sizes_before[2]:>5}/{sizes_after[2]:<5} "
                  f"{sizes_before[3]:>8.2f}/{sizes_after[3]:<.2f} s")
        for phase in ("before", "after"):
            rows = r[phase]["rows"]
            posts = [seconds for kind, status, seconds, _ in rows if kind == "post" and status in (200, 201)]
            errors = sum(1 for _, status, _, _ in rows if status == 0 or status >= 500)
            client = sum(1 for _, status, _, _ in rows if 400 <= status < 500)
            print(f"  {phase}: {len(rows)} requests ({len(rows) / args.seconds:.1f}/s), 5xx or broken {errors}, 4xx "
                  f"{client}, posts accepted {len(posts)} (p95 {percentile(posts, 0.95):.3f} s), machine busy "
                  f"{r[phase]['busy']:.0%}, load average {r[phase]['load'][0]:.2f}→{r[phase]['load'][1]:.2f}; CPU s: "
                  + ", ".join(f"{name} {value:.0f}" for name, value in r[phase]["cpu"].items()))
        print(f"  the analysis worker caught up with the added rows {made['drained']:.0f} s after they were stored")
    print(f"load average at the end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, help="default 40 (20 with --projects)")
    parser.add_argument("--posters", type=int, help="default 10 (5 with --projects)")
    parser.add_argument("--seconds", type=float, help="default 60 (45 per phase with --projects)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each set-up, interleaved")
    parser.add_argument("--setups", default="production,development")
    parser.add_argument("--by-path", action="store_true", help="also print latencies per path")
    parser.add_argument("--keep-logs", type=Path, help="copy each set-up's logs (access log with durations) here")
    parser.add_argument("--projects", type=int, default=0,
                        help="scale mode: the overview, runs list and machines page under load before and after this "
                             "many projects and machines (each with one run) are added, in one run (default set-up: "
                             "production only)")
    parser.add_argument("--seed", type=int, default=1, help="scale mode: the fuzzed names' seed")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="scale mode: the kinds of the added runs, in turn (default: all four a post may have, as "
                             "a fuzzer draws them; e.g. pr,manual,imported for no nightly one)")
    parser.add_argument("--populate", type=int, help=argparse.SUPPRESS)  # the scale mode's worker, inside a set-up
    args = parser.parse_args()
    if args.populate is not None:
        populate(args.populate, args.seed, tuple(args.kinds.split(",")))
        return
    # Scale mode: two phases of load in one run on two cores shared with another engineer's work; 25 clients
    # keep the five web workers busy without the client processes taking the cores they measure.
    defaults = (20, 5, 45.0) if args.projects else (40, 10, 60.0)
    for name, value in zip(("readers", "posters", "seconds"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, value)
    setups = {"production": production, "development": development}
    names = args.setups.split(",")
    if args.projects:
        if "--setups" not in " ".join(sys.argv):
            names = ["production"]
        report_scale(args, [scale(name, setups[name], args.readers, args.posters, args.seconds, args.projects,
                                  args.seed, tuple(args.kinds.split(",")), args.keep_logs) for name in names])
        return
    results = [measure(name, setups[name], args.readers, args.posters, args.seconds, args.keep_logs)
               for _ in range(args.repeat) for name in names]

    print(f"\n{args.readers} readers + {args.posters} posters for {args.seconds:.0f} s on loopback, each set-up "
          f"{args.repeat}×, interleaved; {os.cpu_count()} cores shared by clients and server. Targets: 0 errors, "
          "reads p95 ≤ 1 s, posts p95 ≤ 1.5 s")
    print(f"{'set-up':<12} {'requests':>8} {'req/s':>7} {'5xx':>5} {'4xx':>5} {'read p50':>9} {'read p95':>9} "
          f"{'read max':>9} {'post p50':>9} {'post p95':>9} {'post max':>9} {'posts ok':>9} {'runs +':>7} "
          f"{'busy':>5} {'load 1m':>12}")
    for r in results:
        print(f"{r['name']:<12} {r['requests']:>8} {r['throughput']:>7.1f} {r['errors']:>5} {r['client_errors']:>5} "
              f"{r['read_p50']:>8.3f}s {r['read_p95']:>8.3f}s {r['read_max']:>8.2f}s {r['post_p50']:>8.3f}s "
              f"{r['post_p95']:>8.3f}s {r['post_max']:>8.2f}s {r['accepted_posts']:>9} {r['runs_added']:>7} "
              f"{r['busy']:>5.0%} {r['load'][0]:>5.2f}→{r['load'][1]:<5.2f}")
    print("\nmin / median over the repetitions:")
    summary = {}
    for name in names:
        mine = [r for r in results if r["name"] == name]
        summary[name] = {key: (min(r[key] for r in mine), statistics.median(r[key] for r in mine))
                         for key in ("read_p95", "post_p95", "throughput")}
        errors = sum(r["errors"] for r in mine)
        print(f"  {name:<12} 5xx {errors}; read p95 {summary[name]['read_p95'][0]:.3f} / "
              f"{summary[name]['read_p95'][1]:.3f} s; post p95 {summary[name]['post_p95'][0]:.3f} / "
              f"{summary[name]['post_p95'][1]:.3f} s; req/s {summary[name]['throughput'][0]:.1f} / "
              f"{summary[name]['throughput'][1]:.1f}")
    if len(names) == 2:
        first, second = (summary[name] for name in names)
        print(f"ratios {names[0]}/{names[1]} (medians): read p95 {first['read_p95'][1] / second['read_p95'][1]:.2f}, "
              f"post p95 {first['post_p95'][1] / second['post_p95'][1]:.2f}, "
              f"throughput {first['throughput'][1] / second['throughput'][1]:.2f}")
    for r in results:
        compared = (f"all were compared {r['caught_up']:.1f} s later" if not r["still_waiting"] else
                    f"{r['still_waiting']} were still waiting {r['caught_up']:.0f} s later")
        print(f"{r['name']}: {r['backlog']} runs were waiting for their comparison when the load ended; {compared}. "
              f"CPU seconds of the processes alive at the end: "
              + ", ".join(f"{name} {value:.1f}" for name, value in r["cpu"].items()))
    if args.by_path:
        for r in results:
            print(f"\n{r['name']}: requests, p50, p95 by path")
            for path, (count, p50, p95) in r["by_path"].items():
                print(f"  {path:<60} {count:>6} {p50:>7.3f}s {p95:>7.3f}s")
    for r in results:
        if r["accepted_posts"] != r["runs_added"]:
            print(f"{r['name']}: {r['accepted_posts']} posts accepted but {r['runs_added']} runs stored")


if __name__ == "__main__":
    main()
