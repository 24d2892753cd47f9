"""The CI client (client/pilot_upload.py) against a live server: run as a module and as a copied file, with a
real token, through a stdlib proxy that loses replies or answers 503, and with the analysis played in a thread."""

import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import connections

from results import comparisons, services
from results.models import Result, Run
from tests.factories import NIGHT_ZERO, compared_run, posted_run
from tests.processes import ROOT, RecordingServer, Request, free_port

CLIENT = ROOT / "client" / "pilot_upload.py"
DATA = ROOT / "tests" / "data"
LIVE = pytest.mark.django_db(transaction=True)
"""A live server answers from its own threads: the data must be committed."""
# A guard against a hung client, never an assertion on how long it took.
HANG_GUARD_SECONDS = 300


class AnalysisWorker:
    """The analysis worker's part, played in this process. Once started, each run stored is compared a moment
    after its upload is answered, in a thread of its own as a worker would, so the client has to wait for it;
    until then (and in tests that never start it) nothing is compared."""

    def __init__(self) -> None:
        self.started = False
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self.started = True

    def enqueue(self, run_id: int) -> None:
        if self.started:
            thread = threading.Thread(target=self._compare, args=(run_id,))
            thread.start()
            self.threads.append(thread)

    @staticmethod
    def _compare(run_id: int) -> None:
        time.sleep(0.5)
        try:
            comparisons.compare_run(run_id=run_id)
        finally:
            connections.close_all()


@pytest.fixture
def analysis(monkeypatch, transactional_db):
    worker = AnalysisWorker()
    monkeypatch.setattr(services, "_enqueue_comparison", worker.enqueue)
    yield worker
    for thread in worker.threads:
        thread.join()


class FlakyProxy(RecordingServer):
    """A stdlib HTTP proxy in front of the live server that records every request and fails the first ones as
    ``failures`` says, then forwards: ``"503"`` is answered 503 with ``Retry-After: 0``; ``"lost reply"`` is
    forwarded (the server acts on it) and the connection closed without an answer, as a network may lose one."""

    def __init__(self, target: str, failures: list[str]) -> None:
        self.target, self.failures = target.rstrip("/"), list(failures)
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        super().__init__(self.answer)

    def answer(self, request: Request) -> tuple[int, dict, bytes] | None:
        failure = self.failures.pop(0) if self.failures else None
        if failure == "503":
            return 503, {"Content-Type": "application/json", "Retry-After": "0"}, json.dumps(
                {"detail": "Service unavailable (the test proxy).", "errors": []}).encode()
        status, headers, reply = self.forward(request)
        if failure == "lost reply":
            return None
        return status, {name: headers[name] for name in ("Content-Type", "Retry-After", "WWW-Authenticate")
                        if name in headers}, reply

    def forward(self, request: Request) -> tuple[int, dict, bytes]:
        method, path, received, body = request
        received = {name.lower(): value for name, value in received.items()}
        headers = {name: received[name.lower()] for name in ("Authorization", "Content-Type", "Accept")
                   if received.get(name.lower())}
        forwarded = urllib.request.Request(self.target + path, data=body if method == "POST" else None,
                                           method=method, headers=headers)
        try:
            with self.opener.open(forwarded, timeout=60) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, dict(error.headers), error.read()


class FakeDashboard(RecordingServer):
    """A stdlib HTTP server on loopback that records every request and answers each path (the query left out)
    with the ``(status, headers, JSON body)`` that ``replies`` gives it; 404 otherwise."""

    def __init__(self, replies: dict[str, tuple[int, dict, dict]] | None = None) -> None:
        self.replies = replies or {}
        super().__init__(self.answer)

    def answer(self, request: Request) -> tuple[int, dict, bytes]:
        status, headers, reply = self.replies.get(request[1].split("?")[0], (404, {}, {"detail": "?"}))
        return status, {"Content-Type": "application/json", **headers}, json.dumps(reply).encode()


