"""Post a benchmark tool's results file to Pilot Web from CI, wait for its comparison and print the verdicts.

Standard library only (Python 3.10+), importing nothing of Pilot Web: run it from a checkout as
``python -m client.pilot_upload upload …``, or copy this one file into a CI job and run
``python pilot_upload.py upload …``::

    export PILOTWEB_TOKEN=…    # from the CI's secrets; made with ``manage.py create_api_token``
    python pilot_upload.py upload --url https://perf.example.org --format pyperf results.json \\
        --project "My project" --machine bench-1 --commit "$SHA" --branch main --fail-on-regression

The file is posted as it is to ``POST /api/v1/runs/import`` (gzip-compressed when large). Without ``--run-key``
the server keys the run by the file's content and the run's project, machine, revision and kind, so posting the
same file again (a retried request, a re-run CI job) answers with the stored run, never a second one. Requests
are retried with exponential backoff and jitter on connection errors, 429 and 5xx (honouring ``Retry-After``),
never on another 4xx. A redirect is followed within the origin of ``--url`` only (its scheme, host and port):
the token is never sent to another, and a POST is never re-sent as a GET without its file. Then the run's
comparisons are polled for at most ``--wait`` seconds and printed one line per series, regressions first (a pull
request's through ``/pr-summary``), or with ``--markdown`` as the pull request comment. Progress and errors go
to stderr, the table or the comment to stdout.

Exit status: 0 done; 1 a regression found, with ``--fail-on-regression``; 2 a usage or HTTP error; 3 timed
out waiting for the comparison (the run is stored).
"""

import argparse
import email.utils
import gzip
import http.client
import json
import os
import random
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone

FORMATS = ("native", "pyperf", "pytest-benchmark", "google-benchmark", "hyperfine", "asv")
KINDS = ("nightly", "pr", "manual", "imported")
TOKEN_VARIABLE = "PILOTWEB_TOKEN"

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR, EXIT_TIMEOUT = 0, 1, 2, 3

GZIP_ABOVE_BYTES = 64 * 1024
"""Files larger than this are sent gzip-compressed: the server takes a gzip file in every format."""
GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_WAIT, MAX_WAIT = 120, 3600
DEFAULT_ATTEMPTS, MAX_ATTEMPTS = 5, 10
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 30.0
RETRY_AFTER_MAX = 120.0
"""A longer ``Retry-After`` is cut to this: a CI job should fail rather than hang."""
REQUEST_TIMEOUT = 60.0
POLL_FIRST, POLL_MAX = 1.0, 5.0
PAGE_SIZE = 1000
"""The API's largest page."""

# The server's verdicts, worst first: the order of every table of the dashboard (results.presentation).
VERDICT_ORDER = ("regression", "suspected regression", "improvement", "suspected improvement", "inconclusive",
                 "insufficient history", "no change", "not compared")
VERDICT_ICONS = {"regression": "▲", "suspected regression": "△", "improvement": "▼", "suspected improvement": "▽",
                 "inconclusive": "?", "no change": "≈", "insufficient history": "·", "not compared": "–"}
REGRESSION = "regression"
HIGH_P_MARK = "~"


class UploadError(Exception):
    """A refusal or a failure, said on one line (exit status 2)."""


class TimedOut(Exception):
    """The comparison did not appear within ``--wait`` (exit status 3)."""


# --- HTTP ----------------------------------------------------------------------------------------------------


DEFAULT_PORTS = {"http": 80, "https": 443}


def same_origin(url: str, other: str) -> bool:
    """Whether two addresses have the same origin: scheme, host and port (the scheme's default filled in)."""
    try:
        return _origin(url) == _origin(other)
    except ValueError:  # a malformed port: no origin to compare
        return False


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.hostname, parts.port or DEFAULT_PORTS.get(parts.scheme)


