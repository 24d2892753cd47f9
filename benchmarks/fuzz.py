"""Fuzz every write endpoint and importer of a real server on loopback, as six identities, from the API's own
OpenAPI schema (schemathesis, on hypothesis), from generators of documents and files, and from a table of
hostile cases (issue 28); then check what was stored and that every page still answers.

    nice -n 10 .venv/bin/python benchmarks/fuzz.py                 # about 22,500 requests, 10-13 min on 2 cores
    nice -n 10 .venv/bin/python benchmarks/fuzz.py --cases 2000 --workers 2 --seed 3

The server is the production set-up of ``benchmarks/load.py`` (``./pilot serve``: gunicorn, DEBUG off,
PostgreSQL, Redis, the analysis worker and beat), so creating projects and machines by posting is closed
(only staff create them). The world it is given first, through the API and the management commands:

* projects Alpha, Beta and Gamma (Gamma private), each with its machine (m-alpha, m-beta, m-gamma), four
  nights and a regressed pull request whose alerts the analysis worker opens; a job on Alpha with queued
  sessions;
* identities: ``staff`` (staff, token scopes upload+triage+jobs), ``uploader`` (uploader of Alpha, default
  token), ``maintainer`` (maintainer of Alpha, token upload+triage), ``viewer`` (viewer of Alpha, default
  token: its role refuses uploads), ``project-b`` (maintainer of Beta and uploader of Alpha, a token for Beta
  only, upload+triage), ``anonymous`` (no token; schemathesis sometimes makes up a bad one).

Requests come from three sources, each sent as every identity:

* ``schema``: schemathesis cases of every operation (writes and reads), half fitting the schema (positive),
  half breaking it (negative); path ids are real ids (an alert, the job, a session) on every other case, an
  import's ``format`` each of the six on every other case;
* ``generated``: hypothesis-drawn native run documents, files of each import format and job bodies, mostly
  valid and sometimes hostile (numbers like 10^400, NaN, names with line breaks, dates outside 1970..2100,
  deep nesting), for the known projects and machines and for new ones;
* ``table``: every case of the issue, listed (deep JSON at 17..5000 levels in bodies, free-form fields and
  each format's files; 10^400, -10^400, 1e400, NaN, Infinity, 2^64, 1e200 in every number field of the
  native document, of each importer and of the job API; dates at 9999-12-31T12:00Z, 0001-01-01T12:00Z, 1969,
  2101; names with \\n \\r \\t U+2028 U+202E and Markdown in project, machine, benchmark, metric, unit,
  branch, host; reserved queues; git-refused branches; refs/pull/1/head as a commit), plus an authorization
  matrix of every identity × project × write endpoint. Each table case states what must happen: refused (with
  its statuses, and the field a 422 must name), accepted (2xx for an identity allowed to write there, 403 for
  the others), or either; anonymous always gets 401.

Checks, printed: 0 responses 5xx (table per endpoint and identity); table cases that got another status than
stated; rows stored changed only by accepted requests (runs added = runs created by 201 replies, results and
failed results added = results those replies counted, jobs and sessions likewise), no orphan project,
machine, revision, benchmark or metric, every new run, project, machine, job, session and alert event made by
an identity allowed to make it (no project or machine created by a non-staff identity); afterwards every page
("/", "/?format=json", "/runs/", "/alerts/", "/machines/", run pages, history pages, as anonymous and as staff)
answers 200 and no private project shows to an anonymous reader.
"""

import argparse
import collections
import copy
import gzip
import hashlib
import io
import json
import multiprocessing
import os
import random
import re
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load import production  # noqa: E402
from tests.processes import free_port, real_redis  # noqa: E402

IDENTITIES = ("staff", "uploader", "maintainer", "viewer", "project-b", "anonymous")
PROJECTS = {"alpha": "Alpha", "beta": "Beta", "gamma": "Gamma"}
MACHINES = {"alpha": "m-alpha", "beta": "m-beta", "gamma": "m-gamma"}
FORMATS = ("native", "pyperf", "pytest-benchmark", "google-benchmark", "hyperfine", "asv")
# Who may do what, stated here independently of results.access: posting to a project, triaging its alerts.
WRITERS = {"alpha": {"staff", "uploader", "maintainer"}, "beta": {"staff", "project-b"}, "gamma": {"staff"},
           "new": {"staff"}}
TRIAGERS = {"alpha": {"staff", "maintainer"}, "beta": {"staff", "project-b"}, "gamma": {"staff"}}
HIDDEN = {"gamma"}  # private: a non-member may get 404 instead of 403
RUN_KEY = "__RUN_KEY__"


# --- JSON with raw literals ---------------------------------------------------------------------------------