def client(*args: str, token: str | None = None, script: Path | None = None, cwd: Path = ROOT,
           environment: dict | None = None) -> subprocess.CompletedProcess:
    """Run the client as ``python -m client.pilot_upload`` from the checkout, or a copy of its file (``script``)
    as a script without site-packages (``-I -S``: only the standard library can be imported)."""
    command = [sys.executable, "-I", "-S", str(script)] if script else [sys.executable, "-m", "client.pilot_upload"]
    env = {name: value for name, value in os.environ.items()
           if name != "PILOTWEB_TOKEN" and "proxy" not in name.lower()}
    env.update(environment or {})
    return subprocess.run([*command, "upload", *args, *(["--token", token] if token else [])], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=HANG_GUARD_SECONDS)


def table(stdout: str) -> list[list[str]]:
    """The verdict table's rows (the header first) as cells, split where the columns are aligned."""
    lines = stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("benchmark "))
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append([cell.strip() for cell in line.split("  ") if cell.strip()])
    return rows


def native_file(path: Path, means: dict[str, float], *, night: int, n: int = 20, seed: int = 7) -> Path:
    """A native run document with samples around ``means`` (1% noise), started on ``night``, naming no project,
    machine or revision (the options state them)."""
    rng = np.random.default_rng(seed)
    path.write_text(json.dumps({
        "started_at": (NIGHT_ZERO + timedelta(days=night)).isoformat(), "source": "ci",
        "results": [{"benchmark": name, "metric": "time", "unit": "s",
                     "samples": rng.normal(mean, 0.01 * mean, n).tolist()} for name, mean in means.items()],
    }))
    return path


def history(nights: range, **fields) -> None:
    for night in nights:
        posted_run(night, {"parse": 1.0, "render": 2.0}, **fields)


def run_options(url: str, path: Path, *, night: int, file_format: str = "native") -> list[str]:
    return [str(path), "--url", url, "--format", file_format, "--project", "Demo", "--machine", "bench-1",
            "--commit", f"{night:040x}", "--branch", "main"]


@LIVE
def test_a_nightly_upload_waits_for_its_comparison_and_prints_regressions_first(live_server, uploader_token,
                                                                               analysis, tmp_path):
    """The table, and posted again with --markdown (the same run), a comment built from the same rows."""
    history(range(5))
    analysis.start()
    path = native_file(tmp_path / "results.json", {"render": 2.0, "parse": 1.2}, night=10)

    done = client(*run_options(live_server.url, path, night=10), "--kind", "nightly", "--fail-on-regression",
                  environment={"PILOTWEB_TOKEN": uploader_token})

    assert done.returncode == 1, done.stderr
    run = Run.objects.get(kind="nightly", revision__commit=f"{10:040x}")
    assert f"run #{run.pk} stored" in done.stderr and "waiting up to 120 s" in done.stderr
    assert "1 regression: failing (--fail-on-regression)" in done.stderr
    assert done.stdout.startswith(f"run #{run.pk} (nightly, {'0' * 12} on bench-1), each series against its recent "
                                  "nights on the default branch:")
    header, *rows = table(done.stdout)
    assert header == ["benchmark", "metric", "change [95% CI]", "p", "q", "verdict"]
    assert [row[:2] for row in rows] == [["parse", "time"], ["render", "time"]]
    assert re.fullmatch(r"\+1\d\.\d% \[\+1\d\.\d%, \+[12]\d\.\d%\]", rows[0][2])
    assert rows[0][3:] == ["<0.001", "<0.001", "regression"]
    assert rows[1][-1] == "no change", done.stdout
    assert "q: Benjamini–Hochberg across the run's series, which decides significance" in done.stdout
    comment = client(*run_options(live_server.url, path, night=10), "--kind", "nightly", "--markdown",
                     environment={"PILOTWEB_TOKEN": uploader_token})
    assert comment.returncode == 0, comment.stderr
    assert comment.stdout.startswith("### Performance: `000000000000` on `bench-1` (nightly)\n\n**1 regression**, "
                                     "0 improvements, 1 no change (2 series, each against its recent nights")
    assert "| Benchmark | Change [95% CI] | p | q | Verdict |" in comment.stdout
    assert comment.stdout.index("| `parse (time)` |") < comment.stdout.index("| `render (time)` |")
    assert f"[The run on the dashboard]({live_server.url}/runs/{run.pk}/)" in comment.stdout


