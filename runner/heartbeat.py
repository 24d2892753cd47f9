"""Bench workers say they are alive: every ``WORKER_HEARTBEAT`` seconds a worker stamps the machines whose queues
it consumes (``Machine.worker_seen_at``), so that the pages tell "worker last seen" apart from "last upload" (a
machine first seen through an upload has no worker), and a job whose queue no worker consumes is warned of
before its sessions wait for ever."""

import logging
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import close_old_connections, connection
from django.utils import timezone

from results.models import Machine

logger = logging.getLogger(__name__)

WORKER_HEARTBEAT = 30.0
"""Seconds between a worker's stamps: one small UPDATE a worker every half minute."""
WORKER_STALE = timedelta(minutes=5)
"""A machine whose worker has not stamped for this long has, as far as the dashboard knows, no worker (ten
stamps missed: a worker restarting or busy in a long round still stamps, from its own thread)."""


def beat(queues: Iterable[str], *, now: datetime | None = None) -> int:
    """Stamp the machines whose queue is one of `queues` as having a live worker; the number stamped."""
    return Machine.objects.filter(queue__in=list(queues)).update(worker_seen_at=now or timezone.now())


def worker_alive(machine: Machine, *, now: datetime | None = None) -> bool:
    """Whether a worker consuming the machine's queue stamped it within ``WORKER_STALE``."""
    seen = machine.worker_seen_at
    return seen is not None and (now or timezone.now()) - seen <= WORKER_STALE


def no_worker_warning(machine: Machine, *, now: datetime | None = None) -> str:
    """What to tell whoever queues work on a machine no live worker consumes ("" when one does)."""
    if worker_alive(machine, now=now):
        return ""
    seen = machine.worker_seen_at
    when = "no worker has ever consumed it" if seen is None else \
        f"its worker was last seen {timezone.localtime(seen):%Y-%m-%d %H:%M %Z}"
    return (f"No benchmark worker is consuming queue {machine.queue} of machine {machine.name} ({when}): its "
            f"sessions wait until one starts (celery -A pilotweb worker --queues {machine.queue} --concurrency 1).")


class _Stamper(threading.Thread):
    def __init__(self, queues: list[str]):
        super().__init__(name="pilot-worker-heartbeat", daemon=True)
        self.queues = queues
        self.stopped = threading.Event()

    def run(self) -> None:
        while True:
            try:
                close_old_connections()
                beat(self.queues)
            except Exception:  # noqa: BLE001 - a missed stamp is logged; the next one may succeed
                logger.exception("The worker's heartbeat could not be stored.")
            finally:
                connection.close()
            if self.stopped.wait(WORKER_HEARTBEAT):
                return


def on_worker_ready(sender=None, **kwargs) -> None:
    """Celery's ``worker_ready``: start stamping the machines of the queues this worker consumes (`sender` is
    the worker's consumer)."""
    queues = [queue.name for queue in getattr(getattr(sender, "task_consumer", None), "queues", [])]
    if queues:
        _Stamper(queues).start()