class Raw:
    """Text put into a JSON document as it is: 1e400, NaN, a 400-digit integer, 5,000 nested brackets."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:20]}{'…' if len(self.text) > 20 else ''})"


def dumps(value) -> bytes:
    raws: list[str] = []

    def walk(item):
        if isinstance(item, Raw):
            raws.append(item.text)
            return f"\x01RAW{len(raws) - 1}\x01"
        if isinstance(item, dict):
            return {key: walk(child) for key, child in item.items()}
        if isinstance(item, list | tuple):
            return [walk(child) for child in item]
        return item

    text = json.dumps(walk(value), ensure_ascii=False)
    for index, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x01RAW{index}\x01"), raw, 1)
    return text.encode("utf-8", "surrogatepass")


def deep(levels: int, inner: str = "1") -> Raw:
    return Raw("[" * levels + inner + "]" * levels)


def deep_object(levels: int) -> Raw:
    return Raw('{"a":' * levels + "1" + "}" * levels)


def placed(document, path: tuple, value):
    """A copy of `document` with `value` at `path` (keys and indexes), intermediate objects made as needed."""
    document = copy.deepcopy(document)
    holder = document
    for step in path[:-1]:
        if isinstance(holder, dict) and step not in holder:
            holder[step] = {}
        holder = holder[step]
    holder[path[-1]] = value
    return document


def removed(document, path: tuple):
    document = copy.deepcopy(document)
    holder = document
    for step in path[:-1]:
        holder = holder[step]
    del holder[path[-1]]
    return document


HUGE = {"10^400": Raw("1" + "0" * 400), "-10^400": Raw("-1" + "0" * 400), "1e400": Raw("1e400"),
        "-1e400": Raw("-1e400"), "NaN": Raw("NaN"), "Infinity": Raw("Infinity"), "-Infinity": Raw("-Infinity"),
        "2^64": 2**64, "1e200": 1e200}
NON_FINITE = {"10^400", "-10^400", "1e400", "-1e400", "NaN", "Infinity", "-Infinity"}
CONTROL_NAMES = {"\\n": "line\nbreak", "\\r": "carriage\rreturn", "\\t": "tab\there", "U+2028": "line\u2028sep",
                 "U+2029": "para\u2029sep", "U+202E": "bidi\u202eoverride", "ESC": "esc\x1b[31mred",
                 "U+0085": "nel\x85x", "U+2067": "isolate\u2067x", "# heading": "ok\n# Heading\n[link](https://evil.example/)"}
MARKDOWN_NAMES = {"[link](…)": "[link](https://evil.example/)", "@mention": "@everyone ping",
                  "<img>": '<img src="https://evil.example/t.png">', "![img](…)": "![x](https://evil.example/t.png)",
                  "#heading": "# Heading", "`code`|table|": "`code`|a|b|"}
OUT_OF_RANGE_DATES = {"9999-12-31T12:00Z": "9999-12-31T12:00:00Z", "9999-12-31T23:59:59.999999Z":
                      "9999-12-31T23:59:59.999999Z", "0001-01-01T12:00Z": "0001-01-01T12:00:00Z",
                      "0001-01-01T00:00Z": "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z": "1969-12-31T23:59:59Z",
                      "2101-01-01T00:00Z": "2101-01-01T00:00:00Z", "2100-01-01T00:00Z": "2100-01-01T00:00:00Z",
                      "9999-12-31T12:00-14:00": "9999-12-31T12:00:00-14:00",
                      "0001-01-01T00:00+14:00": "0001-01-01T00:00:00+14:00", "1e400": Raw("1e400"),
                      "10^400": Raw("1" + "0" * 400), "4102444800 (s: 2100-01-01)": 4102444800,
                      "253402257600000 (ms: 9999-12-31T12:00Z)": 253402257600000, "-1 (s: 1969)": -1}
IN_RANGE_DATES = {"1970-01-01T00:00Z": "1970-01-01T00:00:00Z", "2099-12-31T23:00Z": "2099-12-31T23:00:00Z"}
BAD_BRANCHES = ["a..b", "a@{1}", "x.lock", "feature/x.lock", "/lead", "trail/", "a//b", ".hidden", "a/.b", "end.",
                "@", "-opt", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a\nb", "a\x7fb", "x" * 201]
GOOD_BRANCHES = ["refs/pull/1/head", "feature/ok", "@mention"]
BAD_COMMITS = ["--upload-pack=touch /tmp/pwned", "-x", "a..b", "HEAD@{1}", "../../etc/passwd", "a/.b", "a" * 65,
               "$(id)", "`id`", "a b", "a\nb", ".hidden"]
GOOD_COMMITS = ["refs/pull/1/head", "refs/pull/1/merge", "v1.2.3", "deadbeef"]


# --- valid documents and files ------------------------------------------------------------------------------


def native_document(project: str = "alpha", machine: str | None = None, kind: str = "manual") -> dict:
    return {
        "run_key": RUN_KEY,
        "project": {"name": PROJECTS.get(project, project)},
        "machine": {"name": machine or MACHINES.get(project, "m-alpha")},
        "revision": {"commit": "a1b2c3d4e5", "branch": "main"},
        "kind": kind, "started_at": "2026-03-01T02:00:00Z", "finished_at": "2026-03-01T02:10:00Z",
        "environment": {"os": "linux"}, "source": "fuzz table",
        "results": [
            {"benchmark": "table samples", "metric": "time", "unit": "s", "samples": [1.0, 1.01, 0.99, 1.02],
             "metadata": {"k": 1}},
            {"benchmark": "table summary", "metric": "time", "unit": "s",
             "summary": {"mean": 1.0, "subsession_size": 1, "variance": 0.0001, "n": 10}},
        ],
    }


ASV_COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
               "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def import_file(format_name: str, variant: str = "") -> dict:
    """A small valid file of `format_name` (``variant`` "summary": pytest-benchmark without data,
    google-benchmark with aggregates only)."""
    if format_name == "native":
        document = native_document()
        for key in ("run_key", "project", "machine"):
            document.pop(key)
        return document
    if format_name == "pyperf":
        return {"version": "1.0", "metadata": {"hostname": "host", "cpu_count": 2, "perf_version": "2.6"},
                "benchmarks": [{"metadata": {"name": "pyperf bench", "unit": "second", "inner_loops": 1,
                                             "tags": ["t"]},
                                "runs": [{"metadata": {"date": "2026-01-01T00:00:00", "loops": 4},
                                          "warmups": [[4, 0.01]], "values": [0.01, 0.011, 0.012]},
                                         {"values": [0.0101, 0.0111, 0.0105]}]}]}
    if format_name == "pytest-benchmark":
        stats = {"min": 0.009, "max": 0.012, "mean": 0.0104, "stddev": 0.001, "rounds": 5, "iterations": 1}
        if variant != "summary":
            stats["data"] = [0.01, 0.011, 0.009, 0.0105, 0.012]
        return {"machine_info": {"node": "host", "system": "Linux", "release": "6", "cpu": {"brand_raw": "cpu",
                                                                                           "count": 2}},
                "commit_info": {"id": "abc", "branch": "main"},
                "benchmarks": [{"name": "test_x", "fullname": "t.py::test_x", "group": None, "params": None,
                                "extra_info": {"k": 1}, "options": {"warmup": False}, "stats": stats}],
                "datetime": "2026-01-01T00:00:00+00:00", "version": "4.0.0"}
    if format_name == "google-benchmark":
        context = {"date": "2026-01-01T00:00:00+00:00", "host_name": "host", "num_cpus": 2, "mhz_per_cpu": 2000,
                   "library_version": "v1.8.3", "caches": [{"type": "Data", "level": 1, "size": 32768}],
                   "load_avg": [0.5, 0.4, 0.3]}
        if variant == "summary":
            rows = [{"name": f"BM_x_{name}", "run_name": "BM_x", "run_type": "aggregate", "repetitions": 3,
                     "threads": 1, "aggregate_name": name, "iterations": 3, "real_time": value,
                     "cpu_time": value * 0.9, "time_unit": "ns"} for name, value in (("mean", 10.0), ("stddev", 0.1))]
        else:
            rows = [{"name": "BM_x", "run_name": "BM_x", "run_type": "iteration", "repetitions": 2,
                     "repetition_index": index, "threads": 1, "iterations": 100, "real_time": 10.0 + index,
                     "cpu_time": 9.0 + index, "time_unit": "ns", "items_per_second": 1e6} for index in range(2)]
        return {"context": context, "benchmarks": rows}
    if format_name == "hyperfine":
        return {"results": [{"command": "sleep 0", "mean": 0.01, "stddev": 0.001, "median": 0.01, "user": 0.001,
                             "system": 0.001, "min": 0.009, "max": 0.012, "times": [0.01, 0.011, 0.009],
                             "exit_codes": [0, 0, 0], "parameters": {"n": "1"}}]}
    if format_name == "asv":
        row = [[0.01], [], "v1", 1767225600000, 1.0, [0.009], [0.011], [0.0095], [0.0105], [1], [10], None, None]
        return {"commit_hash": "abcdef1234", "env_name": "py3.11", "date": 1767225600000,
                "params": {"machine": "m-alpha", "cpu": "cpu", "os": "linux", "arch": "x86_64", "num_cpu": "2",
                           "ram": "1000"},
                "python": "3.11", "requirements": {"numpy": ""}, "env_vars": {"A": "1"}, "result_columns": ASV_COLUMNS,
                "results": {"bench.time_x": row}, "durations": {"<build>": 1.0}, "version": 2}
    raise ValueError(format_name)


# Where each format keeps numbers, free-form values and names: (path, kind) — kind "measure" (a number a
# measurement is made of: refused when not finite or beyond 1e30), "count", "free" (kept as metadata) or
# "other" (whatever the importer makes of it: no 5xx, no further claim).
IMPORT_NUMBERS = {
    "native": [(("results", 0, "samples", 0), "measure"), (("results", 1, "summary", "mean"), "measure"),
               (("results", 1, "summary", "variance"), "measure"), (("results", 1, "summary", "n"), "count"),
               (("results", 0, "metadata", "k"), "free"), (("environment", "n"), "free")],
    "pyperf": [(("benchmarks", 0, "runs", 0, "values", 0), "measure"),
               (("benchmarks", 0, "runs", 1, "values", 2), "measure"),
               (("benchmarks", 0, "runs", 0, "warmups", 0, 1), "measure"),
               (("benchmarks", 0, "runs", 0, "warmups", 0, 0), "other"),
               (("benchmarks", 0, "runs", 0, "metadata", "loops"), "other"),
               (("metadata", "cpu_count"), "other"), (("benchmarks", 0, "metadata", "inner_loops"), "free")],
    "pytest-benchmark": [(("benchmarks", 0, "stats", "data", 0), "measure"),
                         (("benchmarks", 0, "stats", "iterations"), "free"),
                         (("benchmarks", 0, "extra_info", "k"), "free"),
                         (("machine_info", "cpu", "count"), "other")],
    "pytest-benchmark summary": [(("benchmarks", 0, "stats", "mean"), "measure"),
                                 (("benchmarks", 0, "stats", "stddev"), "measure"),
                                 (("benchmarks", 0, "stats", "rounds"), "count")],
    "google-benchmark": [(("benchmarks", 0, "real_time"), "measure"), (("benchmarks", 1, "cpu_time"), "measure"),
                         (("benchmarks", 0, "iterations"), "free"), (("benchmarks", 0, "threads"), "free"),
                         (("benchmarks", 0, "items_per_second"), "other"), (("context", "num_cpus"), "other"),
                         (("context", "mhz_per_cpu"), "other")],
    "google-benchmark summary": [(("benchmarks", 0, "real_time"), "measure"),
                                 (("benchmarks", 1, "real_time"), "measure"),
                                 (("benchmarks", 0, "repetitions"), "count")],
    "hyperfine": [(("results", 0, "times", 0), "measure"), (("results", 0, "user"), "other"),
                  (("results", 0, "system"), "other"), (("results", 0, "mean"), "other"),
                  (("results", 0, "exit_codes", 0), "other"), (("results", 0, "parameters", "n"), "free")],
    "asv": [(("results", "bench.time_x", 0, 0), "measure"), (("results", "bench.time_x", 7, 0), "other"),
            (("results", "bench.time_x", 8, 0), "other"), (("results", "bench.time_x", 10, 0), "other"),
            (("results", "bench.time_x", 3), "other"), (("results", "bench.time_x", 4), "other"),
            (("date",), "other"), (("durations", "<build>"), "other"), (("params", "num_cpu"), "other"),
            (("params", "ram"), "other")],
}
# Free-form places of each format (what becomes metadata or environment), for nesting.
IMPORT_FREE = {
    "native": [("results", 0, "metadata", "deep"), ("environment", "deep")],
    "pyperf": [("benchmarks", 0, "metadata", "tags"), ("metadata", "cpu_config")],
    "pytest-benchmark": [("benchmarks", 0, "extra_info", "deep"), ("benchmarks", 0, "params")],
    "google-benchmark": [("context", "caches"), ("context", "load_avg")],
    "hyperfine": [("results", 0, "parameters", "deep"), ("results", 0, "parameters")],
    "asv": [("env_vars", "deep"), ("requirements", "deep")],
}
# Where each format names its benchmark (or command), for line breaks and Markdown.
IMPORT_NAMES = {
    "native": ("results", 0, "benchmark"), "pyperf": ("benchmarks", 0, "metadata", "name"),
    "pytest-benchmark": ("benchmarks", 0, "fullname"), "google-benchmark": None,
    "hyperfine": ("results", 0, "command"), "asv": None,
}
# Each format's own dates: (path, value for "9999-12-31T12:00Z", for "0001-01-01T12:00Z", 1969, 2101).
IMPORT_DATES = {
    "native": [("started_at",), ("finished_at",)],
    "pytest-benchmark": [("datetime",)],
    "google-benchmark": [("context", "date")],
    "asv": [("date",), ("results", "bench.time_x", 3)],
    "pyperf": [("benchmarks", 0, "runs", 0, "metadata", "date")],
}
ASV_MILLISECONDS = {"9999-12-31T12:00Z": 253402257600000, "0001-01-01T12:00Z": -62135553600000,
                    "1969-12-31T23:59:59Z": -1000, "2101-01-01T00:00Z": 4133980800000,
                    "year 10000": 253402300800000, "1e20 ms": 1e20, "10^400 ms": Raw("1" + "0" * 400)}


# --- the table of hostile cases -----------------------------------------------------------------------------


def case(label: str, group: str, method: str, path: str, *, body=None, query=None, content_type="application/json",
         expect: str, target: str, statuses=(), field: str | None = None, encoded: bytes | None = None,
         anonymous=(401,)) -> dict:
    """A table case: `expect` "refuse" (one of `statuses`, a 422 naming `field`), "accept" (2xx where the
    identity may write `target`, else 403) or "any" (no 5xx; no 2xx where the identity may not write)."""
    if encoded is None and body is not None:
        encoded = dumps(body)
    return {"label": label, "group": group, "method": method, "path": path, "query": query or {},
            "body": encoded, "content_type": content_type, "expect": expect, "target": target,
            "statuses": tuple(statuses), "field": field, "anonymous": tuple(anonymous)}


def native_case(label, group, document, *, expect, statuses=(422,), field=None, target=None):
    target = target or _target(document)
    return case(label, group, "POST", "/api/v1/runs", body=document, expect=expect, statuses=statuses, field=field,
                target=target)


def _target(document) -> str:
    try:
        name, machine = document["project"]["name"], document["machine"]["name"]
    except (KeyError, TypeError):
        return "alpha"
    slug = {value: key for key, value in PROJECTS.items()}.get(name)
    if slug is None or not isinstance(machine, str) or machine not in MACHINES.values():
        return "new"
    return slug


def import_case(label, group, format_name, file, *, expect, statuses=(400, 422), field=None, query=None,
                encoded=None, content_type="application/json", target="alpha"):
    stated = {"format": format_name, "project": "Alpha", "machine": "m-alpha", "run_key": RUN_KEY, **(query or {})}
    if encoded is None:
        encoded = dumps(file)
    return case(label, group, "POST", "/api/v1/runs/import", query=stated, encoded=encoded,
                content_type=content_type, expect=expect, statuses=statuses, field=field, target=target)


def hostile_table() -> list[dict]:
    cases: list[dict] = []
    base = native_document()

    # Deep JSON: the whole body (refused before parsing, 400), free-form fields (422 naming the field up to 64
    # levels, 400 beyond), samples (4 levels at most).
    for levels in (256, 950, 5000):
        cases.append(native_case(f"body: an array {levels} deep", "deep JSON", deep(levels), expect="refuse",
                                 statuses=(400,), target="alpha"))
        cases.append(native_case(f"body: an extra key {levels} deep", "deep JSON", placed(base, ("extra",), deep(levels)),
                                 expect="refuse", statuses=(400,)))
    # A field's levels count the field's own object: {"deep": [[…]]} with 15 lists is 16 levels (the most).
    for levels in (16, 17, 60, 256, 950, 5000):
        statuses = (422,) if levels <= 64 else (400,)
        for path, field in ((("results", 0, "metadata", "deep"), "results[0].metadata"),
                            (("environment", "deep"), "environment"), (("machine", "hardware", "deep"), "machine.hardware")):
            for maker in (deep, deep_object):
                value = maker(levels - 1)
                cases.append(native_case(f"{field}: {levels} levels ({maker.__name__})", "deep JSON",
                                         placed(base, path, value), expect="accept" if levels <= 16 else "refuse",
                                         statuses=statuses, field=field if 16 < levels <= 64 else None))
    for levels in (5, 40):
        cases.append(native_case(f"samples nested {levels} levels", "deep JSON",
                                 placed(base, ("results", 0, "samples"), deep(levels - 1, "[1.0, 2.0]")),
                                 expect="refuse", field="results[0].samples"))
    cases.append(native_case("brackets inside strings, 5000 deep (text, not nesting)", "deep JSON",
                             placed(base, ("results", 0, "metadata", "text"), "[" * 5000 + '\\"{' * 100),
                             expect="accept"))

    # Numbers beyond every bound in every number field of the native document.
    numeric = [(("machine", "cores"), "machine.cores", "int"), (("machine", "memory_bytes"), "machine.memory_bytes", "int"),
               (("revision", "pull_request"), "revision.pull_request", "int"),
               (("results", 0, "samples", 0), "results[0].samples", "measure"),
               (("results", 0, "samples"), "results[0].samples", "nested"),
               (("results", 1, "summary", "mean"), "results[1].summary.mean", "measure"),
               (("results", 1, "summary", "subsession_size"), "results[1].summary.subsession_size", "int"),
               (("results", 1, "summary", "variance"), "results[1].summary.variance", "measure"),
               (("results", 1, "summary", "n"), "results[1].summary.n", "int"),
               (("results", 0, "confidence_level"), "results[0].confidence_level", "unit"),
               (("results", 0, "warmup_removed"), "results[0].warmup_removed", "int"),
               (("results", 0, "metadata", "k"), "results[0].metadata", "free"),
               (("environment", "n"), "environment", "free"), (("machine", "hardware", "n"), "machine.hardware", "free"),
               (("started_at",), "started_at", "date"), (("finished_at",), "finished_at", "date"),
               (("revision", "timestamp"), "revision.timestamp", "date")]
    for path, field, kind in numeric:
        for name, value in HUGE.items():
            if kind == "nested":
                value = [[value, 1.0], [1.0, 1.0]]
            if kind == "free":
                expect = "refuse" if name in NON_FINITE else "accept"
            elif kind in ("measure", "nested"):
                expect = "accept" if name == "2^64" else "refuse"
            else:
                expect = "refuse"
            document = placed(base, path, value)
            if path == ("finished_at",):
                document = removed(document, ("started_at",))
            cases.append(native_case(f"{field} = {name}", "numbers", document, expect=expect,
                                     field=field if expect == "refuse" else None))
    # The same through the importers' own number fields.
    for key, places in IMPORT_NUMBERS.items():
        format_name, _, variant = key.partition(" ")
        for path, kind in places:
            for name, value in HUGE.items():
                if kind == "measure":
                    expect = "refuse" if name in NON_FINITE or name == "1e200" else "accept"
                elif kind == "count":
                    expect = "refuse"
                elif kind == "free" and format_name == "native":
                    expect = "refuse" if name in NON_FINITE else "any"
                else:
                    expect = "any"  # a tool's own value: kept, dropped, or (not finite) kept as null by design
                cases.append(import_case(f"{key}: {'.'.join(map(str, path))} = {name}", "numbers", format_name,
                                         placed(import_file(format_name, variant), path, value), expect=expect))
    for stddev in (1e200, 1e100, 1e31, 9.9e29):
        cases.append(import_case(f"pytest-benchmark summary: stddev = {stddev:g}", "numbers", "pytest-benchmark",
                                 placed(import_file("pytest-benchmark", "summary"), ("benchmarks", 0, "stats", "stddev"),
                                        stddev), expect="refuse" if stddev > 1e30 else "accept"))

    # Deep JSON in each format's files: 400 past 64 levels (before parsing), 422 naming the field below.
    for format_name in FORMATS:
        for levels in (256, 950, 5000):
            cases.append(import_case(f"{format_name}: the file is an array {levels} deep", "deep JSON", format_name,
                                     None, encoded=deep(levels).text.encode(), expect="refuse", statuses=(400,)))
            for path in IMPORT_FREE[format_name]:
                cases.append(import_case(f"{format_name}: {'.'.join(map(str, path))} {levels} deep", "deep JSON",
                                         format_name, placed(import_file(format_name), path, deep(levels)),
                                         expect="refuse", statuses=(400,)))
            gzipped = gzip.compress(dumps(placed(import_file(format_name), IMPORT_FREE[format_name][0], deep(levels))))
            cases.append(import_case(f"{format_name}: gzip of a file {levels} deep", "deep JSON", format_name, None,
                                     encoded=gzipped, content_type="application/octet-stream", expect="refuse",
                                     statuses=(400,)))
        for path in IMPORT_FREE[format_name]:
            cases.append(import_case(f"{format_name}: {'.'.join(map(str, path))} 30 deep", "deep JSON", format_name,
                                     placed(import_file(format_name), path, deep(30)), expect="refuse",
                                     statuses=(400, 422)))
        cases.append(import_case(f"{format_name}: multipart upload {950} deep", "deep JSON", format_name, None,
                                 encoded=_multipart(dumps(placed(import_file(format_name), IMPORT_FREE[format_name][0],
                                                                 deep(950)))),
                                 content_type="multipart/form-data; boundary=FUZZBOUNDARY", expect="refuse",
                                 statuses=(400,)))
    cases.append(import_case("a gzip bomb (64 MiB of zeros and more)", "size", "native", None,
                             encoded=gzip.compress(b" " * (70 * 1024 * 1024), compresslevel=9),
                             content_type="application/octet-stream", expect="refuse", statuses=(400, 413)))

    # Dates: out of 1970..2100 refused naming the field, in range accepted, for nightly runs (whose night the
    # overview computes) and every date field; numbers as dates too.
    for name, value in {**OUT_OF_RANGE_DATES, **IN_RANGE_DATES}.items():
        expect = "accept" if name in IN_RANGE_DATES else "refuse"
        for field in ("started_at", "finished_at", "revision.timestamp"):
            document = native_document(kind="nightly")
            document = removed(document, ("finished_at",))
            if field == "finished_at":
                document = removed(document, ("started_at",))
            document = placed(document, tuple(field.split(".")), value)
            cases.append(native_case(f"{field} = {name} (nightly)", "dates", document, expect=expect,
                                     field=field if expect == "refuse" else None))
    for format_name, paths in IMPORT_DATES.items():
        for path in paths:
            values = dict(ASV_MILLISECONDS) if format_name == "asv" else {**OUT_OF_RANGE_DATES, **IN_RANGE_DATES}
            for name, value in values.items():
                if format_name == "pyperf" or path == ("results", "bench.time_x", 3):
                    expect = "any"  # kept as text in the environment, or as the benchmark's own metadata
                elif format_name == "asv":
                    expect = "refuse"
                elif format_name == "google-benchmark" and name in OUT_OF_RANGE_DATES and isinstance(value, str) \
                        and not re.search(r"(Z|[+-]\d\d:\d\d)$", value):
                    expect = "any"
                else:
                    expect = "accept" if name in IN_RANGE_DATES else "refuse"
                if format_name == "google-benchmark" and not isinstance(value, str):
                    expect = "any"  # a context date that is no text is not read
                file = placed(import_file(format_name), path, value)
                if format_name == "native" and path == ("finished_at",):
                    file = removed(file, ("started_at",))
                elif format_name == "native":
                    file = removed(file, ("finished_at",))
                cases.append(import_case(f"{format_name}: {'.'.join(map(str, path))} = {name}", "dates",
                                         format_name, file, expect=expect,
                                         query={"kind": "nightly"} if format_name != "native" else None))

    # Names: control characters and line breaks refused (422) everywhere a name is; Markdown is text (accepted
    # where the identity may write, and escaped where shown).
    name_fields = [(("project", "name"), "project.name", "new"), (("machine", "name"), "machine.name", "new"),
                   (("results", 0, "benchmark"), "results[0].benchmark", None),
                   (("results", 0, "metric"), "results[0].metric", None), (("results", 0, "unit"), "results[0].unit", None),
                   (("revision", "branch"), "revision.branch", None), (("machine", "hostname"), "machine.hostname", None),
                   (("machine", "os"), "machine.os", None), (("machine", "cpu_model"), "machine.cpu_model", None),
                   (("source",), "source", None), (("project", "repository_url"), "project.repository_url", "new"),
                   (("revision", "author"), "revision.author", None)]
    for path, field, target in name_fields:
        for name, value in CONTROL_NAMES.items():
            document = placed(base, path, value)
            if target == "new" and path[0] == "project":
                document = placed(document, ("project", "name"), "Fresh " + name if field != "project.name" else value)
            cases.append(native_case(f"{field} with {name}", "names", document, expect="refuse", field=field,
                                     target=target))
        for name, value in MARKDOWN_NAMES.items():
            # A new project or machine: its own for each identity (else the first to create it makes it exist).
            document = placed(base, path, f"{value} {RUN_KEY}" if target == "new" else value)
            if field == "results[0].unit":  # a metric keeps its unit: a new benchmark for each
                document = placed(document, ("results", 0, "benchmark"), f"unit {value}")
            if path == ("project", "repository_url"):
                document = placed(document, ("project", "name"), f"Markdown repo {name} {RUN_KEY}")
            expect = "any" if field == "revision.branch" else "accept"
            cases.append(native_case(f"{field} = Markdown {name}", "names", document, expect=expect,
                                     target=target or "alpha"))
    cases.append(native_case("benchmark with a NUL (\\u0000)", "names",
                             placed(base, ("results", 0, "benchmark"), "nul\x00x"), expect="refuse", statuses=(400, 422)))
    cases.append(case("benchmark with an unpaired surrogate (\\ud800)", "names", "POST", "/api/v1/runs",
                      encoded=dumps(placed(base, ("results", 0, "benchmark"), "SURROGATE")).replace(
                          b'"SURROGATE"', b'"a\\ud800b"'), expect="refuse", statuses=(400, 422), target="alpha"))
    for format_name in FORMATS:
        for name, value in [*list(CONTROL_NAMES.items())[:6], *list(MARKDOWN_NAMES.items())[:3]]:
            expect = "refuse" if name in CONTROL_NAMES else "accept"
            file = import_file(format_name)
            if IMPORT_NAMES[format_name] is not None:
                file = placed(file, IMPORT_NAMES[format_name], value)
            elif format_name == "google-benchmark":
                for row in file["benchmarks"]:
                    row["name"] = row["run_name"] = value
            else:
                file["results"] = {f"bench.time_{value}": file["results"]["bench.time_x"]}
            cases.append(import_case(f"{format_name}: benchmark name with {name}", "names", format_name, file,
                                     expect=expect, statuses=(400, 422)))
        for parameter in ("project", "machine", "branch", "commit"):
            for name, value in [(name, CONTROL_NAMES[name]) for name in ("\\n", "\\r", "\\t", "U+2028", "U+202E")]:
                # (a branch goes with a commit: without one, the refusal would be the missing commit's)
                stated = {parameter: value, **({"commit": "abc1234"} if parameter == "branch" else {})}
                cases.append(import_case(f"{format_name}: ?{parameter}= with {name}", "names", format_name,
                                         import_file(format_name), query=stated, expect="refuse",
                                         statuses=(400, 422), field=parameter))

    # Queues: the system's are reserved; only staff name a queue, and a queue is one machine's.
    for queue in ("analysis", "celery", "bench.m-alpha", "-x", "a" * 101, "bad queue", "ok-queue"):
        for machine in ("m-alpha", f"fresh-queue-{RUN_KEY}"):
            document = placed(base, ("machine",), {"name": machine, "queue": queue})
            reserved = queue in ("analysis", "celery", "-x", "a" * 101, "bad queue")
            expect = "refuse" if reserved else "any"
            cases.append(native_case(f"machine.queue = {queue[:20]!r} on {'an existing' if machine == 'm-alpha' else 'a new'} "
                                     "machine", "queues", document, expect=expect, statuses=(422,),
                                     field="machine.queue" if reserved else None, target="alpha" if machine == "m-alpha" else "new"))
    # Branches as git refuses them, commits that are options or escape a path; refs/pull/1/head is a commit.
    for branch in BAD_BRANCHES:
        cases.append(native_case(f"revision.branch = {branch[:24]!r}", "branches and commits",
                                 placed(base, ("revision", "branch"), branch), expect="refuse", field="revision.branch"))
        cases.append(import_case(f"?branch={branch[:24]!r}", "branches and commits", "pyperf", import_file("pyperf"),
                                 query={"branch": branch, "commit": "abc1234"}, expect="refuse", statuses=(422,),
                                 field="branch"))
    cases.append(native_case("project.default_branch = 'a..b' (new project)", "branches and commits",
                             placed(placed(base, ("project",), {"name": "Branchy", "default_branch": "a..b"}),
                                    ("machine", "name"), "m-alpha"),
                             expect="refuse", field="project.default_branch", target="new"))
    for branch in GOOD_BRANCHES:
        cases.append(native_case(f"revision.branch = {branch!r}", "branches and commits",
                                 placed(base, ("revision", "branch"), branch), expect="accept"))
    for commit in BAD_COMMITS:
        for field in ("commit", "base_commit"):
            cases.append(native_case(f"revision.{field} = {commit[:24]!r}", "branches and commits",
                                     placed(base, ("revision", field), commit), expect="refuse", field=f"revision.{field}"))
    for commit in GOOD_COMMITS:
        cases.append(native_case(f"revision.commit = {commit!r}", "branches and commits",
                                 placed(placed(base, ("revision", "commit"), commit), ("kind",), "nightly"),
                                 expect="accept"))
        cases.append(import_case(f"?commit={commit!r}&kind=pr&pull_request=1", "branches and commits", "hyperfine",
                                 import_file("hyperfine"), query={"commit": commit, "kind": "pr", "pull_request": "1",
                                                                  "base_commit": "a1b2c3d4e5"}, expect="accept"))

    cases += job_table() + alert_table() + authorization_table()
    return cases


def _multipart(content: bytes) -> bytes:
    return (b"--FUZZBOUNDARY\r\nContent-Disposition: form-data; name=\"file\"; filename=\"r.json\"\r\n"
            b"Content-Type: application/json\r\n\r\n" + content + b"\r\n--FUZZBOUNDARY--\r\n")


JOB_NUMBERS = ["round_timeout", "confidence_level", "target_width", "max_autocorrelation", "comparison_alpha",
               "comparison_threshold", "work_min", "work_max", "min_round_duration", "budget_seconds", "budget_rounds",
               "overhead_rounds", "project", "machine"]
JOB_VALUES = {**{name: value for name, value in HUGE.items() if name != "1e200"}, "1e308": 1e308,
              '"Infinity"': "Infinity", '"NaN"': "NaN", '"1e400"': "1e400", '"inf"': "inf", '"-1e999999"': "-1e999999",
              '"1' + '0' * 30 + '"': "1" + "0" * 30}


def job_body(**fields) -> dict:
    return {"project": "__PROJECT_ID__", "machine": "__MACHINE_ID__", "name": f"fuzz job {RUN_KEY}",
            "benchmark": "sort", "workload_kind": "builtin", "builtin": "sort", "work_max": 100, **fields}


def job_table() -> list[dict]:
    cases = []
    for field in JOB_NUMBERS:
        for name, value in JOB_VALUES.items():
            for method, path in (("POST", "/api/v1/jobs"), ("PATCH", "/api/v1/jobs/{job}")):
                body = job_body(**{field: value}) if method == "POST" else {field: value}
                cases.append(case(f"{method} job {field} = {name}", "job numbers", method, path, body=body,
                                  expect="refuse", statuses=(422,), field=field, target="jobs"))
    refuse, either = "refuse", "any"
    json_fields = {
        "parameters": [('{"seed": 1e400}', "1e400", refuse), ('{"seed": ' + "1" + "0" * 400 + "}", "10^400", refuse),
                       ('{"seed": NaN}', "NaN", refuse), ('{"seed": Infinity}', "Infinity", refuse),
                       ({"seed": Raw("1e400")}, "object 1e400", refuse), ({"seed": Raw("NaN")}, "object NaN", refuse),
                       ('{"seed": ' + deep(17).text + "}", "17 deep", refuse),
                       ('{"seed": ' + deep(63).text + "}", "63 deep", refuse),
                       ('{"seed": ' + deep(950).text + "}", "950 deep", refuse),
                       ('{"seed": ' + deep(5000).text + "}", "5000 deep", refuse),
                       ({"seed": deep(30)}, "object 30 deep", refuse)],
        "metrics": [('[{"name": "t", "unit": "s", "x": 1e400}]', "1e400", refuse), ("[" + deep(20).text + "]", "20 deep", refuse),
                    ("[" + deep(5000).text + "]", "5000 deep", refuse), ([{"name": "t\nx", "unit": "s"}], "name with \\n", refuse),
                    ([{"name": "t", "unit": Raw("NaN")}], "unit NaN", either)],
        # Text fields: a number given for one becomes its text ("inf"), which is no number any more.
        "environment": [({"A": Raw("1e400")}, "value 1e400", either), ({"A": deep(30)}, "value 30 deep", either),
                        ("A=1\nB", "a line without =", refuse), ({"A\nB": "1"}, "name with \\n", refuse)],
        "command": [([Raw("1e400")], "[1e400]", either), ([deep(30)], "[30 deep]", either), ("a | b", "a pipe", refuse)],
        "cron": [("0 " + "9" * 400 + " * * *", "hour 10^400", refuse), ("* * * * * *", "six fields", refuse),
                 (Raw("1e400"), "1e400", refuse)],
        "name": [("job\nname", "\\n", refuse), ("job\u202ename", "U+202E", refuse), (Raw("1e400"), "1e400", either)],
        "benchmark": [("bench\r\nx", "\\r\\n", refuse), ("# heading\nx", "Markdown heading", refuse)],
    }
    for field, values in json_fields.items():
        for value, name, expect in values:
            value = Raw(json.dumps(value)) if isinstance(value, str) and field in ("parameters", "metrics") else value
            for method, path in (("POST", "/api/v1/jobs"), ("PATCH", "/api/v1/jobs/{job}")):
                body = job_body(**{field: value}) if method == "POST" else {field: value}
                cases.append(case(f"{method} job {field} = {name}", "job JSON", method, path, body=body,
                                  expect=expect, statuses=(400, 422), field=field if expect == refuse else None,
                                  target="jobs"))
    for levels in (256, 950, 5000):
        for method, path in (("POST", "/api/v1/jobs"), ("PATCH", "/api/v1/jobs/{job}"), ("POST", "/api/v1/jobs/{job}/run")):
            cases.append(case(f"{method} {path}: body {levels} deep", "job JSON", method, path,
                              body={"revisions": deep(levels)}, expect="refuse", statuses=(400,), target="jobs"))
    cases.append(case("POST job (valid)", "job matrix", "POST", "/api/v1/jobs", body=job_body(), expect="accept",
                      target="jobs"))
    cases.append(case("PATCH job (valid)", "job matrix", "PATCH", "/api/v1/jobs/{job}", body={"budget_rounds": 500},
                      expect="accept", target="jobs"))
    run_now = {"two revisions": [{"label": "a", "commit": "deadbeef"}, {"label": "b", "branch": "main"}],
               "refs/pull/1/head": [{"label": "a", "commit": "refs/pull/1/head"}, {"label": "b", "commit": "v1"}]}
    for name, revisions in run_now.items():
        cases.append(case(f"run now: {name}", "job matrix", "POST", "/api/v1/jobs/{job}/run",
                          body={"revisions": revisions}, expect="accept", target="jobs"))
    hostile_run_now = {"commit --upload-pack": [{"label": "a", "commit": "--upload-pack=touch /tmp/x"}],
                       "branch a..b": [{"label": "a", "branch": "a..b"}], "label with \\n": [{"label": "a\nb"}],
                       "17 revisions": [{"label": str(index)} for index in range(17)],
                       "label 10^400": [{"label": Raw("1" + "0" * 400)}], "commit NaN": [{"label": "a", "commit": Raw("NaN")}],
                       "duplicate labels": [{"label": "a"}, {"label": "a"}], "empty label": [{"label": ""}]}
    for name, revisions in hostile_run_now.items():
        cases.append(case(f"run now: {name}", "job matrix", "POST", "/api/v1/jobs/{job}/run",
                          body={"revisions": revisions}, expect="refuse", statuses=(422,), target="jobs"))
    for session in ("{session}", "0", "999999999999999999", "1" + "0" * 400, "-1", "1e400"):
        unmatched = not re.fullmatch(r"\{session\}|[0-9]{1,18}", session)  # no route: 404 before any check
        cases.append(case(f"cancel session {session[:20]}", "job matrix", "POST", f"/api/v1/sessions/{session}/cancel",
                          expect="accept" if session == "{session}" else "refuse", statuses=(404,), target="jobs",
                          anonymous=(404,) if unmatched else (401,)))
    cases.append(case("PATCH job 10^400", "job matrix", "PATCH", "/api/v1/jobs/" + "1" + "0" * 400, body={},
                      expect="refuse", statuses=(404,), target="jobs", anonymous=(404,)))
    return cases


def alert_table() -> list[dict]:
    cases = []
    for project in ("alpha", "beta", "gamma"):
        for status in ("acknowledged", "invalid", "fixed", "wont_fix", "new"):
            cases.append(case(f"triage a {project} alert: {status}", "triage", "POST", f"/api/v1/alerts/{{alert_{project}}}/status",
                              body={"status": status, "note": "fuzz"}, expect="accept", target=f"alert:{project}"))
    hostile = {"status 10^400": {"status": Raw("1" + "0" * 400)}, "status NaN": {"status": Raw("NaN")},
               "status with \\n": {"status": "new\n"}, "unknown status": {"status": "closed"},
               "note as an object 30 deep": {"status": "new", "note": deep(30)},
               "note Infinity": {"status": "new", "note": Raw("Infinity")}}
    for name, body in hostile.items():
        cases.append(case(f"triage: {name}", "triage", "POST", "/api/v1/alerts/{alert_alpha}/status", body=body,
                          expect="refuse", statuses=(422,), target="alert:alpha"))
    for levels in (256, 950, 5000):
        cases.append(case(f"triage: body {levels} deep", "triage", "POST", "/api/v1/alerts/{alert_alpha}/status",
                          body={"status": "new", "note": deep(levels)}, expect="refuse", statuses=(400,),
                          target="alert:alpha"))
    for alert in ("0", "999999999999999999", "1" + "0" * 400):
        cases.append(case(f"triage alert {alert[:20]}", "triage", "POST", f"/api/v1/alerts/{alert}/status",
                          body={"status": "new"}, expect="refuse", statuses=(404,), target="alert:alpha",
                          anonymous=(404,) if len(alert) > 18 else (401,)))
    return cases


def authorization_table() -> list[dict]:
    """Every identity posts to every project through every write endpoint and importer; new projects and
    machines (creation is closed: staff only)."""
    cases = []
    for project in ("alpha", "beta", "gamma"):
        cases.append(native_case(f"post a run to {project}", "authorization", native_document(project),
                                 expect="accept"))
        for format_name in FORMATS:
            for variant in ("", "summary") if format_name in ("pytest-benchmark", "google-benchmark") else ("",):
                cases.append(import_case(f"import {format_name}{' ' + variant if variant else ''} to {project}",
                                         "authorization", format_name, import_file(format_name, variant),
                                         query={"project": PROJECTS[project], "machine": MACHINES[project],
                                                "commit": "c0ffee12"}, expect="accept", target=project))
    cases.append(native_case("post a run creating a project", "authorization",
                             native_document("Fresh project " + RUN_KEY), expect="accept", target="new"))
    cases.append(native_case("post a run creating a machine", "authorization",
                             native_document("alpha", machine="fresh-" + RUN_KEY), expect="accept", target="new"))
    cases.append(import_case("import creating a project", "authorization", "hyperfine", import_file("hyperfine"),
                             query={"project": "Imported fresh " + RUN_KEY}, expect="accept", target="new"))
    cases.append(import_case("import creating a machine", "authorization", "hyperfine", import_file("hyperfine"),
                             query={"machine": "imported-fresh-" + RUN_KEY}, expect="accept", target="new"))
    cases.append(native_case("post a confirmation run", "authorization", native_document(kind="confirmation"),
                             expect="refuse", statuses=(400, 422), field="kind"))
    return cases


def allowed(identity: str, target: str) -> bool:
    if target == "jobs":
        return identity == "staff"
    if target.startswith("alert:"):
        return identity in TRIAGERS[target.split(":")[1]]
    return identity in WRITERS[target]


def expected_statuses(identity: str, spec: dict) -> set[int]:
    """The statuses a table case may get as `identity`."""
    if identity == "anonymous":
        return set(spec["anonymous"])
    refusals = set(spec["statuses"]) or {400, 401, 403, 404, 409, 413, 422}
    may = allowed(identity, spec["target"])
    denied = {403, 404} if spec["target"].split(":")[-1] in HIDDEN else {403}
    if spec["expect"] == "refuse":
        return refusals if may else refusals | denied
    if spec["expect"] == "accept":
        return {200, 201, 202} if may else denied
    return set(range(200, 500)) if may else set(range(300, 500))


# --- generated documents, files and job bodies (hypothesis) -------------------------------------------------


def strategies():
    from hypothesis import strategies as st

    hostile_number = st.sampled_from(list(HUGE.values()) + [-1, 0, -1e-300, 2**31, 2**63 - 1, 2**63, 1e30, 1.5e30])
    number = st.one_of(st.floats(1e-6, 1e3), st.floats(1e-6, 1e3), st.floats(1e-6, 1e3), hostile_number)
    count = st.one_of(st.integers(1, 1000), st.integers(1, 1000), hostile_number)
    name = st.one_of(st.sampled_from([f"bench {index}" for index in range(6)]),
                     st.sampled_from([f"bench {index}" for index in range(6)]),
                     st.sampled_from(list(CONTROL_NAMES.values()) + list(MARKDOWN_NAMES.values())),
                     st.text(min_size=1, max_size=30))
    nesting = st.builds(lambda levels, maker: maker(levels), st.sampled_from([2, 10, 17, 40, 70, 300]),
                        st.sampled_from([deep, deep_object]))
    free = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(number, st.text(max_size=10), nesting),
                           max_size=3)
    date = st.one_of(st.sampled_from(["2026-01-0%dT02:00:00Z" % day for day in range(1, 9)]),
                     st.sampled_from(list(OUT_OF_RANGE_DATES.values()) + list(IN_RANGE_DATES.values())),
                     st.datetimes().map(lambda moment: moment.isoformat() + "Z"))
    project = st.sampled_from(["Alpha", "Alpha", "Beta", "Gamma", "Fresh generated"])
    machine = st.sampled_from(["m-alpha", "m-alpha", "m-beta", "m-gamma", "fresh-generated"])
    branch = st.one_of(st.sampled_from(["main", "main", "feature/x"]), st.sampled_from(BAD_BRANCHES + GOOD_BRANCHES))
    commit = st.one_of(st.text("0123456789abcdef", min_size=7, max_size=40),
                       st.sampled_from(BAD_COMMITS + GOOD_COMMITS))
    samples = st.one_of(st.lists(number, min_size=1, max_size=20),
                        st.lists(st.lists(st.floats(0.5, 2.0), min_size=3, max_size=3), min_size=1, max_size=4))
    summary = st.fixed_dictionaries({"mean": number, "subsession_size": count, "variance": number, "n": count})
    result = st.fixed_dictionaries(
        {"benchmark": name, "metric": st.sampled_from(["time", "rss", "time\n"]), "unit": st.sampled_from(["s", "B"])},
        optional={"samples": samples, "summary": summary, "metadata": free, "confidence_level": st.floats(0, 1),
                  "warmup_removed": count})
    native = st.fixed_dictionaries({
        "run_key": st.just(RUN_KEY),
        "project": st.fixed_dictionaries({"name": project}),
        "machine": st.fixed_dictionaries({"name": machine}, optional={
            "cores": count, "memory_bytes": count, "hardware": free, "hostname": name,
            "queue": st.sampled_from(["analysis", "celery", "ok"])}),
        "revision": st.fixed_dictionaries({"commit": commit, "branch": branch}, optional={"pull_request": count}),
        "kind": st.sampled_from(["nightly", "nightly", "pr", "manual", "imported"]),
        "results": st.lists(result, min_size=1, max_size=5, unique_by=lambda r: (str(r["benchmark"]), r["metric"])),
    }, optional={"started_at": date, "finished_at": date, "environment": free})

    def import_files(format_name: str):
        places = [path for path, _ in IMPORT_NUMBERS[format_name]]
        if format_name in ("pytest-benchmark", "google-benchmark"):
            places_summary = [path for path, _ in IMPORT_NUMBERS[f"{format_name} summary"]]
        else:
            places_summary = []

        @st.composite
        def build(draw):
            variant = draw(st.sampled_from(["", "summary"])) if places_summary else ""
            file = import_file(format_name, variant)
            for path in draw(st.lists(st.sampled_from(places_summary if variant else places), max_size=3)):
                file = placed(file, path, draw(number))
            if draw(st.booleans()):
                file = placed(file, draw(st.sampled_from(IMPORT_FREE[format_name])), draw(st.one_of(free, nesting)))
            if IMPORT_NAMES[format_name] is not None and draw(st.booleans()):
                file = placed(file, IMPORT_NAMES[format_name], draw(name))
            for path in IMPORT_DATES.get(format_name, []):
                if draw(st.integers(0, 3)) == 0:
                    file = placed(file, path, draw(date) if format_name != "asv" else draw(
                        st.sampled_from(list(ASV_MILLISECONDS.values()))))
            query = {"format": format_name, "project": draw(project), "machine": draw(machine), "run_key": RUN_KEY}
            if draw(st.booleans()):
                query["commit"] = draw(commit)
                query["branch"] = draw(branch)
            if draw(st.integers(0, 4)) == 0:
                query["kind"] = draw(st.sampled_from(["nightly", "pr", "confirmation", "x"]))
            encoded = dumps(file)
            if draw(st.integers(0, 5)) == 0:
                return query, gzip.compress(encoded), "application/octet-stream"
            return query, encoded, "application/json"

        return build()

    job_number = st.one_of(st.floats(0.01, 0.5), st.integers(1, 100), hostile_number,
                           st.sampled_from([Raw("Infinity"), "Infinity", "NaN", "1e400"]))
    job = st.fixed_dictionaries({}, optional={
        **{field: job_number for field in JOB_NUMBERS if field not in ("project", "machine")},
        "parameters": st.one_of(free, st.sampled_from(['{"seed": 1e400}', '{"seed": 1}', "[]"])),
        "name": name, "builtin": st.sampled_from(["sort", "sha256", "nope"]),
        "workload_kind": st.sampled_from(["builtin", "command"]), "command": st.lists(st.text(max_size=5), max_size=3),
        "cron": st.sampled_from(["", "0 2 * * *", "61 * * * *", "0 " + "9" * 40 + " * * *"]),
        "enabled": st.booleans()})
    return {"native": native, "imports": {name: import_files(name) for name in FORMATS}, "job": job}


# --- the sending side (worker processes) --------------------------------------------------------------------

WORLD: dict = {}
_SCHEMA = None


def _init(world: dict) -> None:
    WORLD.update(world)


def _headers(identity: str) -> dict:
    token = WORLD["tokens"].get(identity)
    return {"Authorization": f"Bearer {token}"} if token else {}


def _fill(text: str, key: str) -> str:
    return (text.replace(RUN_KEY, key).replace("{job}", str(WORLD["job"])).replace(
        "{session}", str(WORLD["sessions"][0]))
        .replace("{alert_alpha}", str(WORLD["alerts"]["alpha"][0])).replace("{alert_beta}", str(WORLD["alerts"]["beta"][0]))
        .replace("{alert_gamma}", str(WORLD["alerts"]["gamma"][0])))


def _fill_body(body: bytes, key: str) -> bytes:
    return (body.replace(RUN_KEY.encode(), key.encode())
            .replace(b'"__PROJECT_ID__"', str(WORLD["project_ids"]["alpha"]).encode())
            .replace(b'"__MACHINE_ID__"', str(WORLD["machine_ids"]["alpha"]).encode()))


def endpoint_of(method: str, path: str, query: dict | None) -> str:
    path = re.sub(r"/(alerts|jobs|sessions)/[^/]+", r"/\1/{id}", path)
    if path == "/api/v1/runs/import":
        chosen = (query or {}).get("format", "native")
        path += f"?format={chosen if chosen in FORMATS else '(other)'}"
    return f"{method.upper()} {path}"


class Outcome:
    def __init__(self) -> None:
        self.statuses: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
        self.sources: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.created = collections.Counter()
        self.failures: list[str] = []
        self.mismatches: list[str] = []

    def record(self, source: str, endpoint: str, identity: str, status: int, body: bytes, describe) -> None:
        self.statuses[endpoint, identity][status] += 1
        self.sources[source][status // 100 * 100] += 1
        if status >= 500 or status == 0:
            self.failures.append(f"{status} {identity} {endpoint}: {describe()[:400]} -> {body[:300]!r}")
        if status in (201, 202):
            if endpoint.startswith("POST /api/v1/runs"):
                if status == 201:
                    self.created["runs"] += 1
                    self.created["results"] += json.loads(body)["results"]
                    self.created[f"runs by {identity}"] += 1
            elif endpoint == "POST /api/v1/jobs":
                self.created["jobs"] += 1
            elif endpoint == "POST /api/v1/jobs/{id}/run":
                self.created["sessions"] += 1

    def merge(self, other: "Outcome") -> None:
        for key, counter in other.statuses.items():
            self.statuses[key].update(counter)
        for key, counter in other.sources.items():
            self.sources[key].update(counter)
        self.created.update(other.created)
        self.failures += other.failures
        self.mismatches += other.mismatches


def send(method: str, path: str, *, identity: str, query=None, body: bytes | None = None,
         content_type: str | None = None, extra_headers: dict | None = None) -> tuple[int, bytes]:
    import requests

    headers = {**(extra_headers or {}), **_headers(identity)}
    if content_type and body is not None:
        headers["Content-Type"] = content_type
    try:
        response = requests.request(method, WORLD["base_url"] + path, params=query, data=body, headers=headers,
                                    timeout=120)
        return response.status_code, response.content
    except requests.RequestException as error:
        return 0, str(error).encode()


def run_table(task: dict) -> Outcome:
    outcome = Outcome()
    for index, spec in task["cases"]:
        for identity in IDENTITIES:
            key = f"t{index}-{identity}"
            path = _fill(spec["path"], key)
            query = {name: _fill(str(value), key) for name, value in spec["query"].items()}
            body = None if spec["body"] is None else _fill_body(spec["body"], key)
            status, reply = send(spec["method"], path, identity=identity, query=query, body=body,
                                 content_type=spec["content_type"] if body is not None else None)
            endpoint = endpoint_of(spec["method"], path, query)
            outcome.record("table", endpoint, identity, status, reply,
                           lambda: f"[{spec['group']}] {spec['label']}")
            wanted = expected_statuses(identity, spec)
            problem = None
            if status not in wanted:
                problem = f"got {status}, expected {sorted(wanted) if len(wanted) < 8 else 'a ' + spec['expect']}"
            elif (status == 422 and spec["field"] and allowed(identity, spec["target"])
                  and spec["field"].encode() not in reply):
                problem = f"422 does not name the field {spec['field']!r}"
            if problem:
                outcome.mismatches.append(f"[{spec['group']}] {spec['label']} as {identity}: {problem}: "
                                          f"{reply[:240].decode('utf-8', 'replace')}")
    return outcome


def run_generated(task: dict) -> Outcome:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    outcome = Outcome()
    made = strategies()
    counter = [0]
    identity = task["identity"]

    def key() -> str:
        counter[0] += 1
        return f"g{task['id']}-{counter[0]}"

    if task["what"] == "native":
        strategy = made["native"]
    elif task["what"] == "job":
        strategy = made["job"]
    else:
        strategy = made["imports"][task["what"]]

    @settings(max_examples=task["examples"], deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seeded(task["seed"])
    @given(drawn=strategy)
    def one(drawn) -> None:
        current = key()
        if task["what"] == "native":
            method, path, query = "POST", "/api/v1/runs", None
            body, content_type = _fill_body(dumps(drawn), current), "application/json"
        elif task["what"] == "job":
            choice = counter[0] % 3
            method, path = [("POST", "/api/v1/jobs"), ("PATCH", f"/api/v1/jobs/{WORLD['job']}"),
                            ("POST", f"/api/v1/jobs/{WORLD['job']}/run")][choice]
            document = {**job_body(), **drawn} if choice == 0 else drawn
            if choice == 2:
                document = {"revisions": [{"label": "a", "commit": drawn.get("name", "v1")}]}
            body, content_type, query = _fill_body(dumps(document), current), "application/json", None
        else:
            query, body, content_type = drawn
            query = {name: value.replace(RUN_KEY, current) for name, value in query.items()}
            method, path = "POST", "/api/v1/runs/import"
        status, reply = send(method, path, identity=identity, query=query, body=body, content_type=content_type)
        outcome.record("generated", endpoint_of(method, path, query), identity, status, reply,
                       lambda: f"{path} {query} {body[:300]!r}")
        if status in (200, 201, 202) and method != "GET":
            target = "jobs" if task["what"] == "job" else None
            if target and not allowed(identity, target):
                outcome.mismatches.append(f"[generated] {method} {path} as {identity} got {status}")

    one()
    return outcome


def run_schema(task: dict) -> Outcome:
    global _SCHEMA
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    if _SCHEMA is None:
        _SCHEMA = schemathesis.openapi.from_url(f"{WORLD['base_url']}/api/v1/openapi.json")
    operation = next(result.ok() for result in _SCHEMA.get_all_operations()
                     if result.ok().method.upper() == task["method"] and result.ok().path == task["path"])
    mode = GenerationMode.POSITIVE if task["mode"] == "positive" else GenerationMode.NEGATIVE
    identity = task["identity"]
    outcome = Outcome()
    counter = [0]
    session = requests.Session()
    real_ids = {"alert_id": [i for ids in WORLD["alerts"].values() for i in ids], "job_id": [WORLD["job"]],
                "session_id": WORLD["sessions"], "run_id": WORLD["runs"], "metric_id": WORLD["metrics"]}

    @settings(max_examples=task["examples"], deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seeded(task["seed"])
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case) -> None:
        counter[0] += 1
        if counter[0] % 2 == 0:
            for name in list(case.path_parameters or {}):
                if name in real_ids and real_ids[name]:
                    case.path_parameters[name] = real_ids[name][counter[0] // 2 % len(real_ids[name])]
            if task["path"] == "/api/v1/runs/import":
                case.query = {**(case.query or {}), "format": FORMATS[counter[0] // 2 % len(FORMATS)]}
        if identity != "anonymous":
            case.headers = {**{k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"},
                            **_headers(identity)}
        try:
            response = case.call(base_url=WORLD["base_url"], session=session, timeout=120)
            status, reply = response.status_code, response.content
        except Exception as error:  # a broken connection is a failure like a 5xx
            status, reply = 0, repr(error).encode()
        query = case.query if isinstance(case.query, dict) else {}
        outcome.record("schema", endpoint_of(task["method"], task["path"], query), identity, status, reply,
                       lambda: case.as_curl_command())

    try:
        one()
    except Unsatisfiable:
        pass  # an operation with nothing to break (no parameters, no body) in negative mode
    return outcome


def run_task(task: dict) -> tuple[dict, Outcome]:
    began = time.monotonic()
    runner = {"table": run_table, "generated": run_generated, "schema": run_schema}[task["kind"]]
    outcome = runner(task)
    return {"kind": task["kind"], "seconds": time.monotonic() - began}, outcome


# --- the world, the checks ----------------------------------------------------------------------------------


def build_world(base_url: str) -> dict:
    """Users, tokens, memberships, three projects with alerts, a job with sessions (see the module's docstring)."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    import requests
    from results.models import Alert, Metric, Project, Run

    User = get_user_model()
    User.objects.create_user("staff", password="fuzz-staff-password", is_staff=True)
    for name in ("uploader", "maintainer", "viewer", "bob", "carol"):
        User.objects.create_user(name, password=None)

    def token(user: str, *options: str) -> str:
        out = io.StringIO()
        call_command("create_api_token", user, "fuzz", *options, stdout=out)
        return out.getvalue().strip()

    staff_token = token("staff", "--scope", "upload", "--scope", "triage", "--scope", "jobs")
    headers = {"Authorization": f"Bearer {staff_token}"}
    rng = random.Random(28)
    for slug, name in PROJECTS.items():
        commits = [hashlib.sha1(f"{slug}{night}".encode()).hexdigest() for night in range(5)]
        for night in range(5):
            kind = "pr" if night == 4 else "nightly"
            slower = 1.25 if kind == "pr" else 1.0
            document = {
                "project": {"name": name}, "machine": {"name": MACHINES[slug], "cores": 2},
                "revision": {"commit": commits[night], "branch": "feature" if kind == "pr" else "main",
                             **({"pull_request": 1, "base_commit": commits[3]} if kind == "pr" else {})},
                "kind": kind, "started_at": f"2026-02-0{night + 1}T02:00:00Z",
                "results": [{"benchmark": f"seed {index}", "metric": "time", "unit": "s",
                             "samples": [rng.gauss(1.0 + index / 10, 0.002) * slower for _ in range(30)]}
                            for index in range(4)]}
            response = requests.post(f"{base_url}/api/v1/runs", json=document, headers=headers, timeout=60)
            assert response.status_code == 201, response.text[:300]
    # What only the private project has: a machine and a benchmark no other request names.
    secret = {"project": {"name": "Gamma"}, "machine": {"name": "m-secret"}, "kind": "nightly",
              "revision": {"commit": "5ec2e7", "branch": "main"}, "started_at": "2026-02-06T02:00:00Z",
              "results": [{"benchmark": "secret bench", "samples": [1.0, 1.1, 0.9]}]}
    response = requests.post(f"{base_url}/api/v1/runs", json=secret, headers=headers, timeout=60)
    assert response.status_code == 201, response.text[:300]
    for project, user, role in (("alpha", "uploader", "uploader"), ("alpha", "maintainer", "maintainer"),
                                ("alpha", "viewer", "viewer"), ("beta", "bob", "maintainer"),
                                ("alpha", "bob", "uploader"), ("gamma", "carol", "maintainer")):
        call_command("members", project, "set", user, role, stdout=io.StringIO())
    Project.objects.filter(slug="gamma").update(private=True)
    tokens = {"staff": staff_token, "uploader": token("uploader"),
              "maintainer": token("maintainer", "--scope", "upload", "--scope", "triage"),
              "viewer": token("viewer"),
              "project-b": token("bob", "--project", "beta", "--scope", "upload", "--scope", "triage")}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        alerts = {slug: list(Alert.objects.filter(group__run__project__slug=slug).order_by("pk")
                             .values_list("pk", flat=True)) for slug in PROJECTS}
        if all(alerts.values()):
            break
        time.sleep(1)
    else:
        raise AssertionError(f"the analysis worker opened no alert in some project: {alerts}")
    project_ids = dict(Project.objects.values_list("slug", "pk"))
    from results.models import Machine

    machine_ids = {slug: Machine.objects.get(name=name).pk for slug, name in MACHINES.items()}
    response = requests.post(f"{base_url}/api/v1/jobs", headers=headers, timeout=60, json={
        "project": project_ids["alpha"], "machine": machine_ids["alpha"], "name": "fuzz job", "benchmark": "sort",
        "workload_kind": "builtin", "builtin": "sort", "work_max": 100})
    assert response.status_code == 201, response.text[:500]
    job = response.json()["id"]
    sessions = []
    for _ in range(3):
        response = requests.post(f"{base_url}/api/v1/jobs/{job}/run", json={}, headers=headers, timeout=60)
        assert response.status_code in (201, 202), response.text[:500]
        sessions.append(response.json()["id"])
    return {"base_url": base_url, "tokens": tokens, "alerts": alerts, "job": job, "sessions": sessions,
            "project_ids": project_ids, "machine_ids": machine_ids,
            "runs": list(Run.objects.order_by("pk").values_list("pk", flat=True)),
            "metrics": list(Metric.objects.order_by("pk").values_list("pk", flat=True))}


COUNTED = ("Project", "Machine", "Revision", "Benchmark", "Metric", "Run", "Result", "FailedResult", "Membership",
           "ApiToken", "Alert", "AlertEvent", "Job", "Session")


def counts() -> dict[str, int]:
    from django.apps import apps

    models = {model.__name__: model for model in apps.get_models()}
    return {name: models[name].objects.count() for name in COUNTED}


def orphans() -> dict[str, int]:
    """Rows that no stored run reaches: what a refused request could have left behind."""
    from django.db.models import Q

    from results.models import Benchmark, Machine, Metric, Project, Revision

    return {
        "Project": Project.objects.filter(runs__isnull=True).count(),
        "Machine": Machine.objects.filter(runs__isnull=True).count(),
        "Revision": Revision.objects.filter(runs__isnull=True).count(),
        "Benchmark": Benchmark.objects.exclude(Q(metrics__results__isnull=False) | Q(metrics__failures__isnull=False))
        .distinct().count(),
        "Metric": Metric.objects.filter(results__isnull=True, failures__isnull=True).count(),
    }


def authorship(marks: dict) -> list[str]:
    """Every row made during the fuzzing by someone allowed to make it (the tables above, not results.access)."""
    from django.db.models import Count

    from results.models import AlertEvent, Machine, Membership, Project, Run
    from runner.models import Job, Session

    usernames = {"staff": "staff", "uploader": "uploader", "maintainer": "maintainer", "viewer": "viewer",
                 "bob": "project-b"}
    problems = []
    for slug, user, token_project, count in (
            Run.objects.filter(pk__gt=marks["Run"]).values_list("project__slug", "created_by__username",
                                                                 "token__project__slug")
            .annotate(n=Count("id")).order_by()):
        identity = usernames.get(user, user)
        target = slug if slug in WRITERS else "new"
        if identity not in WRITERS[target] or (token_project not in (None, slug)):
            problems.append(f"{count} runs in {slug!r} by {user} (token for {token_project})")
    for model in (Project, Machine):
        for name, user in model.objects.filter(pk__gt=marks[model.__name__]).values_list("name", "created_by__username"):
            if user != "staff":
                problems.append(f"{model.__name__} {name!r} created by {user}")
    for user, slug in AlertEvent.objects.filter(pk__gt=marks["AlertEvent"]).values_list(
            "user__username", "alert__group__run__project__slug").distinct():
        if usernames.get(user, user) not in TRIAGERS.get(slug, {"staff"}):
            problems.append(f"alert of {slug!r} triaged by {user}")
    for user in Job.objects.filter(pk__gt=marks["Job"]).values_list("created_by__username", flat=True).distinct():
        if user != "staff":
            problems.append(f"job created by {user}")
    for user in Session.objects.filter(pk__gt=marks["Session"], trigger="manual").values_list(
            "requested_by__username", flat=True).distinct():
        if user != "staff":
            problems.append(f"session requested by {user}")
    for user, slug in Membership.objects.filter(pk__gt=marks["Membership"]).values_list("user__username",
                                                                                      "project__slug"):
        if user != "staff":
            problems.append(f"membership of {user} in {slug!r} appeared")
    return problems


class _Rollback(Exception):
    pass


def why_not_compared(limit: int = 4) -> list[str]:
    """For runs the analysis worker left uncompared: the comparison made again here, in a transaction rolled back
    (nothing changes), with what it raised, the run's results and their series' earlier nights."""
    import traceback

    from django.db import transaction

    from results import comparisons
    from results.models import Result, Run

    lines = []
    for run in Run.objects.filter(compared_at__isnull=True).select_related("project", "machine", "revision")[:limit]:
        try:
            with transaction.atomic():
                comparisons.compare_run(run_id=run.pk)
                raise _Rollback
        except _Rollback:
            lines.append(f"run {run.pk}: compares now (it was only late)")
            continue
        except Exception as error:  # what the worker met
            frames = traceback.extract_tb(error.__traceback__)[-3:]
            where = " ← ".join(f"{Path(frame.filename).name}:{frame.lineno} {frame.name}" for frame in reversed(frames))
            lines.append(f"run {run.pk} ({run.kind}, {run.project.slug}, {run.machine.name}, "
                         f"{run.revision.commit if run.revision else '-'}): {type(error).__name__}: {error} at {where}")
        for result in Result.objects.filter(run=run).select_related("metric__benchmark"):
            earlier = list(Result.objects.filter(metric=result.metric, run__machine=run.machine,
                                                 run__started_at__lt=run.started_at)
                           .order_by("-run__started_at").values_list("run__kind", "mean", "variance", "n",
                                                                     "subsession_size")[:6])
            lines.append(f"    {result.metric.benchmark.name!r}/{result.metric.name}: mean {result.mean!r} variance "
                         f"{result.variance!r} n {result.n} q {result.subsession_size} ci "
                         f"[{result.ci_low!r}, {result.ci_high!r}]; earlier (kind, mean, variance, n, q): {earlier}")
    return lines


def server_exceptions(log: str) -> collections.Counter:
    """The server's tracebacks by where in the project they were raised and what they raised."""
    found: collections.Counter = collections.Counter()
    for block in log.split("Traceback (most recent call last):")[1:]:
        lines = [line for line in block.splitlines() if line.strip()]
        frames = [line.strip() for line in lines if line.strip().startswith('File "') and str(ROOT) in line
                  and "/.venv/" not in line]
        raised = next((line for line in lines if re.match(r"^[A-Za-z_.]+(Error|Exception|Overflow\w*)\b", line)), "?")
        where = re.sub(r'File "[^"]*/([^/"]+)", line (\d+), in (\S+)', r"\1:\2 \3", frames[-1]) if frames else "?"
        found[f"{raised[:160]} at {where}"] += 1
    return found


def max_ids() -> dict[str, int]:
    from django.apps import apps
    from django.db.models import Max

    models = {model.__name__: model for model in apps.get_models()}
    return {name: models[name].objects.aggregate(top=Max("pk"))["top"] or 0
            for name in ("Run", "Project", "Machine", "AlertEvent", "Job", "Session", "Membership")}


PRIVATE_MARKS = re.compile(rb'm-secret|secret bench|project=gamma\b|"project": ?"gamma"|>\s*Gamma\s*<')
SECRET_MARKS = re.compile(rb"m-secret|secret bench")


def check_pages(base_url: str, marks: dict) -> tuple[list[tuple[str, str, int, int, float, bool]], list[str]]:
    """Every page as anonymous and as staff: (who, path, status, bytes, seconds, status as expected); and
    where something of the private project showed to an anonymous reader."""
    import requests

    from results.models import Metric, Project, Run

    newest = Run.objects.filter(pk__gt=marks["Run"])
    chosen = list(newest.order_by("-pk").values_list("pk", "project__private")[:15])
    chosen += list(newest.order_by("pk").values_list("pk", "project__private")[:5])
    chosen += list(Run.objects.filter(project__slug="gamma").order_by("-pk").values_list("pk", "project__private")[:2])
    metrics = list(Metric.objects.filter(results__run_id__in=[pk for pk, _ in chosen]).order_by("-pk")
                   .values_list("pk", "benchmark__project__private").distinct()[:15])
    projects = list(Project.objects.filter(pk__gt=marks["Project"]).order_by("-pk").values_list("slug", flat=True)[:5])
    paths = {path: False for path in (
        "/", "/?format=json", "/?format=csv", "/runs/", "/runs/?format=json", "/alerts/", "/machines/",
        "/machines/?page=2", "/jobs/", "/?project=alpha", "/runs/?project=alpha", "/?night=2026-03-01", "/?all=on",
        "/compare/", "/api/v1/runs?limit=1000", "/api/v1/alerts?limit=100", "/api/v1/machines?limit=1000",
        "/api/v1/projects?limit=1000", "/api/v1/metrics?limit=1000", "/?project=gamma", "/runs/?project=gamma")}
    paths.update({f"/runs/{run}/": private for run, private in chosen})
    paths.update({f"/history/{metric}/": private for metric, private in metrics})
    paths.update({f"/?project={slug}": False for slug in projects})
    staff = requests.Session()
    login = staff.get(f"{base_url}/accounts/login/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    response = staff.post(f"{base_url}/accounts/login/", data={"csrfmiddlewaretoken": token, "username": "staff",
                                                                "password": "fuzz-staff-password"},
                          headers={"Referer": f"{base_url}/accounts/login/"}, timeout=60, allow_redirects=False)
    assert response.status_code == 302, response.text[:500]
    rows, leaks = [], []
    for who, client in (("anonymous", requests.Session()), ("staff", staff)):
        for path, private in paths.items():
            expected = 404 if private and who == "anonymous" else 200
            began = time.monotonic()
            try:
                response = client.get(base_url + path, timeout=120)
                status, size = response.status_code, len(response.content)
                # A page asked for the private project echoes its slug in links: only its secrets count there.
                marks_ = SECRET_MARKS if "gamma" in path else PRIVATE_MARKS
                found = marks_.search(response.content) if who == "anonymous" and status == 200 else None
                if found:
                    leaks.append(f"{path} shows {found.group().decode()!r} of the private project to anonymous")
            except requests.RequestException:
                status, size = 0, 0
            rows.append((who, path, status, size, time.monotonic() - began, status == expected))
    return rows, leaks


