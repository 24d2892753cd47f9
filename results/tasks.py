"""Celery tasks of results: thin. Each takes ids, loads, calls one service, owns only its retries."""

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from celery import shared_task
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError

from . import alerts, comparisons, notifications

logger = logging.getLogger(__name__)


# Publishing gives up quickly when the broker is down: the caller is a web request or a worker, and every
# task sent here has a periodic catch-up that sends it again.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
ANALYSIS_QUEUE = settings.CELERY_TASK_DEFAULT_QUEUE
"""The queue the analysis worker serves; a session goes to its machine's queue instead."""
_analysis_here = contextvars.ContextVar("analysis_here", default=False)


def enqueue(task, *args, **options) -> bool:
    """Send a task (``options`` as for ``apply_async``); if the broker is unreachable, log it and return
    False: the periodic catch-up tasks pick the work up.

    With ``PILOTWEB_ANALYSIS_IN_PROCESS`` (or inside :func:`analysis_in_process`), a task for the analysis queue
    runs here instead, once the current transaction commits (at once outside one), as the analysis worker would
    run it: its failure is logged, never raised to the caller, whose work is already committed.
    """
    here = settings.PILOTWEB_ANALYSIS_IN_PROCESS or _analysis_here.get()
    if here and options.get("queue", ANALYSIS_QUEUE) == ANALYSIS_QUEUE:
        transaction.on_commit(lambda: task.apply(args))
        return True
    try:
        task.apply_async(args, retry_policy=PUBLISH_RETRY, **options)
    except OperationalError:
        logger.warning("Broker unreachable: %s%s left to the periodic catch-up.", task.name, args)
        return False
    return True


@contextmanager
def analysis_in_process() -> Iterator[None]:
    """The analysis tasks enqueued inside the block run in this process, as with
    ``PILOTWEB_ANALYSIS_IN_PROCESS``: for a command that shows at once the comparison of what it stored
    (``import_results --compare``), which a worker must then not compute a second time."""
    token = _analysis_here.set(True)
    try:
        yield
    finally:
        _analysis_here.reset(token)


@shared_task(ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def compare_run(run_id: int) -> None:
    for chunk_id in comparisons.begin_comparison(run_id=run_id):
        enqueue(compare_chunk, chunk_id)


@shared_task(bind=True, ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def compare_chunk(self, chunk_id: int) -> None:
    comparisons.compare_chunk(chunk_id=chunk_id, worker=self.request.hostname or "")


@shared_task(ignore_result=True)
def notify_alert_group(group_id: int) -> None:
    # No retry here: each channel keeps its own attempts and backoff, and the catch-up sends what is due.
    notifications.notify_alert_group(group_id=group_id)


@shared_task(ignore_result=True)
def compare_pending_runs() -> None:
    for run_id in comparisons.pending_runs():
        enqueue(compare_run, run_id)
    for chunk_id in comparisons.pending_chunks():
        enqueue(compare_chunk, chunk_id)


@shared_task(ignore_result=True)
def notify_pending_alert_groups() -> None:
    for group_id in notifications.pending_groups():
        enqueue(notify_alert_group, group_id)


@shared_task(ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def detect_change_points_for_run(run_id: int) -> None:
    alerts.scan_run_series(run_id=run_id)


@shared_task(ignore_result=True)
def scan_change_points() -> None:
    alerts.scan_change_points()
