"""A throwaway PostgreSQL cluster from the system's server binaries, for tests and benchmarks.

    python -m tests.pgcluster -- COMMAND [ARG ...]

starts a cluster in a temporary directory (``initdb``, then ``pg_ctl start`` listening on a
free loopback port), runs COMMAND with ``DATABASE_URL`` pointing at it, stops the cluster and
removes the directory, and exits with COMMAND's status.
"""

import contextlib
import getpass
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path


def server_binaries() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (Debian keeps them off PATH)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for directory in candidates:
        if Path(directory, "initdb").exists():
            return Path(directory)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's postgresql package.")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_postgres_user() -> list[str]:
    # initdb refuses to run as root; run the server as the 'postgres' (or 'nobody') account then.
    if os.geteuid() != 0:
        return []
    for account in ("postgres", "nobody"):
        try:
            subprocess.run(["id", account], check=True, capture_output=True)
        except subprocess.CalledProcessError:
            continue
        return ["runuser", "-u", account, "--"]
    raise RuntimeError("running as root and no unprivileged account to run PostgreSQL as")


@contextlib.contextmanager
def cluster() -> Iterator[str]:
    """Start a cluster and yield its ``DATABASE_URL``; everything is removed on exit."""
    binaries = server_binaries()
    prefix = _as_postgres_user()
    port = free_port()
    root = Path(tempfile.mkdtemp(prefix="pilotweb-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if prefix:
        shutil.chown(root, user=prefix[2])
        shutil.chown(sockets, user=prefix[2])
    user = prefix[2] if prefix else getpass.getuser()
    run = {"check": True, "capture_output": True, "text": True}
    try:
        subprocess.run([*prefix, str(binaries / "initdb"), "-D", str(data), "-U", user, "-A", "trust",
                        "-E", "UTF8", "--no-sync"], **run)
        # No autovacuum: its analyses of tables that tests had just emptied left the planner sure they were empty
        # (nested loops over thousands of rows: one test took 115 s in the suite, 21 s alone); never analysed, a
        # table is estimated from its size.
        options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off " \
                  f"-c full_page_writes=off -c autovacuum=off"
        subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-l",
                        str(root / "server.log"), "start"], **run)
        try:
            subprocess.run([*prefix, str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", user,
                            "pilotweb"], **run)
            yield f"postgres://{user}@127.0.0.1:{port}/pilotweb"
        finally:
            subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    with cluster() as url:
        print(f"PostgreSQL: throwaway cluster at {url}", flush=True)
        command = subprocess.Popen(argv, env={**os.environ, "DATABASE_URL": url})
        # Asked to stop (./pilot test interrupted), the command stops first, then the cluster is removed.
        signal.signal(signal.SIGTERM, lambda signum, frame: command.terminate())
        return command.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