class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect within the origin of the request only, so the token is never sent to another host
    (urllib's own handler re-sends every header wherever the server points). 307 and 308 repeat the request
    as it was, body and all; 301, 302 and 303 would turn a POST into a GET without its file, so they are
    followed for a GET only."""

    def redirect_request(self, req: urllib.request.Request, fp, code: int, msg: str, headers,
                         newurl: str) -> urllib.request.Request:
        method = req.get_method()
        said = f"{method} {req.full_url} was redirected (HTTP {code}) to {newurl}"
        if not same_origin(req.full_url, newurl):
            fp.close()
            parts = urllib.parse.urlsplit(newurl)
            raise UploadError(f"{said}, another origin than --url: not followed, the token is not sent there "
                              f"(if the dashboard moved, give --url {parts.scheme}://{parts.netloc})")
        if code in (307, 308):
            return urllib.request.Request(newurl, data=req.data, headers=req.headers, method=method,
                                          origin_req_host=req.origin_req_host, unverifiable=True)
        if method != "GET":
            fp.close()
            raise UploadError(f"{said}: not followed, it would send a GET without the file (is --url the "
                              "dashboard's address?)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Server:
    """Pilot Web's API at ``url`` with a bearer token; each request retried on connection errors, 429 and 5xx,
    redirects followed within the origin of ``url`` only."""

    def __init__(self, url: str, token: str, *, attempts: int, log) -> None:
        self.base = url.rstrip("/")
        self.token, self.attempts, self.log = token, attempts, log
        self.opener = urllib.request.build_opener(SameOriginRedirects)

    def get(self, path: str, **query) -> dict:
        return self.request("GET", path, query=query)

    def request(self, method: str, path: str, *, query: dict | None = None, body: bytes | None = None,
                content_type: str | None = None) -> dict:
        """The JSON reply of a request; raises :class:`UploadError` with the server's message on a refusal (a 4xx
        other than 429) or once every attempt failed."""
        address = self.base + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json",
                   "User-Agent": "pilot-upload/1"}
        if content_type:
            headers["Content-Type"] = content_type
        what = f"{method} {path}"
        attempt = 1
        while True:
            request = urllib.request.Request(address, data=body, method=method, headers=headers)
            delay = None
            try:
                with self.opener.open(request, timeout=REQUEST_TIMEOUT) as response:
                    return _json_reply(response.read(), what)
            except urllib.error.HTTPError as error:
                try:
                    problem = f"HTTP {error.code}: {_server_message(error.read(), error.reason)}"
                finally:
                    error.close()
                if error.code != 429 and error.code < 500:
                    raise UploadError(f"{what} refused, {problem}") from None
                delay = _retry_after(error.headers.get("Retry-After"))
            except (OSError, http.client.HTTPException) as error:
                problem = str(getattr(error, "reason", None) or error) or type(error).__name__
            if attempt == self.attempts:
                raise UploadError(f"{what} failed after {attempt} attempt{'s' if attempt > 1 else ''}: {problem}")
            delay = backoff(attempt) if delay is None else delay
            attempt += 1
            self.log(f"{what}: {problem.rstrip('.')}; retrying in {delay:.1f} s (attempt {attempt} of {self.attempts})")
            time.sleep(delay)


def backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1, 2, …): doubling from 1 s up to 30 s, half of it
    random, so that many jobs failing together do not retry together."""
    ceiling = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (a number or an HTTP date), at most ``RETRY_AFTER_MAX``."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (email.utils.parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds()
        except (TypeError, ValueError):
            return None
    return min(RETRY_AFTER_MAX, max(0.0, seconds))


def _server_message(body: bytes, reason: str) -> str:
    """The API's error message (``{"detail": …, "errors": […]}``) on one line; else the body's first line."""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        detail = None
    if not isinstance(detail, str) or not detail:
        detail = body.decode("utf-8", "replace").strip().splitlines()[0][:200] if body.strip() else str(reason)
    return " ".join(detail.split())


def _json_reply(body: bytes, what: str) -> dict:
    try:
        return json.loads(body)
    except ValueError:
        raise UploadError(f"{what}: the reply is not JSON (is --url the dashboard's address?)") from None


# --- Uploading and waiting -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Review:
    """A compared run: its rows (the API's comparisons: one per series) and, for a pull request, the
    comment the dashboard renders."""

    rows: list
    markdown: str | None
    against: str