@LIVE
def test_the_copied_file_uploads_a_tool_file_once(live_server, token, analysis, tmp_path):
    """Run as one file copied out of the project (no site-packages): the pyperf file is stored and compared,
    and posting it again answers with the same run."""
    script = Path(shutil.copy(CLIENT, tmp_path / "pilot_upload.py"))
    shutil.copy(DATA / "pyperf_suite.json", tmp_path / "pyperf.json")
    analysis.start()
    options = run_options(live_server.url, Path("pyperf.json"), night=3, file_format="pyperf")

    first = client(*options, "--kind", "nightly", token=token, script=script, cwd=tmp_path)
    again = client(*options, "--kind", "nightly", token=token, script=script, cwd=tmp_path)

    assert first.returncode == 0, first.stderr
    run = Run.objects.get()
    assert f"run #{run.pk} stored (" not in first.stderr and f"run #{run.pk} stored: " in first.stderr
    assert [row[0] for row in table(first.stdout)[1:]] == ["sorted_list", "sum_range"]
    assert {row[-1] for row in table(first.stdout)[1:]} == {"insufficient history"}
    assert again.returncode == 0, again.stderr
    assert f"run #{run.pk} was already stored (the same file for the same run)" in again.stderr
    assert table(again.stdout) == table(first.stdout)
    assert Run.objects.count() == 1


@LIVE
def test_a_pull_request_prints_the_dashboards_comment_with_markdown(live_server, uploader_token, analysis, tmp_path):
    for night in range(4):
        compared_run(night, {"parse": 1.0, "render": 2.0})
    compared_run(5, {"parse": 1.0, "render": 2.0}, commit="b" * 40)
    analysis.start()
    path = native_file(tmp_path / "head.json", {"parse": 1.2, "render": 2.0}, night=6)
    options = [str(path), "--url", live_server.url, "--format", "native", "--project", "Demo", "--machine", "bench-1",
               "--commit", "c" * 40, "--branch", "feature", "--kind", "pr", "--pull-request", "7",
               "--base-commit", "b" * 40]

    comment = client(*options, "--markdown", "--fail-on-regression", token=uploader_token)
    text = client(*options, token=uploader_token)

    assert comment.returncode == 1, comment.stderr
    run = Run.objects.get(kind="pr")
    assert comment.stdout.startswith("### Performance: `cccccccccccc` against base `bbbbbbbbbbbb`")
    assert "**1 regression**" in comment.stdout and "| `parse (time)` |" in comment.stdout
    assert f"[Full review]({live_server.url}/runs/{run.pk}/pr/)" in comment.stdout
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"run #{run.pk} (pr, cccccccccccc on bench-1), each series against the base "
                                  "commit bbbbbbbbbbbb:")
    assert [row[0] for row in table(text.stdout)[1:]] == ["parse", "render"]
    assert table(text.stdout)[1][-1] == "regression"


@LIVE
def test_a_run_not_compared_in_time_exits_3_and_is_kept(live_server, token, analysis, tmp_path):
    path = native_file(tmp_path / "results.json", {"parse": 1.0}, night=1)

    done = client(*run_options(live_server.url, path, night=1), "--wait", "1", token=token)

    assert done.returncode == 3, done.stderr
    run = Run.objects.get()
    assert f"timed out after 1 s waiting for run #{run.pk}'s comparison" in done.stderr
    assert done.stdout == ""


@LIVE
def test_a_lost_reply_and_a_503_are_retried_without_a_second_run(live_server, token, analysis, tmp_path):
    """A large file goes gzip-compressed; its POST is forwarded but the reply lost, then answered 503: the third
    attempt finds the run the first one stored."""
    path = native_file(tmp_path / "large.json", {f"bench{i}": 1.0 for i in range(4)}, night=1, n=2000)
    content = path.read_bytes()

    with FlakyProxy(live_server.url, ["lost reply", "503"]) as proxy:
        done = client(*run_options(proxy.url, path, night=1), "--wait", "0", token=token)

    assert done.returncode == 0, done.stderr
    run = Run.objects.get()
    assert Result.objects.filter(run=run).count() == 4
    assert "POST /api/v1/runs/import: Remote end closed connection without response; retrying in" in done.stderr
    assert ("POST /api/v1/runs/import: HTTP 503: Service unavailable (the test proxy); retrying in 0.0 s "
            "(attempt 3 of 5)") in done.stderr
    assert f"run #{run.pk} was already stored" in done.stderr
    assert [method for method, *_ in proxy.requests] == ["POST"] * 3
    for _, _, headers, body in proxy.requests:
        assert headers["Content-Type"] == "application/octet-stream" and len(body) < len(content)
        assert gzip.decompress(body) == content


