"""The pipeline's next steps, sent by task name, so that no step imports the tasks module that calls it.

The chain, written down once (each arrow is a task sent after the step's transaction commits)::

    ingest (results.services.ingest_run)
      └─► compare_run ─► (chunks: compare_chunk, the last one completes the run)
            ├─► alerts opened (results.alerts.open_alerts) ─► notify_alert_group
            └─► detect_change_points_for_run ─► alerts of the change points to act on ─► notify_alert_group

Every step has a periodic catch-up (``compare_pending_runs``, ``notify_pending_alert_groups``, the daily
``scan_change_points``), so a message lost with the broker is sent again.
"""

import contextvars
import importlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from celery import current_app
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError

logger = logging.getLogger(__name__)

COMPARE_RUN = "results.tasks.compare_run"
DETECT_CHANGE_POINTS = "results.tasks.detect_change_points_for_run"
NOTIFY_ALERT_GROUP = "results.tasks.notify_alert_group"

# Publishing gives up quickly when the broker is down: the caller is a web request or a worker, and every
# task sent here has a periodic catch-up that sends it again.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
ANALYSIS_QUEUE = settings.CELERY_TASK_DEFAULT_QUEUE
"""The queue the analysis worker serves; a session goes to its machine's queue instead."""
_analysis_here = contextvars.ContextVar("analysis_here", default=False)


def enqueue(task, *args, **options) -> bool:
    """Send a task (a task or its registered name; ``options`` as for ``apply_async``); if the broker is
    unreachable, log it and return False: the periodic catch-up tasks pick the work up.

    With ``PILOTWEB_ANALYSIS_IN_PROCESS`` (or inside :func:`analysis_in_process`), a task for the analysis queue
    runs here instead, once the current transaction commits (at once outside one), as the analysis worker would
    run it: its failure is logged, never raised to the caller, whose work is already committed.
    """
    if isinstance(task, str):
        task = _registered(task)
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


def _registered(name: str):
    """The task registered under ``name``, its module imported first where nothing has imported it yet."""
    if name not in current_app.tasks:
        importlib.import_module(name.rpartition(".")[0])
    return current_app.tasks[name]


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