def upload(options: argparse.Namespace, *, out, log) -> int:
    """Post the file, wait for its comparison and print it; returns the exit status."""
    try:
        with open(options.file, "rb") as file:
            content = file.read()
    except OSError as error:
        raise UploadError(f"cannot read {options.file}: {error.strerror or error}") from None
    body, content_type = request_body(content)
    if options.format != "native" and not options.branch and options.kind != "pr":
        log("note: no --branch, so the run is a night of no branch: it is stored and can be compared, but its "
            "series' nightly history and alerts (of the project's default branch) leave it out")
    server = Server(options.url, options.token, attempts=options.attempts, log=log)
    stored = server.request("POST", "/api/v1/runs/import", query=import_query(options), body=body,
                            content_type=content_type)
    run_id = stored["id"]
    log(f"run #{run_id} {'stored' if stored['created'] else 'was already stored (the same file for the same run)'}:"
        f" {stored['page_url']}")
    if options.wait == 0:
        return EXIT_OK
    run = server.get(f"/api/v1/runs/{run_id}")
    for failure in run.get("failures", ()):
        said = failure["error"].strip().splitlines()
        log(f"failed: {failure['benchmark']} ({failure['metric']}){': ' + said[-1] if said else ''}")
    if not run["results"]:
        log(f"run #{run_id} has no results to compare")
        return EXIT_OK
    review = wait_for_review(server, run, wait=options.wait, log=log)
    if options.markdown:
        out(review.markdown or markdown_comment(review, run, page_url=stored["page_url"]))
    else:
        out(f"run #{run_id} ({run['kind']}, {short(run['commit']) or 'no commit'} on {run['machine']}), "
            f"each series {review.against}:\n")
        out(verdict_table(review.rows) if review.rows else "No series was compared.\n")
    regressions = sum(1 for row in review.rows if row["verdict"] == REGRESSION)
    if regressions and options.fail_on_regression:
        log(f"{regressions} regression{'s' if regressions > 1 else ''}: failing (--fail-on-regression)")
        return EXIT_REGRESSION
    return EXIT_OK


def request_body(content: bytes) -> tuple[bytes, str]:
    """The file as the request body and its content type: gzip-compressed above ``GZIP_ABOVE_BYTES``."""
    if content[:2] == GZIP_MAGIC:
        return content, "application/octet-stream"
    if len(content) > GZIP_ABOVE_BYTES:
        return gzip.compress(content, mtime=0), "application/octet-stream"
    return content, "application/json"


def import_query(options: argparse.Namespace) -> dict:
    """The import endpoint's query parameters: what the options state about the run."""
    stated = {"format": options.format, "project": options.project, "machine": options.machine,
              "commit": options.commit, "branch": options.branch, "kind": options.kind,
              "pull_request": options.pull_request, "base_commit": options.base_commit, "run_key": options.run_key}
    return {name: value for name, value in stated.items() if value not in (None, "")}


def wait_for_review(server: Server, run: dict, *, wait: float, log) -> Review:
    """Poll until the run is compared, at most ``wait`` seconds; raises :class:`TimedOut`."""
    deadline = time.monotonic() + wait
    interval = POLL_FIRST
    log(f"waiting up to {wait:g} s for run #{run['id']}'s comparison")
    while True:
        review = pull_request_review(server, run) if run["kind"] == "pr" else history_review(server, run)
        if review is not None:
            return review
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimedOut(f"timed out after {wait:g} s waiting for run #{run['id']}'s comparison (is the "
                           "analysis worker running?); the run is stored, a longer --wait would wait for it")
        time.sleep(min(interval, remaining))
        interval = min(POLL_MAX, interval * 1.5)


def pull_request_review(server: Server, run: dict) -> Review | None:
    """A pull-request run against its base (its pairwise rows and the dashboard's comment); None until compared."""
    reply = server.get(f"/api/v1/runs/{run['id']}/pr-summary")
    summary = reply["summary"]
    if not summary["compared"]:
        return None
    base = summary.get("base_commit") or summary.get("base_commit_requested")
    against = f"against the base commit {short(base)}" if base else "against its base"
    return Review(rows=reply["comparisons"], markdown=reply["markdown"], against=against)


def history_review(server: Server, run: dict) -> Review | None:
    """A run against the recent nights of its series (the ``history`` rows, one per result, stored together
    when the run is compared); None until compared."""
    path = f"/api/v1/runs/{run['id']}/comparisons"
    page = server.get(path, method="history", limit=PAGE_SIZE, offset=0)
    if page["count"] == 0:
        return None
    rows = list(page["items"])
    while len(rows) < page["count"] and page["items"]:
        page = server.get(path, method="history", limit=PAGE_SIZE, offset=len(rows))
        rows += page["items"]
    return Review(rows=rows, markdown=None, against="against its recent nights on the default branch")


# --- Output: as the dashboard words it (results.presentation) ----------------------------------------------


def in_verdict_order(rows: list) -> list:
    """Worst first; the server's order (largest change first) within a verdict."""
    return sorted(rows, key=lambda row: VERDICT_ORDER.index(row["verdict"]) if row["verdict"] in VERDICT_ORDER
                  else len(VERDICT_ORDER))