@LIVE
@pytest.mark.parametrize(("file_format", "good_token", "message"), [
    ("pyperf", False, "POST /api/v1/runs/import refused, HTTP 401: Invalid token: no active API token matches the "
                      "one sent"),
    ("hyperfine", True, "POST /api/v1/runs/import refused, HTTP 400: this looks like a pyperf file: post it with "
                        "format=pyperf (read as hyperfine: "),
])
def test_a_refusal_exits_2_with_the_servers_message_and_is_not_retried(live_server, token, analysis, file_format,
                                                                       good_token, message):
    options = run_options("", DATA / "pyperf_suite.json", night=1, file_format=file_format)

    with FlakyProxy(live_server.url, []) as proxy:
        options[2] = proxy.url
        done = client(*options, token=token if good_token else "pw_not-a-token")

    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"pilot_upload: error: {message}")
    assert len(proxy.requests) == 1
    assert not Run.objects.exists()


IMPORT_PATH, RUN_PATH = "/api/v1/runs/import", "/api/v1/runs/1"
STORED = (201, {}, {"id": 1, "created": True, "page_url": "http://127.0.0.1/runs/1/"})
NOTHING_TO_COMPARE = (200, {}, {"id": 1, "kind": "imported", "failures": [], "results": []})


@pytest.mark.parametrize(("redirected", "status"), [
    (IMPORT_PATH, 302), (IMPORT_PATH, 307), (RUN_PATH, 302), (RUN_PATH, 308),
])
def test_a_redirect_to_another_origin_is_refused_and_never_gets_the_token(tmp_path, redirected, status):
    """The import's POST or the poll's GET redirected to another port of loopback (another origin): that
    server receives nothing, so never the token, and the client says where it was sent and what to do."""
    path = native_file(tmp_path / "results.json", {"parse": 1.0}, night=1)

    with FakeDashboard() as elsewhere, FakeDashboard({IMPORT_PATH: STORED}) as dashboard:
        dashboard.replies[redirected] = (status, {"Location": f"{elsewhere.url}{redirected}"}, {})
        done = client(*run_options(dashboard.url, path, night=1), token="pw_secret")

    assert done.returncode == 2, done.stderr
    assert elsewhere.requests == []
    method = "POST" if redirected == IMPORT_PATH else "GET"
    assert (f"error: {method} {dashboard.url}{redirected}" in done.stderr
            and f"was redirected (HTTP {status}) to {elsewhere.url}{redirected}, another origin than --url: not "
                f"followed, the token is not sent there (if the dashboard moved, give --url {elsewhere.url})"
            in done.stderr)
    assert "pw_secret" not in done.stderr


@pytest.mark.parametrize("status", [307, 308])
def test_a_post_redirected_within_the_origin_by_307_or_308_is_sent_again_with_its_file(tmp_path, status):
    path = native_file(tmp_path / "results.json", {"parse": 1.0}, night=1)
    moved = {IMPORT_PATH: (status, {"Location": "/moved/import"}, {}), "/moved/import": STORED}

    with FakeDashboard(moved) as dashboard:
        done = client(*run_options(dashboard.url, path, night=1), "--wait", "0", token="pw_secret")

    assert done.returncode == 0, done.stderr
    assert [(method, url.split("?")[0]) for method, url, *_ in dashboard.requests] == [
        ("POST", IMPORT_PATH), ("POST", "/moved/import")]
    for _, _, headers, body in dashboard.requests:
        assert headers["Authorization"] == "Bearer pw_secret" and headers["Content-Type"] == "application/json"
        assert body == path.read_bytes()


