"""Load on loopback: concurrent readers and posters against the production set-up, beside the
development server under the same load, measured in the same run.

    .venv/bin/python benchmarks/load.py                   # 40 readers + 10 posters, 60 s per set-up
    .venv/bin/python benchmarks/load.py --seconds 20 --setups production

Production is exactly what the README documents: ``./pilot serve`` (DEBUG off, gunicorn with a
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
from pathlib import Path

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
    manage(environment, "shell", "-v", "0", "-c", "from django.contrib.auth import get_user_model; "
                                       "get_user_model().objects.create_user('load', password=None)")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=40)
    parser.add_argument("--posters", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each set-up, interleaved")
    parser.add_argument("--setups", default="production,development")
    parser.add_argument("--by-path", action="store_true", help="also print latencies per path")
    parser.add_argument("--keep-logs", type=Path, help="copy each set-up's logs (access log with durations) here")
    args = parser.parse_args()
    setups = {"production": production, "development": development}
    names = args.setups.split(",")
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