def verdict_table(rows: list) -> str:
    """One aligned line per series, as ``manage.py compare`` prints: benchmark, metric, change with its
    interval, p and q, verdict; and the legend."""
    with_q = any(row["qvalue"] is not None for row in rows)
    lines = [["benchmark", "metric", f"change [{level_text(rows)} CI]", "p"] + (["q"] if with_q else []) + ["verdict"]]
    for row in in_verdict_order(rows):
        cells = [row["benchmark"], row["metric"], row["change"] or "—",
                 probability(row["pvalue"], row["high_p"] and not with_q)]
        cells += [probability(row["qvalue"], row["high_p"])] if with_q else []
        lines.append([*cells, row["verdict"]])
    right = {3, 4} if with_q else {3}
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    text = "\n".join("  ".join(cell.rjust(width) if column in right else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(line, widths))).rstrip()
                     for line in lines)
    legend = ["change: candidate/baseline − 1 with its interval", "p: Welch's t-test"]
    legend += ["q: Benjamini–Hochberg across the run's series, which decides significance"] if with_q else []
    legend += [f"{HIGH_P_MARK} not statistically significant"] if any(row["high_p"] for row in rows) else []
    return f"{text}\n\n{'; '.join(legend)}.\n"


def markdown_comment(review: Review, run: dict, *, page_url: str) -> str:
    """A comment for a run the dashboard renders none for (a pull request's comes from ``/pr-summary``): the
    verdict counts and a table of the series, worst first."""
    head = code(short(run["commit"])) if run["commit"] else f"run #{run['id']}"
    title = f"### Performance: {head} on {code(run['machine'])} ({run['kind']})"
    if not review.rows:
        return f"{title}\n\nNo series was compared.\n"
    rows = in_verdict_order(review.rows)
    with_q = any(row["qvalue"] is not None for row in rows)
    lines = [title, "", f"{counts_line(rows)} ({len(rows)} series, each {review.against}).", "",
             f"| Benchmark | Change [{level_text(rows)} CI] | p |" + (" q |" if with_q else "") + " Verdict |",
             "| --- | ---: | ---: |" + (" ---: |" if with_q else "") + " --- |"]
    for row in rows:
        cells = [code(f"{row['benchmark']} ({row['metric']})").replace("|", "\\|"),
                 row["change"] or "—", probability(row["pvalue"], row["high_p"] and not with_q)]
        cells += [probability(row["qvalue"], row["high_p"])] if with_q else []
        icon = VERDICT_ICONS.get(row["verdict"])
        lines.append("| " + " | ".join([*cells, f"{icon} {row['verdict']}" if icon else row["verdict"]]) + " |")
    lines += ["", f"<sub>{HIGH_P_MARK} not statistically significant. [The run on the dashboard]({page_url})</sub>"
              if any(row["high_p"] for row in rows) else f"<sub>[The run on the dashboard]({page_url})</sub>"]
    return "\n".join(lines) + "\n"