def test_a_post_redirected_as_a_get_is_refused_with_the_location(tmp_path):
    """A 302 would have urllib send a GET without the file: the client stops and names the new location."""
    path = native_file(tmp_path / "results.json", {"parse": 1.0}, night=1)

    with FakeDashboard({IMPORT_PATH: (302, {"Location": "/login/"}, {})}) as dashboard:
        done = client(*run_options(dashboard.url, path, night=1), token="pw_secret")

    assert done.returncode == 2
    assert (f"error: POST {dashboard.url}{IMPORT_PATH}" in done.stderr
            and f"was redirected (HTTP 302) to {dashboard.url}/login/: not followed, it would send a GET without "
                "the file (is --url the dashboard's address?)" in done.stderr)
    assert [method for method, *_ in dashboard.requests] == ["POST"]


def test_a_get_redirected_within_the_origin_is_followed_with_the_token(tmp_path):
    path = native_file(tmp_path / "results.json", {"parse": 1.0}, night=1)

    with FakeDashboard({IMPORT_PATH: STORED, RUN_PATH: (302, {"Location": f"{RUN_PATH}/"}, {}),
                        f"{RUN_PATH}/": NOTHING_TO_COMPARE}) as dashboard:
        done = client(*run_options(dashboard.url, path, night=1), token="pw_secret")

    assert done.returncode == 0, done.stderr
    assert "run #1 has no results to compare" in done.stderr
    assert [(method, url) for method, url, *_ in dashboard.requests[1:]] == [("GET", RUN_PATH), ("GET", f"{RUN_PATH}/")]
    assert all(headers["Authorization"] == "Bearer pw_secret" for _, _, headers, _ in dashboard.requests)


def test_an_unreachable_server_is_tried_a_bounded_number_of_times(tmp_path):
    path = native_file(tmp_path / "results.json", {"parse": 1.0}, night=1)

    done = client(*run_options(f"http://127.0.0.1:{free_port()}", path, night=1), "--attempts", "2",
                  token="pw_unused")

    assert done.returncode == 2
    assert "retrying in" in done.stderr and "(attempt 2 of 2)" in done.stderr
    assert "error: POST /api/v1/runs/import failed after 2 attempts: [Errno 111] Connection refused" in done.stderr


@pytest.mark.parametrize(("options", "message"), [
    (["--format", "pyperf", "--project", "P", "--machine", "M", "--commit", "abc1"],
     "no token: give --token or set PILOTWEB_TOKEN"),
    (["--format", "pyperf", "--token", "t"], "a pyperf file does not say which run it is: give --project, "
                                            "--machine, --commit (only"),
    (["--format", "native", "--token", "t", "--pull-request", "4"], "add --kind pr"),
    (["--format", "native", "--token", "t", "--wait", "0", "--fail-on-regression"], "give --wait above 0"),
    (["--format", "native", "--token", "t", "--wait", "100000"], "must be from 0 to 3600"),
])
def test_usage_errors_exit_2_before_anything_is_sent(options, message):
    done = client("results.json", "--url", "http://127.0.0.1:9", *options)

    assert done.returncode == 2
    assert message in done.stderr


def test_the_client_needs_only_the_standard_library_of_python_3_10():
    tree = ast.parse(CLIENT.read_text(), feature_version=(3, 10))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert imported <= set(sys.stdlib_module_names)


@LIVE
def test_a_run_whose_every_benchmark_failed_is_not_waited_for(live_server, token, analysis, tmp_path):
    path = tmp_path / "failed.json"
    path.write_text(json.dumps({"results": [{"benchmark": "parse", "failed": True, "error": "MemoryError"}]}))
    analysis.start()

    done = client(*run_options(live_server.url, path, night=2), "--kind", "nightly", token=token)

    assert done.returncode == 0, done.stderr
    assert f"run #{Run.objects.get().pk} has no results to compare" in done.stderr
    assert "failed: parse (time): MemoryError" in done.stderr


def test_the_dashboard_serves_the_client_file():
    from django.test import Client

    response = Client().get("/client/pilot_upload.py")

    assert response.status_code == 200 and response["Content-Type"].startswith("text/x-python")
    assert b"".join(response.streaming_content) == CLIENT.read_bytes()