# --- running it ---------------------------------------------------------------------------------------------


WRITE_OPERATIONS = [("POST", "/api/v1/runs"), ("POST", "/api/v1/runs/import"), ("POST", "/api/v1/alerts/{alert_id}/status"),
                    ("POST", "/api/v1/jobs"), ("PATCH", "/api/v1/jobs/{job_id}"), ("POST", "/api/v1/jobs/{job_id}/run"),
                    ("POST", "/api/v1/sessions/{session_id}/cancel")]


def plan(cases: int, seed: int, table: list[dict], workers: int) -> list[dict]:
    """The tasks: `cases` generated requests (about 70% from the schema's write operations, 8% its reads, 22%
    from the document, file and job generators), every identity alike; the table, in chunks."""
    import schemathesis  # noqa: F401  (fail early when it is missing)

    tasks: list[dict] = []
    weight = {"/api/v1/runs": 2, "/api/v1/runs/import": 3}  # the import's six formats share its cases
    per_write = max(2, round(cases * 0.70 / (sum(weight.get(path, 1) for _, path in WRITE_OPERATIONS)
                                             * 2 * len(IDENTITIES))))
    for method, path in WRITE_OPERATIONS:
        for mode in ("positive", "negative"):
            for identity in IDENTITIES:
                examples = per_write * weight.get(path, 1)
                tasks.append({"kind": "schema", "method": method, "path": path, "mode": mode, "identity": identity,
                              "examples": examples, "seed": seed * 100 + IDENTITIES.index(identity)})
    reads = [("GET", "/api/v1/runs"), ("GET", "/api/v1/runs/{run_id}"), ("GET", "/api/v1/projects"),
             ("GET", "/api/v1/benchmarks"), ("GET", "/api/v1/metrics"), ("GET", "/api/v1/machines"),
             ("GET", "/api/v1/metrics/{metric_id}/series"), ("GET", "/api/v1/runs/{run_id}/comparisons"),
             ("GET", "/api/v1/alerts"), ("GET", "/api/v1/jobs"), ("GET", "/api/v1/sessions/{session_id}"),
             ("GET", "/api/v1/runs/{run_id}/pr-summary"), ("GET", "/api/v1/schema/run.json")]
    per_read = max(2, round(cases * 0.08 / (len(reads) * 2 * 2)))
    for method, path in reads:
        for mode in ("positive", "negative"):
            for identity in ("anonymous", "uploader"):
                tasks.append({"kind": "schema", "method": method, "path": path, "mode": mode, "identity": identity,
                              "examples": per_read, "seed": seed * 100 + IDENTITIES.index(identity)})
    generated = ["native", *FORMATS, "job"]
    per_generated = max(2, round(cases * 0.22 / ((len(generated) + 1) * len(IDENTITIES))))
    for index, what in enumerate(generated):
        for identity in IDENTITIES:
            tasks.append({"kind": "generated", "what": what, "identity": identity,
                          "seed": seed * 100 + 10 * index + IDENTITIES.index(identity),
                          "examples": per_generated * (2 if what == "native" else 1), "id": len(tasks)})
    indexed = list(enumerate(table))
    random.Random(seed).shuffle(indexed)
    chunk = max(1, len(indexed) // (workers * 8))
    for start in range(0, len(indexed), chunk):
        tasks.append({"kind": "table", "cases": indexed[start:start + chunk]})
    # Longest first, so that the pool ends together.
    tasks.sort(key=lambda task: -(task.get("examples", 0) * (3 if task.get("path") == "/api/v1/runs" else 1)
                                  + 6 * len(task.get("cases", []))))
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=11_000,
                        help="generated requests (schema and generators); the table adds about 11,200")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=3, help="client processes")
    parser.add_argument("--keep-logs", type=Path, help="copy the server's logs (console, access, worker) here")
    args = parser.parse_args()
    port = free_port()
    table = hostile_table()
    groups = collections.Counter(spec["group"] for spec in table)
    print(f"table: {len(table)} cases × {len(IDENTITIES)} identities = {len(table) * len(IDENTITIES)} requests; "
          + ", ".join(f"{group} {count}" for group, count in groups.items()), flush=True)
    with tempfile.TemporaryDirectory(prefix="pilotweb-fuzz-") as directory, real_redis() as redis, ExitStack() as stack:
        environment = stack.enter_context(production(Path(directory), redis.url, port))
        os.environ.update({key: environment[key] for key in ("DATABASE_URL", "DJANGO_SECRET_KEY", "ALLOWED_HOSTS",
                                                             "DEBUG", "REDIS_URL", "PILOTWEB_VAR_DIR")})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
        import django

        django.setup()
        from django.conf import settings
        from django.db import connections

        base_url = f"http://127.0.0.1:{port}"
        began = time.monotonic()
        world = build_world(base_url)
        print(f"world built in {time.monotonic() - began:.0f} s: alerts {world['alerts']}, job {world['job']}, "
              f"sessions {world['sessions']}; PILOTWEB_OPEN_CREATION={settings.PILOTWEB_OPEN_CREATION}", flush=True)
        before, marks = counts(), max_ids()
        tasks = plan(args.cases, args.seed, table, args.workers)
        connections.close_all()
        outcome = Outcome()
        load_before = os.getloadavg()
        began = time.monotonic()
        done = 0
        with multiprocessing.get_context("fork").Pool(args.workers, initializer=_init, initargs=(world,)) as pool:
            for info, part in pool.imap_unordered(run_task, tasks):
                outcome.merge(part)
                done += 1
                if done % 40 == 0:
                    sent = sum(sum(counter.values()) for counter in outcome.statuses.values())
                    print(f"  {done}/{len(tasks)} tasks, {sent} requests, {time.monotonic() - began:.0f} s, "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
        elapsed = time.monotonic() - began
        load_after = os.getloadavg()
        # The analysis worker's comparisons of the accepted runs, then the rows and the pages.
        # (until none is left, or none was compared for 45 s: a run the worker fails on stays uncompared)
        deadline, waiting, changed = time.monotonic() + 300, None, time.monotonic()
        from results.models import Run

        while time.monotonic() < deadline and time.monotonic() - changed < 45:
            left_now = Run.objects.filter(compared_at__isnull=True).count()
            if not left_now:
                break
            if left_now != waiting:
                waiting, changed = left_now, time.monotonic()
            time.sleep(2)
        uncompared = Run.objects.filter(compared_at__isnull=True).count()
        diagnosis = why_not_compared() if uncompared else []
        after, left, authors = counts(), orphans(), authorship(marks)
        from runner.models import Session

        manual_sessions = Session.objects.filter(pk__gt=marks["Session"], trigger="manual").count()
        pages, leaks = check_pages(base_url, marks)
        # gunicorn's error log, and what the server's processes printed (Django logs a 500 to the console)
        log = "".join(Path(directory, name).read_text(errors="replace") for name in ("web.log", "serve.out")
                      if Path(directory, name).exists())
        worker_log = Path(directory, "worker-analysis.log")
        worker_errors = [line for line in worker_log.read_text(errors="replace").splitlines()
                         if "ERROR/" in line] if worker_log.exists() else []
        tracebacks = server_exceptions(log)
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            for name in ("serve.out", "web.log", "worker-analysis.log", "access.log", "beat.log"):
                if Path(directory, name).exists():
                    shutil.copy(Path(directory, name), args.keep_logs / name)

    report(args, outcome, elapsed, load_before, load_after, before, after, left, authors, pages, leaks, uncompared,
           tracebacks, worker_errors, manual_sessions, diagnosis)


def report(args, outcome, elapsed, load_before, load_after, before, after, left, authors, pages, leaks, uncompared,
           tracebacks, worker_errors, manual_sessions, diagnosis) -> None:
    total = sum(sum(counter.values()) for counter in outcome.statuses.values())
    server_errors = sum(count for counter in outcome.statuses.values() for code, count in counter.items()
                        if code >= 500 or code == 0)
    print(f"\n{total} requests in {elapsed:.0f} s ({total / elapsed:.0f}/s) against ./pilot serve on PostgreSQL, "
          f"{args.workers} client processes, seed {args.seed}; {os.cpu_count()} cores shared by clients and server; "
          f"load average {load_before[0]:.2f}→{load_after[0]:.2f} (1 min), {load_after[1]:.2f} (5 min)")
    print("by source: " + "; ".join(f"{source} {sum(counter.values())} ("
                                    + ", ".join(f"{code // 100}xx×{count}" for code, count in sorted(counter.items()))
                                    + ")" for source, counter in sorted(outcome.sources.items())))
    print(f"\n{'endpoint':<48} {'identity':<11} {'requests':>8}  statuses")
    by_endpoint: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (endpoint, identity), counter in sorted(outcome.statuses.items()):
        by_endpoint[endpoint].update(counter)
    order = {identity: index for index, identity in enumerate(IDENTITIES)}
    for endpoint in sorted(by_endpoint):
        for identity in sorted((i for e, i in outcome.statuses if e == endpoint), key=order.get):
            counter = outcome.statuses[endpoint, identity]
            codes = " ".join(f"{code}×{count}" for code, count in sorted(counter.items()))
            print(f"{endpoint:<48} {identity:<11} {sum(counter.values()):>8}  {codes}")
        counter = by_endpoint[endpoint]
        print(f"{'':<48} {'(all)':<11} {sum(counter.values()):>8}  "
              + " ".join(f"{code}×{count}" for code, count in sorted(counter.items())))
    print(f"\n5xx or broken connections: {server_errors}  (target 0); tracebacks in the server's logs: "
          f"{sum(tracebacks.values())}; errors in the analysis worker's log: {len(worker_errors)}")
    for line, count in tracebacks.most_common(10):
        print(f"  server: {count}× {line}")
    for failure in outcome.failures[:20]:
        print("  " + failure)
    kinds = collections.Counter(re.sub(r"^.*?(Task \S+?)\[[^]]*\] raised unexpected: ", r"\1 raised ", line)[:200]
                                for line in worker_errors)
    for line, count in kinds.most_common(10):
        print(f"  worker: {count}× {line}")
    print(f"table cases with another status than stated (or a 422 not naming the field): {len(outcome.mismatches)}"
          f" requests")
    grouped: dict[str, list[str]] = collections.defaultdict(list)
    for mismatch in outcome.mismatches:
        label, _, rest = mismatch.partition(" as ")
        identity, _, detail = rest.partition(": ")
        grouped[label].append(f"{identity}: {detail[:160]}")
    for label in sorted(grouped):
        print(f"  {label}")
        for line in sorted(grouped[label])[:6]:
            print(f"      {line}")
    added = {name: after[name] - before[name] for name in after}
    created = outcome.created
    print("\nrows: " + ", ".join(f"{name} +{count}" for name, count in added.items()))
    checks = [
        ("runs added = runs created by 201 replies", added["Run"], created["runs"]),
        ("results + failed results added = results those replies counted", added["Result"] + added["FailedResult"],
         created["results"]),
        ("jobs added = 201 replies to POST /jobs", added["Job"], created["jobs"]),
        ("sessions started by hand added = 201/202 replies to run now", manual_sessions, created["sessions"]),
    ]
    for label, stored, replied in checks:
        print(f"  {label}: {stored} = {replied}: {stored == replied}")
    print("  runs created by identity (201 replies): " + ", ".join(
        f"{key[len('runs by '):]} {count}" for key, count in sorted(created.items()) if key.startswith("runs by ")))
    print("  rows no stored run reaches (a refused request's leftovers, target 0): "
          + ", ".join(f"{name} {count}" for name, count in left.items()))
    print(f"  rows made by an identity not allowed to make them (target 0): {len(authors)}")
    for problem in authors[:20]:
        print("    " + problem)
    print(f"  runs the analysis worker had not compared after the fuzzing (it stopped comparing for 45 s): {uncompared}")
    for line in diagnosis:
        print("    " + line[:700])
    bad_pages = [row for row in pages if not row[5]]
    print(f"\npages afterwards ({len(pages)}: anonymous and staff; 200, or 404 for anonymous on the private "
          f"project's run and history pages), other status: {len(bad_pages)}; private project shown to anonymous: "
          f"{len(leaks)}")
    for who, path, status, size, seconds, ok in pages:
        if path in ("/", "/?format=json", "/runs/", "/alerts/", "/machines/") or not ok:
            print(f"  {who:<9} {path:<30} {status}  {size:>9,} bytes  {seconds:.2f} s{'' if ok else '  UNEXPECTED'}")
    runs = [row for row in pages if re.fullmatch(r"/runs/\d+/", row[1])]
    histories = [row for row in pages if row[1].startswith("/history/")]
    for label, rows in (("run pages", runs), ("history pages", histories)):
        if rows:
            print(f"  {label}: {len(rows)}, statuses {dict(collections.Counter(row[2] for row in rows))}, "
                  f"slowest {max(row[4] for row in rows):.2f} s")
    for leak in leaks[:10]:
        print("  " + leak)
    print(f"\nmachine load average now: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    ok = (server_errors == 0 and all(stored == replied for _, stored, replied in checks) and not any(left.values())
          and not authors and not bad_pages and not leaks and not uncompared and not worker_errors)
    print("RESULT: " + ("all properties hold" if ok else "SOME PROPERTY FAILED") + f"; {total} requests")


if __name__ == "__main__":
    main()
