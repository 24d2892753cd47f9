"""`./pilot up` keeps its services up: one that dies is reported and started again, the rest stay up,
and Ctrl-C (SIGTERM) stops them all. Before, the first child to exit tore the whole stack down."""

import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.processes import ROOT, free_port, wait_for, wait_for_port

pytestmark = pytest.mark.integration


def services_of(script: psutil.Process) -> dict[str, psutil.Process]:
    """The script's services by role, found among its descendants."""
    found = {}
    for process in script.children(recursive=True):
        try:
            command = " ".join(process.cmdline())
        except psutil.NoSuchProcess:
            continue
        for role, needle in (("bench", "--hostname bench@"), ("beat", " beat "), ("dashboard", "runserver"),
                             ("redis", "redis-server")):
            # The service's own process (a Celery worker's pool children share its command line).
            if needle in command and process.parent() and needle not in " ".join(process.parent().cmdline()):
                found[role] = process
    return found


def test_a_service_that_dies_is_restarted_and_the_rest_stays_up(tmp_path):
    port, redis_port = free_port(), free_port()
    environment = {**os.environ, "PILOTWEB_VAR_DIR": str(tmp_path), "PILOTWEB_ADDRESS": f"127.0.0.1:{port}",
                   "PILOTWEB_REDIS_PORT": str(redis_port)}
    for name in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
        environment.pop(name, None)
    log = (tmp_path / "pilot.out").open("w")
    process = subprocess.Popen([str(ROOT / "pilot"), "up"], cwd=ROOT, env=environment, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port(port, timeout=300)
        script = psutil.Process(process.pid)
        before = wait_for(lambda: (found := services_of(script)) and len(found) == 4 and found,
                          what="the four services")

        before["bench"].kill()
        # The report first: the killed worker's pool child may outlive it for a moment and look like a new one.
        wait_for(lambda: "bench-worker exited (status 137); restarting it" in Path(log.name).read_text(),
                 what="the script's report of the bench worker's death")
        after = wait_for(lambda: (found := services_of(script)).get("bench") and
                         found["bench"].pid != before["bench"].pid and found, what="the bench worker's restart")

        assert all(after[role].pid == before[role].pid for role in ("beat", "dashboard", "redis"))
        assert process.poll() is None
        wait_for_port(port, timeout=10)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    assert process.returncode == 130
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
