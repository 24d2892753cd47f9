"""Fuzz the API of a real server on loopback from its own OpenAPI schema (schemathesis, on hypothesis).

    .venv/bin/python benchmarks/fuzz.py                  # 10,000 cases against ./pilot serve on PostgreSQL
    .venv/bin/python benchmarks/fuzz.py --cases 2000 --seed 3

The server is the production set-up of ``benchmarks/load.py`` (``./pilot serve``: gunicorn, DEBUG off,
PostgreSQL, Redis). Every operation of ``/api/v1/openapi.json`` gets an equal share of the cases, half
generated to fit the schema (positive) and half to break it (negative), sent with an ordinary user's
token (writes to jobs and sessions are for staff; anonymous reads are allowed). Prints per operation the
cases and the status codes they got, then the two properties that matter:

* no 5xx (a refused request must be a 4xx that says why);
* the rows stored changed only by accepted requests: the runs added equal the runs created by 201
  replies, the results added equal the results those replies counted, and no project, machine,
  revision, benchmark or metric exists that no stored run reaches (a refused request wrote nothing).

There is no baseline to divide by: the figure is a count, and the target is zero.
"""

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load import create_token, production, request  # noqa: E402
from tests.processes import free_port, real_redis  # noqa: E402

CREATING = {("POST", "/api/v1/runs"), ("POST", "/api/v1/runs/import")}


def counts() -> dict[str, int]:
    from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run

    return {model.__name__: model.objects.count() for model in (Project, Machine, Revision, Benchmark, Metric, Run,
                                                                Result)}


def orphans() -> dict[str, int]:
    """Rows that no stored run reaches: what a refused request could have left behind."""
    from results.models import Benchmark, Machine, Metric, Project, Revision

    return {
        "Project": Project.objects.filter(runs__isnull=True).count(),
        "Machine": Machine.objects.filter(runs__isnull=True).count(),
        "Revision": Revision.objects.filter(runs__isnull=True).count(),
        "Benchmark": Benchmark.objects.filter(metrics__results__isnull=True).distinct().count(),
        "Metric": Metric.objects.filter(results__isnull=True).count(),
    }


def documents():
    """Run documents that fit the native format, so that accepted writes are fuzzed too: a few projects,
    machines and benchmarks shared across cases, samples or summaries of varied size and scale."""
    from hypothesis import strategies as st

    name = st.sampled_from(["alpha", "beta", "gamma δ", "delta/ε"])
    scale = st.sampled_from([1e-9, 1e-3, 1.0, 1e6])
    samples = st.builds(lambda values, k: [value * k for value in values],
                        st.lists(st.floats(0.5, 2.0), min_size=2, max_size=40), scale)
    summary = st.fixed_dictionaries({"mean": st.floats(1e-6, 1e6), "subsession_size": st.integers(1, 50),
                                     "variance": st.floats(0, 1.0), "n": st.integers(1, 200)})
    result = st.fixed_dictionaries(
        {"benchmark": st.sampled_from([f"bench {i}" for i in range(8)]), "metric": st.sampled_from(["time", "rss"]),
         "unit": st.just("s")},
        optional={"samples": samples, "summary": summary}).filter(lambda r: "samples" in r or "summary" in r)
    return st.fixed_dictionaries({
        "project": st.fixed_dictionaries({"name": name}),
        "machine": st.fixed_dictionaries({"name": st.sampled_from(["m1", "m2"])}),
        "revision": st.fixed_dictionaries({"commit": st.text("0123456789abcdef", min_size=7, max_size=40),
                                           "branch": st.sampled_from(["main", "feature/x"])}),
        "kind": st.sampled_from(["nightly", "pr", "manual"]),
        "results": st.lists(result, min_size=1, max_size=6, unique_by=lambda r: (r["benchmark"], r["metric"])),
    })


def fuzz(base_url: str, token: str, cases: int, seed: int) -> dict:
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_url(f"{base_url}/api/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    per_operation = max(2, cases // (2 * len(operations)))
    statuses: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    created = {"runs": 0, "results": 0}
    failures: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}

    @settings(max_examples=per_operation * 4, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seeded(seed)
    @given(document=documents())
    def post(document) -> None:
        import requests

        response = requests.post(f"{base_url}/api/v1/runs", json=document, headers=headers, timeout=60)
        statuses["POST /api/v1/runs (valid documents)"][response.status_code] += 1
        if response.status_code >= 500 and len(failures) < 10:
            failures.append(f"{response.status_code} POST /api/v1/runs {json.dumps(document)[:300]}")
        if response.status_code == 201:
            created["runs"] += 1
            created["results"] += response.json()["results"]

    post()
    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(max_examples=per_operation, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            @seeded(seed)
            @given(case=operation.as_strategy(generation_mode=mode))
            def send(case) -> None:
                response = case.call(base_url=base_url, headers=headers, timeout=60)
                statuses[label][response.status_code] += 1
                if response.status_code >= 500 and len(failures) < 10:
                    failures.append(f"{response.status_code} {case.as_curl_command()[:300]}")
                if response.status_code == 201 and (case.method.upper(), case.path) in CREATING:
                    body = response.json()
                    created["runs"] += 1
                    created["results"] += body["results"]

            send()
    return {"statuses": statuses, "created": created, "failures": failures, "per_operation": per_operation}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="pilotweb-fuzz-") as directory, real_redis() as redis, ExitStack() as stack:
        environment = stack.enter_context(production(Path(directory), redis.url, port))
        token = create_token(environment)
        os.environ.update({key: environment[key] for key in ("DATABASE_URL", "DJANGO_SECRET_KEY", "ALLOWED_HOSTS",
                                                             "DEBUG", "REDIS_URL", "PILOTWEB_VAR_DIR")})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
        import django

        django.setup()
        before = counts()
        began = time.monotonic()
        outcome = fuzz(f"http://127.0.0.1:{port}", token, args.cases, args.seed)
        elapsed = time.monotonic() - began
        status, body = request(port, "GET", "/api/v1/runs?limit=1")
        after, left = counts(), orphans()

    total = sum(sum(counter.values()) for counter in outcome["statuses"].values())
    server_errors = sum(count for counter in outcome["statuses"].values()
                        for code, count in counter.items() if code >= 500)
    print(f"\n{total} cases (asked for {args.cases}; hypothesis stops early on an operation with few distinct "
          f"inputs) ({outcome['per_operation']} positive + {outcome['per_operation']} negative per operation "
          f"from the schema, {4 * outcome['per_operation']} valid run documents first) against ./pilot serve on "
          f"PostgreSQL in {elapsed:.0f} s ({total / elapsed:.0f}/s)")
    for label, counter in sorted(outcome["statuses"].items()):
        codes = ", ".join(f"{code}×{count}" for code, count in sorted(counter.items()))
        print(f"  {label:<45} {sum(counter.values()):>6}  {codes}")
    added = {name: after[name] - before[name] for name in after}
    print(f"5xx: {server_errors}  (target 0)")
    print(f"runs added {added['Run']} = runs created by 201 replies {outcome['created']['runs']}: "
          f"{added['Run'] == outcome['created']['runs']}; results added {added['Result']} = results those replies "
          f"counted {outcome['created']['results']}: {added['Result'] == outcome['created']['results']}")
    print("rows no stored run reaches (a refused request's leftovers, target 0): "
          + ", ".join(f"{name} {count}" for name, count in left.items()))
    for failure in outcome["failures"]:
        print("  " + failure)
    assert status == 200 and json.loads(body)["count"] == after["Run"]


if __name__ == "__main__":
    main()