def code(text: str) -> str:
    """`text` as a Markdown code span on one line, where nothing is Markdown: a name cannot add a heading, a
    link, an image or an @mention to the comment (as the dashboard's own comments write names)."""
    text = re.sub("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+", " ", text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def counts_line(rows: list) -> str:
    """``**1 regression**, 0 improvements, 2 no change``: every verdict present, regressions in bold."""
    parts = []
    for verdict in VERDICT_ORDER:
        count = sum(1 for row in rows if row["verdict"] == verdict)
        if count or verdict in ("regression", "improvement"):
            plural = verdict + ("s" if count != 1 and verdict.endswith(("regression", "improvement")) else "")
            text = f"{count} {plural}"
            parts.append(f"**{text}**" if count and verdict.endswith("regression") else text)
    return ", ".join(parts)


def level_text(rows: list) -> str:
    """The rows' confidence level as a percentage (``per-series`` when they differ)."""
    levels = {row["confidence_level"] for row in rows}
    return f"{levels.pop() * 100:g}%" if len(levels) == 1 else "per-series"


def probability(value: float | None, high_p: bool) -> str:
    """A p- or q-value: three decimals, ``<0.001`` below, ``—`` for none; marked when not significant."""
    if value is None:
        return "—"
    text = "<0.001" if value < 0.001 else f"{value:.3f}"
    return f"{text} {HIGH_P_MARK}" if high_p else text


def short(commit: str | None) -> str:
    return (commit or "")[:12]


# --- Command line ----------------------------------------------------------------------------------------------


def bounded_int(low: int, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}; got {value}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pilot_upload", description="Upload benchmark results to Pilot Web from CI and print the verdicts.",
        epilog="Exit status: 0 done, 1 a regression (with --fail-on-regression), 2 a usage or HTTP error, 3 timed "
               "out waiting for the comparison.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="upload")
    upload_parser = commands.add_parser(
        "upload", help="post a results file, wait for its comparison, print the verdicts",
        description="Post FILE to POST /api/v1/runs/import, wait for its comparison, print one line per series.")
    add = upload_parser.add_argument
    add("file", metavar="FILE", help="the results file, as the tool wrote it (gzip-compressed or not)")
    add("--url", required=True, help="the dashboard's address, e.g. https://perf.example.org")
    add("--token", help=f"an API token (default: the {TOKEN_VARIABLE} environment variable, safer in CI logs)")
    add("--format", required=True, choices=FORMATS, help="the file's format")
    add("--project", help="the project's name (created if new)")
    add("--machine", help="the machine's name (created if new)")
    add("--commit", help="the commit measured (a hash, tag or ref)")
    add("--branch", help="its branch")
    add("--kind", choices=KINDS, help="the run's kind (default: the server's: imported for a tool's file)")
    add("--pull-request", type=bounded_int(1, 2**31 - 1), metavar="N", help="a pull request's number (--kind pr)")
    add("--base-commit", metavar="SHA", help="the commit a pull request is compared with (--kind pr)")
    add("--run-key", metavar="KEY", help="the run's idempotency key (default: the server's, from the file's content "
                                         "and the run's project, machine, revision and kind)")
    add("--wait", type=bounded_int(0, MAX_WAIT), default=DEFAULT_WAIT, metavar="SECONDS",
        help=f"how long to wait for the comparison, 0 not to wait (default {DEFAULT_WAIT}, at most {MAX_WAIT})")
    add("--attempts", type=bounded_int(1, MAX_ATTEMPTS), default=DEFAULT_ATTEMPTS,
        help=f"tries per request on connection errors, 429 and 5xx (default {DEFAULT_ATTEMPTS})")
    add("--markdown", action="store_true", help="print the pull-request comment in Markdown instead of the table")
    add("--fail-on-regression", action="store_true",
        help="exit with status 1 when a series regressed (a suspected regression is shown, not failed)")
    return parser


def parse_options(argv: list[str] | None) -> argparse.Namespace:
    """The options, checked together; a usage error exits with status 2 (argparse's)."""
    parser = build_parser()
    options = parser.parse_args(argv)
    options.token = options.token or os.environ.get(TOKEN_VARIABLE, "")
    if not options.token:
        parser.error(f"no token: give --token or set {TOKEN_VARIABLE} (manage.py create_api_token makes one)")
    address = urllib.parse.urlsplit(options.url)
    if address.scheme not in ("http", "https") or not address.netloc:
        parser.error(f"--url must be an http:// or https:// address; got {options.url!r}")
    missing = [name for name in ("project", "machine", "commit") if not getattr(options, name)]
    if options.format != "native" and missing:
        parser.error(f"a {options.format} file does not say which run it is: give "
                     f"{', '.join('--' + name for name in missing)} (only a native run document can name them)")
    if (options.pull_request or options.base_commit) and options.kind != "pr":
        parser.error("--pull-request and --base-commit describe a pull-request run: add --kind pr")
    if options.wait == 0 and (options.markdown or options.fail_on_regression):
        parser.error("--markdown and --fail-on-regression need the comparison: give --wait above 0")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_options(argv)
    for stream in (sys.stdout, sys.stderr):
        # Verdict icons and interval signs must never crash a CI job whose console is not UTF-8.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")

    def log(message: str) -> None:
        print(f"pilot_upload: {message}", file=sys.stderr, flush=True)

    try:
        return upload(options, out=lambda text: sys.stdout.write(text), log=log)
    except UploadError as error:
        log(f"error: {error}")
        return EXIT_ERROR
    except KeyError as error:
        log(f"error: the server's reply has no {error} (is --url a Pilot Web dashboard?)")
        return EXIT_ERROR
    except TimedOut as error:
        log(str(error))
        return EXIT_TIMEOUT


if __name__ == "__main__":
    sys.exit(main())
